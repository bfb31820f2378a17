/** Rows as the repository reads them, made into the webhook model's objects. @module */
import type { DeliveryAttempt } from '../webhooks/delivery/attempt.js';
import type {
  DeliveryLogEntry,
  KeptMessage,
  MessageKey,
  OutboxDelivery,
  OutboxMessage,
  PendingDelivery,
} from '../webhooks/store/repository.js';
import type {
  DisabledReason,
  SignatureType,
  StoredSubscription,
  Subscription,
  SubscriptionChange,
  SubscriptionChanges,
  SubscriptionStatus,
} from '../webhooks/subscriptions/subscription.js';

/** A row of the subscriptions table. */
export interface SubscriptionRow {
  readonly account_code: string;
  readonly id: string;
  readonly endpoint_url: string;
  readonly events: readonly string[];
  readonly property_ids: readonly string[] | null;
  readonly status: SubscriptionStatus;
  readonly created_at: string;
  readonly updated_at: string;
  // bigint: a string from pg, a number from PGlite.
  readonly revision: string | number;
  readonly deleted_at: string | null;
  readonly disabled_reason: DisabledReason | null;
  readonly disabled_at: string | null;
  readonly description: string | null;
  readonly rate_limit: number | null;
  // jsonb, parsed by the driver.
  readonly headers: Readonly<Record<string, string>> | null;
  readonly metadata: Readonly<Record<string, string>> | null;
  readonly signature_type: SignatureType | null;
  readonly public_key: string | null;
}

/** A pending delivery with its message's body, as claims and replays return them. */
export interface PendingRow {
  readonly account_code: string;
  readonly message_id: string;
  readonly subscription_id: string;
  readonly endpoint_url: string;
  readonly body: string;
  readonly attempts: number;
  readonly first_attempt_ms: number | null;
  readonly replay: number;
  readonly next_attempt_ms: number;
}

/** A row of the delivery log. */
export interface AttemptRow {
  readonly sequence: string | number;
  readonly message_id: string;
  readonly subscription_id: string;
  readonly endpoint_url: string;
  readonly attempt: number;
  readonly at_ms: number;
  readonly status: number | null;
  readonly error_code: string | null;
  readonly error_message: string | null;
  readonly outcome: DeliveryAttempt['outcome'];
  readonly next_attempt_ms: number | null;
  readonly reason: string | null;
  readonly duration_ms: number | null;
  readonly replay: number | null;
}

/** The stored subscription of a row, frozen as the memory repository's are. */
export function toSubscription(row: SubscriptionRow): StoredSubscription {
  return Object.freeze({
    id: row.id,
    accountCode: row.account_code,
    endpointUrl: row.endpoint_url,
    events: Object.freeze([...row.events]),
    ...(row.property_ids === null ? {} : { propertyIds: Object.freeze([...row.property_ids]) }),
    ...settings(row.description, row.rate_limit, row.headers, row.metadata),
    signatureType: row.signature_type ?? 'hmac-sha256',
    ...(row.public_key === null ? {} : { publicKey: row.public_key }),
    createdAt: row.created_at,
    status: row.status,
    ...disabled(row.disabled_reason, row.disabled_at),
    updatedAt: row.updated_at,
    revision: Number(row.revision),
  });
}

/** Why and when a subscription is disabled, kept only while it is. */
function disabled(
  reason: DisabledReason | null,
  at: string | null,
): Pick<StoredSubscription, 'disabledReason' | 'disabledAt'> {
  return reason === null || at === null ? {} : { disabledReason: reason, disabledAt: at };
}

/** The optional settings of a row, those it has (not NULL); the records copied and frozen. */
function settings(
  description: string | null,
  rateLimit: number | null,
  headers: Readonly<Record<string, string>> | null,
  metadata: Readonly<Record<string, string>> | null,
): Pick<StoredSubscription, 'description' | 'rateLimit' | 'headers' | 'metadata'> {
  return {
    ...(description === null ? {} : { description }),
    ...(rateLimit === null ? {} : { rateLimit }),
    ...(headers === null ? {} : { headers: Object.freeze({ ...headers }) }),
    ...(metadata === null ? {} : { metadata: Object.freeze({ ...metadata }) }),
  };
}

/**
 * The change a JSON tuple of `changesSince` tells, the columns in the order the statements select
 * them. Made straight from the tuple, whose arrays are its own (freshly parsed), in one fixed
 * shape: a start over a million subscriptions makes one object of each, not five. Every object
 * it makes is frozen and holds data properties only (see `markPlainChanges`).
 */
export function changeOfTuple(tuple: readonly unknown[]): SubscriptionChange {
  const accountCode = tuple[0] as string;
  const id = tuple[1] as string;
  const revision = Number(tuple[8]);
  if (tuple[9] !== null) return Object.freeze({ revision, id, accountCode });
  const events = Object.freeze(tuple[3] as string[]);
  const propertyIds = tuple[4] as string[] | null;
  const endpointUrl = tuple[2] as string;
  const status = tuple[5] as SubscriptionStatus;
  const createdAt = tuple[6] as string;
  // A subscription never changed holds one string for both times, not two equal ones.
  const updatedAt = tuple[7] === createdAt ? createdAt : (tuple[7] as string);
  const signatureType = (tuple[16] as SignatureType | null) ?? 'hmac-sha256';
  const base: StoredSubscription =
    propertyIds === null
      ? {
          id,
          accountCode,
          endpointUrl,
          events,
          signatureType,
          createdAt,
          status,
          updatedAt,
          revision,
        }
      : {
          id,
          accountCode,
          endpointUrl,
          events,
          propertyIds: Object.freeze(propertyIds),
          signatureType,
          createdAt,
          status,
          updatedAt,
          revision,
        };
  // Only those with settings or disabled (fewer) take the shapes with them.
  const hasSettings =
    tuple[12] !== null || tuple[13] !== null || tuple[14] !== null || tuple[15] !== null;
  const withSettings = hasSettings
    ? {
        ...base,
        ...settings(
          tuple[12] as string | null,
          tuple[13] as number | null,
          tuple[14] as Record<string, string> | null,
          tuple[15] as Record<string, string> | null,
        ),
      }
    : base;
  const keyed =
    tuple[17] === null ? withSettings : { ...withSettings, publicKey: tuple[17] as string };
  const subscription =
    tuple[10] === null
      ? keyed
      : { ...keyed, ...disabled(tuple[10] as DisabledReason, tuple[11] as string | null) };
  return Object.freeze({ revision, id, accountCode, subscription: Object.freeze(subscription) });
}

/** The delivery log entry of a row: the fields the attempt had, and its sequence. */
export function toLogEntry(row: AttemptRow): DeliveryLogEntry {
  return {
    id: row.message_id,
    subscriptionId: row.subscription_id,
    endpointUrl: row.endpoint_url,
    attempt: row.attempt,
    at: row.at_ms,
    ...(row.duration_ms === null ? {} : { durationMs: row.duration_ms }),
    ...(row.status === null ? {} : { status: row.status }),
    ...(row.error_code === null
      ? {}
      : { error: { code: row.error_code, message: row.error_message ?? '' } }),
    outcome: row.outcome,
    ...(row.next_attempt_ms === null ? {} : { nextAttemptAt: row.next_attempt_ms }),
    ...(row.reason === null
      ? {}
      : { reason: row.reason as NonNullable<DeliveryAttempt['reason']> }),
    ...(row.replay === null ? {} : { replay: row.replay }),
    sequence: Number(row.sequence),
  };
}

/** The pending delivery of a row. */
export function toPending(row: PendingRow): PendingDelivery {
  return {
    accountCode: row.account_code,
    messageId: row.message_id,
    subscriptionId: row.subscription_id,
    endpointUrl: row.endpoint_url,
    body: row.body,
    attempts: row.attempts,
    ...(row.first_attempt_ms === null ? {} : { firstAttemptAt: row.first_attempt_ms }),
    replay: row.replay,
    nextAttemptAt: row.next_attempt_ms,
  };
}

/** A create to write: the subscription, its sealed secret, and the account's bound. */
export interface CreateToRecord {
  readonly subscription: Subscription;
  /** The secret as stored (sealed under the cipher, or plain), and the key that sealed it. */
  readonly secret: string;
  readonly keyId: string | null;
  /** The time of the create, in ms. */
  readonly at: number;
  /** The most live subscriptions the account may hold, a whole number. */
  readonly max: number;
  readonly publicKey: string | null;
}

/** A record as JSON text for a jsonb column, or NULL. */
export const jsonOrNull = (
  record: Readonly<Record<string, string>> | null | undefined,
): string | null => (record === undefined || record === null ? null : JSON.stringify(record));

/**
 * The parameters of `create` for one create; `asJson`, for `createSubscriptions`: its events and
 * property ids as JSON text (arrays of arrays must all have one length).
 */
export function createValues(item: CreateToRecord, asJson = false): unknown[] {
  const { subscription, secret, keyId, at, max, publicKey } = item;
  const { accountCode, id, endpointUrl, events, propertyIds, createdAt } = subscription;
  const { description, rateLimit, headers, metadata, signatureType } = subscription;
  const list = (values: readonly string[]) => (asJson ? JSON.stringify(values) : [...values]);
  return [
    accountCode,
    id,
    endpointUrl,
    list(events),
    propertyIds === undefined ? null : list(propertyIds),
    createdAt,
    new Date(at).toISOString(),
    secret,
    keyId,
    at,
    max,
    description ?? null,
    rateLimit ?? null,
    jsonOrNull(headers),
    jsonOrNull(metadata),
    signatureType ?? 'hmac-sha256',
    publicKey,
  ];
}

/** The parameters of `createSubscriptions` for a batch: one array per parameter of `create`. */
export function createColumns(batch: readonly CreateToRecord[]): unknown[][] {
  return columnsOf(batch, 17, (item) => createValues(item, true));
}

/**
 * The parameters of a statement for a batch: one array per parameter (`width` of them), each item's
 * values from `valuesOf` at its place in every array.
 */
function columnsOf<T>(
  batch: readonly T[],
  width: number,
  valuesOf: (item: T) => readonly unknown[],
): unknown[][] {
  const columns: unknown[][] = Array.from({ length: width }, () => new Array(batch.length));
  batch.forEach((item, i) => {
    valuesOf(item).forEach((value, c) => {
      (columns[c] as unknown[])[i] = value;
    });
  });
  return columns;
}

/** An update to write: the subscription, its changes and their time (ms). */
export interface UpdateToRecord {
  readonly accountCode: string;
  readonly id: string;
  readonly changes: SubscriptionChanges;
  readonly at: number;
}

/**
 * The parameters of `update` for one update; `asJson`, for `updateSubscriptions`: its events and
 * property ids as JSON text.
 */
export function updateValues(item: UpdateToRecord, asJson = false): unknown[] {
  const { accountCode, id, changes, at } = item;
  const list = (values: readonly string[]) => (asJson ? JSON.stringify(values) : [...values]);
  return [
    accountCode,
    id,
    changes.endpointUrl ?? null,
    changes.events === undefined ? null : list(changes.events),
    changes.propertyIds !== undefined,
    changes.propertyIds === undefined || changes.propertyIds === null
      ? null
      : list(changes.propertyIds),
    changes.status ?? null,
    new Date(at).toISOString(),
    changes.disabledReason ?? null,
    changes.description !== undefined,
    changes.description ?? null,
    changes.rateLimit !== undefined,
    changes.rateLimit ?? null,
    changes.headers !== undefined,
    jsonOrNull(changes.headers),
    changes.metadata !== undefined,
    jsonOrNull(changes.metadata),
    changes.signatureType ?? null,
  ];
}

/** The parameters of `updateSubscriptions` for a batch: one array per parameter of `update`. */
export function updateColumns(batch: readonly UpdateToRecord[]): unknown[][] {
  return columnsOf(batch, 18, (item) => updateValues(item, true));
}

/** A delete to write: the subscription and its time (ms). */
export interface DeleteToRecord {
  readonly accountCode: string;
  readonly id: string;
  readonly at: number;
}

/** The parameters of `delete` for one delete. */
export function deleteValues({ accountCode, id, at }: DeleteToRecord): unknown[] {
  return [accountCode, id, new Date(at).toISOString()];
}

/** The parameters of `deleteSubscriptions` for a batch: one array per field, in its order. */
export function deleteColumns(batch: readonly DeleteToRecord[]): unknown[][] {
  return columnsOf(batch, 3, deleteValues);
}

/** A rotation to write: the subscription, its new secret as stored, and the rotation's terms. */
export interface RotationToRecord {
  readonly accountCode: string;
  readonly id: string;
  /** The secret as stored (sealed where the repository has a cipher), and its key's id. */
  readonly secret: string;
  readonly keyId: string | null;
  readonly at: number;
  readonly graceMs: number;
  readonly publicKey: string | null;
  readonly signatureType: string | null;
}

/** The parameters of `rotateSecret` for one rotation. */
export function rotateValues(item: RotationToRecord): unknown[] {
  const { accountCode, id, secret, keyId, at, graceMs, publicKey, signatureType } = item;
  return [
    accountCode,
    id,
    secret,
    keyId,
    at,
    at + graceMs,
    publicKey,
    signatureType,
    new Date(at).toISOString(),
  ];
}

/** The parameters of `rotateSecrets` for a batch: one array per field, in its order. */
export function rotateColumns(batch: readonly RotationToRecord[]): unknown[][] {
  return columnsOf(batch, 9, rotateValues);
}

/** An attempt to record, with its account and the lease of a retry. */
export interface AttemptToRecord {
  readonly accountCode: string;
  readonly attempt: DeliveryAttempt;
  readonly leaseUntil: number | null;
}

/** The parameters of `record_attempts` for a batch: one array per field, in its order. */
export function attemptColumns(batch: readonly AttemptToRecord[]): unknown[][] {
  return columnsOf(batch, 15, ({ accountCode, attempt, leaseUntil }) => [
    accountCode,
    attempt.id,
    attempt.subscriptionId,
    attempt.endpointUrl,
    attempt.attempt,
    attempt.at,
    attempt.status ?? null,
    attempt.error?.code ?? null,
    attempt.error?.message ?? null,
    attempt.outcome,
    attempt.nextAttemptAt ?? null,
    attempt.reason ?? null,
    attempt.durationMs ?? null,
    attempt.replay ?? null,
    leaseUntil,
  ]);
}

/** A message to record, with its deliveries, their lease, and its idempotency key if any. */
export interface MessageToRecord {
  readonly message: OutboxMessage;
  readonly deliveries: readonly OutboxDelivery[];
  readonly leaseUntil: number;
  readonly key?: MessageKey | undefined;
}

/**
 * The parameters of `recordMessages` for a batch: one array per field of the messages, in its
 * order, then the deliveries' message positions (from 1), subscriptions and endpoints; `keyed`,
 * for `recordKeyedMessages`, then the messages' keys (null for none), fingerprints and expiry times.
 */
export function messageColumns(batch: readonly MessageToRecord[], keyed = false): unknown[][] {
  const columns: unknown[][] = Array.from({ length: keyed ? 13 : 10 }, () => []);
  batch.forEach(({ message, deliveries, leaseUntil, key }, i) => {
    if (keyed) {
      (columns[10] as unknown[]).push(key?.key ?? null);
      (columns[11] as unknown[]).push(key?.fingerprint ?? null);
      (columns[12] as unknown[]).push(key?.expiresAt ?? null);
    }
    const values = [
      message.accountCode,
      message.id,
      message.kind,
      message.propertyId ?? null,
      message.body,
      message.createdAt,
      leaseUntil,
    ];
    for (let c = 0; c < values.length; c++) (columns[c] as unknown[]).push(values[c]);
    for (const delivery of deliveries) {
      (columns[7] as unknown[]).push(i + 1);
      (columns[8] as unknown[]).push(delivery.subscriptionId);
      (columns[9] as unknown[]).push(delivery.endpointUrl);
    }
  });
  return columns;
}

/** A row of `recordKeyedMessages`: a keyed message's position, and the message its key holds. */
export interface KeptRow {
  readonly n: string | number;
  readonly message_id: string;
  readonly fingerprint: string;
  readonly subscription_ids: readonly string[];
}

/** The message a key holds, as a row of `recordKeyedMessages` tells it. */
export function toKept(row: KeptRow): KeptMessage {
  return {
    messageId: row.message_id,
    fingerprint: row.fingerprint,
    deliveries: Object.freeze([...row.subscription_ids]),
  };
}

/** A bound of a page or a read, as the memory repository's `slice` takes it. */
export function count(value: number): number {
  return Number.isNaN(value) ? 0 : Math.max(0, Math.min(Math.trunc(value), 2 ** 62));
}
