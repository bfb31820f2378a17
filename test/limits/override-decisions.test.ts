/** Overrides on the memory store: the properties of test/support/override-suite.ts. */
import { MemoryStore } from '../../src/index.js';
import { overrideSuite } from '../support/override-suite.js';

overrideSuite('memory store', () => new MemoryStore(), { numRuns: 60, maxLength: 300 });
