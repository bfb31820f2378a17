/**
 * What every operation of the webhook service's API is given: the service's context and the
 * request of an identified account. In a file of their own so that the handlers of each
 * operation share them without importing one another.
 * @module
 */
import type { Clock } from '../../clock.js';
import type { CursorCodec } from '../../pagination/cursor-codec.js';
import type { CursorQuery } from '../../pagination/cursor-validator.js';
import type { PageNumberQuery } from '../../pagination/page-number-validator.js';
import type { PaginationValidation } from '../../pagination/pagination-error.js';
import type { QueryInput } from '../../pagination/query-input.js';
import type { ReplayResult, ReplaySelection, SubscriptionRepository } from '../store/repository.js';
import type { CreateSubscriptionOptions } from '../subscriptions/create-subscription.js';
import type { StoredSubscription } from '../subscriptions/subscription.js';
import type { BodySettings } from '../subscriptions/subscription-body.js';

/** What the operations work with. @internal */
export interface ServiceContext {
  readonly repository: SubscriptionRepository;
  readonly clock: Clock;
  readonly body: BodySettings;
  readonly create: CreateSubscriptionOptions;
  readonly maxPerAccount: number;
  readonly maxBodyBytes: number;
  readonly graceMs: number;
  readonly collectionPath: string;
  readonly pages: (query: QueryInput) => PaginationValidation<PageNumberQuery>;
  readonly cursors: (query: QueryInput) => PaginationValidation<CursorQuery<AuditCursor>>;
  readonly codec: CursorCodec<AuditCursor>;
  /**
   * Bring this instance's index up to its own write before answering: the subscription the write
   * answered, when it answered one (applied at once when it is the next revision), else a
   * catch-up.
   */
  readonly settle: (stored?: StoredSubscription) => Promise<void>;
  /** Set failed deliveries pending again, queue the first, pace the rest. */
  readonly replay: (accountCode: string, selection: ReplaySelection) => Promise<ReplayResult>;
  /** The interval between two paced replay deliveries, in ms. */
  readonly replayPaceMs: number;
  /** The API's OpenAPI document as JSON text, made on first use. */
  readonly openApi: () => string;
}

/**
 * The state an attempt listing's cursor carries: the sequence of the last attempt served, the
 * listing it pages (a subscription's id, '' for the audit log), and a digest of the account it
 * was issued to. @internal
 */
export interface AuditCursor {
  readonly before: number;
  readonly scope: string;
  readonly account?: string;
}

/** One request of an identified account. @internal */
export interface OperationRequest {
  readonly request: Request;
  readonly url: URL;
  readonly accountCode: string;
  /** The subscription id of the path, decoded ('' on the collections). */
  readonly id: string;
}
