/**
 * The block rule on the Redis store, against a real redis-server and through the decision script:
 * the scenarios and properties of test/support/block-suite.ts, each store on a key prefix of its
 * own, with fewer and shorter runs than in memory.
 */
import { blockRuleSuite } from '../support/block-suite.js';
import { clockRedisStores } from '../support/clock-redis-store.js';

const freshStore = clockRedisStores('blocks');

blockRuleSuite('Redis store', freshStore, {
  numRuns: 15,
  maxLength: 250,
  fractional: { numRuns: 60, maxLength: 30 },
});
