/**
 * Overrides on the Redis store, against a real redis-server and through its scripts: the
 * properties of test/support/verbs-suite.ts, each store on a key prefix of its own, with fewer
 * runs than in memory.
 */
import { clockRedisStores } from '../support/clock-redis-store.js';
import { overrideSuite } from '../support/verbs-suite.js';

overrideSuite('Redis store', clockRedisStores('overrides'), { numRuns: 15, maxLength: 200 });
