/**
 * The block rule on the memory store: the scenarios and properties of test/support/block-suite.ts,
 * with more runs than on Redis since the memory store decides in-process.
 */
import { MemoryStore } from '../../src/index.js';
import { blockRuleSuite } from '../support/block-suite.js';

blockRuleSuite('memory store', () => new MemoryStore(), {
  numRuns: 60,
  fractional: { numRuns: 300, maxLength: 60 },
});
