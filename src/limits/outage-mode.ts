/**
 * The outage modes of a limiter: what it does when its store cannot decide. In a file of its own
 * so that `channels.ts`, which reports an outage, need not import `outage.ts`, which handles one
 * (and reports it there).
 * @module
 */
import type { SyncLimitStore } from './store.js';

/**
 * What a limiter does when its asynchronous store's `apply` rejects (docs/limits.md):
 * - `'reject'`: `check` rejects with the store's error; the caller (middleware: `failure`) decides.
 * - `'open'`: admitted unlimited (no statuses, no lease), the outage reported.
 * - `'closed'`: refused with reason `unavailable` and `outageRetryAfterSeconds`: a 503, never 429.
 * - `'fallback'`: decided by a local {@link SyncLimitStore} (`fallbackStore`, a `MemoryStore` by
 *   default), limited per process.
 */
export type OutageMode = 'reject' | 'open' | 'closed' | 'fallback';
