/** The payload envelope, serialised once so that every attempt sends the same bytes. @module */
import { aClock, type Clock, systemClock } from '../../clock.js';
import { InvalidRequestError } from '../../errors/index.js';
import { describe, isArray } from '../../internal/describe.js';
import { LONE_SURROGATE } from '../../internal/lone-surrogate.js';
import {
  aFunction,
  checkValue,
  INVALID,
  type Rule,
  type Rules,
  readOptions,
} from '../../internal/options.js';
import { WEBHOOK_ID } from '../signing/signature.js';
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
  /**
   * Message ids (`webhook-id`: 1 to 256 visible ASCII, no comma).
   * @defaultValue `msg_` and a version 7 UUID (RFC 9562) of the clock's time: ids sort by the
   * millisecond they were made in, so that a database's index of them grows at one end
   */
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

/** A clock reading that a `Date` (and so an ISO 8601 time) can hold. @internal */
export const DATE_TIME: Rule<number> = {
  expected: 'a time in ms that a Date can hold (a finite number within ±8.64e15)',
  read: (value) =>
    typeof value === 'number' && !Number.isNaN(new Date(value).getTime()) ? value : INVALID,
};

const MESSAGE_RULES = {
  clock: aClock,
  generateId: aFunction<() => string>('returns a message id'),
  envelope: aFunction<NonNullable<WebhookMessageOptions['envelope']>>(
    'maps (event, id, at) to a JSON value',
  ),
};

// What an envelope of one's own returns: serialised here, or refused.
const JSON_VALUE: Rule<string> = {
  expected: 'a JSON value (no cycle, no BigInt, no getter that throws)',
  read(value) {
    try {
      return JSON.stringify(value) ?? INVALID;
    } catch {
      return INVALID;
    }
  },
};

/**
 * Make the message for an event: a new id and the serialised envelope, for every matching
 * subscription. The event is data, the options configuration: each is refused as such.
 * @throws InvalidRequestError `invalid_event`, with the `pointer` of the field at fault, for an
 * event that is no object, has no account code, a malformed kind or property id (or a lone
 * surrogate in one), or data JSON cannot hold (with the default envelope)
 * @throws ConfigurationError `invalid_option` for an option of the wrong type or a misspelt one, an
 * id `signWebhook` would refuse, a clock whose time no Date can hold, or an envelope of one's own
 * that returns what JSON cannot hold; what `generateId`, `clock.now()` or `envelope` throw is
 * passed on as it is
 * @example
 * ```ts
 * const message = createWebhookMessage({ accountCode: 'ACME', kind: 'folio/created', data: { folioId: 'F1' } });
 * ```
 */
export function createWebhookMessage(
  event: WebhookEvent,
  options: WebhookMessageOptions = {},
): WebhookMessage {
  const { clock, generateId, envelope } = readOptions(
    options,
    'createWebhookMessage',
    MESSAGE_RULES,
    {
      defaults: { clock: systemClock, envelope: defaultEnvelope },
      example: '{ clock, generateId, envelope }',
    },
  );
  const read = readWebhookEvent(event);
  const own =
    generateId === undefined ? undefined : checkValue(WEBHOOK_ID, generateId(), 'generateId()');
  const at = checkValue(DATE_TIME, clock.now(), 'clock.now()');
  const id = own ?? timeOrderedId(at);
  if (envelope !== defaultEnvelope) {
    return { id, body: checkValue(JSON_VALUE, envelope(read, id, at), 'envelope(event, id, at)') };
  }
  // The default envelope holds checked strings and the data: what JSON refuses is the data.
  try {
    return { id, body: JSON.stringify(defaultEnvelope(read, id, at)) };
  } catch (cause) {
    throw invalidEvent(EVENT_RULES.data, read.data, 'data', cause);
  }
}

/** The latest millisecond a version 7 UUID holds (48 bits). */
const MAX_UUID_MS = 2 ** 48 - 1;

// The id's text up to its random digits, for the latest millisecond asked for: the messages of a
// burst share it, and writing a number in hex is most of an id's cost.
let prefixMs = -1;
let prefix = '';

/**
 * The default message id made at `at` (ms): `msg_` and a version 7 UUID (RFC 9562), whose first 48
 * bits are the Unix time in ms (clamped to 0 and 2^48 - 1), then the version, 12 random bits, the
 * variant and 62 random bits, all taken from a version 4 UUID (whose variant is the same).
 */
function timeOrderedId(at: number): string {
  const ms = at > 0 ? Math.min(Math.floor(at), MAX_UUID_MS) : 0;
  if (ms !== prefixMs) {
    const hex = ms.toString(16).padStart(12, '0');
    prefix = `msg_${hex.slice(0, 8)}-${hex.slice(8)}-7`;
    prefixMs = ms;
  }
  // `xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx`: from after its version digit on.
  return prefix + globalThis.crypto.randomUUID().slice(15);
}

const hasLoneSurrogate = (text: string): boolean => LONE_SURROGATE.test(text);

// An identifier a database can keep as text: well-formed, and no NUL (PostgreSQL's text refuses it).
const storableId = (value: unknown): value is string =>
  typeof value === 'string' && value !== '' && !hasLoneSurrogate(value) && !value.includes('\0');

// The rules of an event's fields; `data` is checked by serialising it.
const EVENT_RULES = {
  accountCode: {
    expected:
      'the non-empty code of the account the event belongs to (well-formed Unicode, no NUL character)',
    read: (value: unknown) => (storableId(value) ? value : INVALID),
  },
  kind: {
    expected:
      'an event kind <topic>/<event> of lower-case letters, digits and inner hyphens, such as folio/created (no wildcard; well-formed Unicode)',
    read: (value: unknown) =>
      parseEventKind(value).ok && !hasLoneSurrogate(value as string) ? (value as string) : INVALID,
  },
  propertyId: {
    expected:
      'a non-empty string (well-formed Unicode, no NUL character), or left out for an account-level event',
    read: (value: unknown) => (storableId(value) ? value : INVALID),
  },
  data: {
    expected: 'a JSON value (no cycle, no BigInt, no getter that throws), or left out',
    read: (value: unknown) => value,
  },
} satisfies Rules;

const EVENT_EXPECTED = 'an object { accountCode, kind, propertyId?, data? } of plain data';

/**
 * An event read once, each field checked: the event is data given per call, so a bad one is an
 * `InvalidRequestError` (`invalid_event`) with the JSON pointer of the field at fault.
 * @internal
 */
export function readWebhookEvent(event: unknown): {
  readonly accountCode: string;
  readonly kind: string;
  readonly propertyId?: string;
  readonly data: unknown;
} {
  if (typeof event !== 'object' || event === null || isArray(event)) throw refusedEvent(event);
  let fields: Record<keyof typeof EVENT_RULES, unknown>;
  try {
    const { accountCode, kind, propertyId, data } = event as Record<string, unknown>;
    fields = { accountCode, kind, propertyId, data };
  } catch (cause) {
    throw refusedEvent(event, cause);
  }
  const accountCode = eventField('accountCode', fields.accountCode);
  const kind = eventField('kind', fields.kind);
  const { propertyId, data } = fields;
  return {
    accountCode,
    kind,
    ...(propertyId === undefined ? {} : { propertyId: eventField('propertyId', propertyId) }),
    data,
  };
}

function refusedEvent(event: unknown, cause?: unknown): InvalidRequestError {
  return new InvalidRequestError(
    'invalid_event',
    `event must be ${EVENT_EXPECTED}, got ${describe(event)}.`,
    { pointer: '', ...(cause === undefined ? {} : { cause }) },
  );
}

function eventField<K extends 'accountCode' | 'kind' | 'propertyId'>(
  key: K,
  value: unknown,
): string {
  const read = EVENT_RULES[key].read(value);
  if (read === INVALID) throw invalidEvent(EVENT_RULES[key], value, key);
  return read;
}

function invalidEvent(
  rule: Rule<unknown>,
  value: unknown,
  key: string,
  cause?: unknown,
): InvalidRequestError {
  return new InvalidRequestError(
    'invalid_event',
    `event.${key} must be ${rule.expected}, got ${describe(value)}.`,
    { pointer: `/${key}`, ...(cause === undefined ? {} : { cause }) },
  );
}
