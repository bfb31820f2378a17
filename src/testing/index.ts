/**
 * Helpers for the tests of services that use the library: `import { FakeClock } from 'api-conventions/testing'`.
 * @module
 */

export type { Clock } from '../clock.js';
export { FakeClock } from '../clock.js';
