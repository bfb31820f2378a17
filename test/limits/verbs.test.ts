/** Peek, reset and cost on the memory store: the properties of test/support/verbs-suite.ts. */
import { MemoryStore } from '../../src/index.js';
import { verbsSuite } from '../support/verbs-suite.js';

verbsSuite('memory store', () => new MemoryStore(), { numRuns: 60, maxLength: 300 });
