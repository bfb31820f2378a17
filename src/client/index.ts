/**
 * The integrator's client: `import { createRetryingFetch, cursorItems } from 'api-conventions/client'`.
 * A `fetch` that honours `Retry-After` on 429, and async iterators that read a paged list to its end.
 * @module
 */

export type { PaginationClientErrorCode } from '../errors/pagination-client-error.js';
export {
  isPaginationClientError,
  PaginationClientError,
  paginationClientErrorCodes,
} from '../errors/pagination-client-error.js';
export type { Sleep } from '../internal/timers.js';
export { timerSleep } from '../internal/timers.js';
export type { CursorIteratorOptions, CursorPage } from './cursor-iterator.js';
export { bodyNextCursor, cursorItems, cursorPages } from './cursor-iterator.js';
export type { FetchFunction, RetryEvent, RetryingFetchOptions } from './fetch.js';
export { createRetryingFetch } from './fetch.js';
export type { PacedRequest, Pacer, PacerOptions } from './pacer.js';
export { createPacer } from './pacer.js';
export type { NumberedPage, PageNumberIteratorOptions } from './page-number-iterator.js';
export { bodySaysLastPage, pageNumberItems, pageNumberPages } from './page-number-iterator.js';
export type { ItemsReader, Page, PageRequestOptions } from './page-request.js';
export { defaultItems } from './page-request.js';
// abortableSleep, requestPage and the option checks are internal: the iterators, the fetch wrapper
// and the pacer use them.
