/** The payload envelope, serialised once so that every attempt sends the same bytes. @module */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import { ConfigurationError } from '../../errors/index.js';
import { isWebhookId, WEBHOOK_ID_RULE } from '../signing/signature.js';
import { parseEventKind } from './event-kind.js';

/** An event that occurred, to be sent to the subscriptions that match it. */
export interface WebhookEvent {
  /** The account the event belongs to. */
  readonly accountCode: string;
  /** The event kind, `<topic>/<event>`. */
  readonly kind: string;
  /** The property it concerns; absent for an account-level event. */
  readonly propertyId?: string | undefined;
  /** What happened; any JSON value. */
  readonly data?: unknown;
}

/** The default envelope. */
export interface WebhookEnvelope {
  /** The message id, also sent as `webhook-id`. */
  readonly id: string;
  /** The topic of the kind (`folio`). */
  readonly topic: string;
  /** The kind (`folio/created`). */
  readonly type: string;
  /** The account's code. */
  readonly accountId: string;
  /** The property, when the event concerns one. */
  readonly propertyId?: string;
  /** When the event occurred, ISO 8601 in UTC. */
  readonly timestamp: string;
  /** The event's data (`null` when it has none). */
  readonly data: unknown;
}

/** A message ready to deliver: its id and the exact body bytes to sign and send. */
export interface WebhookMessage {
  /** The message id (`webhook-id`), the same for every subscription and every retry. */
  readonly id: string;
  /** The serialised envelope. */
  readonly body: string;
}

/** How messages are made. */
export interface WebhookMessageOptions {
  /** Time of the event. @defaultValue {@link systemClock} */
  clock?: Clock;
  /** Message ids (`webhook-id`: 1 to 256 visible ASCII, no comma). @defaultValue `msg_` and a UUID */
  generateId?: () => string;
  /** Another envelope from the event, the id and the time (ms). @defaultValue {@link defaultEnvelope} */
  envelope?: (event: WebhookEvent, id: string, at: number) => unknown;
}

/**
 * The documented default envelope.
 * @param at - when it occurred, in milliseconds
 */
export function defaultEnvelope(event: WebhookEvent, id: string, at: number): WebhookEnvelope {
  const slash = event.kind.indexOf('/');
  return {
    id,
    topic: event.kind.slice(0, slash),
    type: event.kind,
    accountId: event.accountCode,
    ...(event.propertyId === undefined ? {} : { propertyId: event.propertyId }),
    timestamp: new Date(at).toISOString(),
    data: event.data ?? null,
  };
}

/**
 * Make the message for an event: a new id and the serialised envelope, for every matching
 * subscription.
 * @throws ConfigurationError `invalid_option` for an event that is no object, a malformed kind,
 * an option of the wrong type, an id `signWebhook` would refuse, a clock whose time no Date can
 * hold, or an envelope JSON cannot hold
 * @example
 * ```ts
 * const message = createWebhookMessage({ accountCode: 'ACME', kind: 'folio/created', data: { folioId: 'F1' } });
 * ```
 */
export function createWebhookMessage(
  event: WebhookEvent,
  options: WebhookMessageOptions = {},
): WebhookMessage {
  if (typeof event !== 'object' || event === null) {
    throw new ConfigurationError(
      'invalid_option',
      `createWebhookMessage needs an event { accountCode, kind, propertyId?, data? }; got ${kindOf(event)}.`,
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError(
      'invalid_option',
      'The options of createWebhookMessage must be an object { clock?, generateId?, envelope? }, or left out.',
    );
  }
  const { clock = systemClock, generateId = defaultId, envelope = defaultEnvelope } = options;
  for (const [name, value] of [
    ['generateId', generateId],
    ['envelope', envelope],
    ['clock.now', typeof clock === 'object' && clock !== null ? clock.now : undefined],
  ] as const) {
    if (typeof value !== 'function') {
      throw new ConfigurationError(
        'invalid_option',
        `${name} must be a function; leave it out for the default.`,
      );
    }
  }
  const kind = parseEventKind(event.kind);
  if (!kind.ok) {
    throw new ConfigurationError(
      'invalid_option',
      `The event kind is invalid: ${kind.error.message}`,
    );
  }
  const id: unknown = generateId();
  if (!isWebhookId(id)) {
    throw new ConfigurationError(
      'invalid_option',
      `generateId must return a message id signWebhook accepts, ${WEBHOOK_ID_RULE}; got ${typeof id === 'string' ? JSON.stringify(id.slice(0, 64)) : kindOf(id)}.`,
    );
  }
  const at: unknown = clock.now();
  // The envelope states the time as ISO 8601, which only a time a Date can hold has.
  if (typeof at !== 'number' || Number.isNaN(new Date(at).getTime())) {
    throw new ConfigurationError(
      'invalid_option',
      `clock.now() must return a time in ms that a Date can hold (a finite number within ±8.64e15), got ${typeof at === 'number' ? String(at) : kindOf(at)}.`,
    );
  }
  let body: string | undefined;
  try {
    body = JSON.stringify(envelope(event, id, at));
  } catch (error) {
    throw new ConfigurationError(
      'invalid_option',
      `The envelope cannot be serialised as JSON: ${error instanceof Error ? error.message : String(error)}.`,
      { cause: error },
    );
  }
  if (body === undefined) {
    throw new ConfigurationError('invalid_option', 'The envelope must be a JSON value.');
  }
  return { id, body };
}

function defaultId(): string {
  return `msg_${randomUUID()}`;
}

function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  const type = typeof value;
  return `${type === 'object' ? 'an' : 'a'} ${type}`;
}
