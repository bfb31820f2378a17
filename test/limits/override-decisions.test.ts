/** Overrides on the memory store: the properties of test/support/verbs-suite.ts. */
import { MemoryStore } from '../../src/index.js';
import { overrideSuite } from '../support/verbs-suite.js';

overrideSuite('memory store', () => new MemoryStore(), { numRuns: 60, maxLength: 300 });
