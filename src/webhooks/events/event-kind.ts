/** The event-kind grammar: `<topic>/<event>` and `<topic>/*`; the parsers never throw. @module */

/** The longest topic or event name, in characters. */
export const MAX_EVENT_PART_LENGTH = 64;

/** The longest pattern: a topic, a slash and an event name. */
export const MAX_EVENT_PATTERN_LENGTH = 2 * MAX_EVENT_PART_LENGTH + 1;

/** Codes of the errors {@link parseEventPattern} and {@link parseEventKind} return. */
export const eventPatternErrorCodes = [
  'pattern_not_string',
  'pattern_empty',
  'pattern_too_long',
  'pattern_missing_slash',
  'pattern_too_many_segments',
  'pattern_empty_topic',
  'pattern_empty_event',
  'pattern_wildcard_topic',
  'pattern_wildcard_kind',
  'pattern_invalid_topic',
  'pattern_invalid_event',
] as const;

/** A code of {@link eventPatternErrorCodes}. */
export type EventPatternErrorCode = (typeof eventPatternErrorCodes)[number];

/** A specific event kind, `<topic>/<event>`. */
export interface EventKindPattern {
  /** `kind` for a specific event. */
  readonly type: 'kind';
  /** The topic, for example `folio`. */
  readonly topic: string;
  /** The event, for example `charges-changed`. */
  readonly event: string;
  /** The pattern as written, for example `folio/charges-changed`. */
  readonly text: string;
}

/** Every event of a topic, `<topic>/*`. */
export interface TopicWildcardPattern {
  /** `topic` for a topic wildcard. */
  readonly type: 'topic';
  /** The topic, for example `reservation`. */
  readonly topic: string;
  /** The pattern as written, for example `reservation/*`. */
  readonly text: string;
}

/** A parsed pattern of a subscription's `events`. */
export type EventPattern = EventKindPattern | TopicWildcardPattern;

/** Why a string is not a pattern (or not a kind): a stable code and a message a person can act on. */
export interface EventPatternError {
  /** Stable code. */
  readonly code: EventPatternErrorCode;
  /** What is wrong and what to write instead. */
  readonly message: string;
}

/** The result of parsing: the typed pattern, or the error. */
export type EventPatternResult<T> =
  | {
      /** Well formed. */
      readonly ok: true;
      /** The typed pattern or kind. */
      readonly value: T;
    }
  | {
      /** Not well formed. */
      readonly ok: false;
      /** What is wrong. */
      readonly error: EventPatternError;
    };

const SHAPE =
  'write <topic>/<event> (for example folio/created) or <topic>/* (for example reservation/*)';

/**
 * Parse one element of a subscription's `events`: a kind (`folio/created`) or a topic wildcard
 * (`reservation/*`). Anything but a string is an error.
 * @example
 * ```ts
 * parseEventPattern('reservation/*'); // { ok: true, value: { type: 'topic', topic: 'reservation', ... } }
 * parseEventPattern('*');             // { ok: false, error: { code: 'pattern_wildcard_topic', ... } }
 * ```
 */
export function parseEventPattern(input: unknown): EventPatternResult<EventPattern> {
  if (typeof input !== 'string') {
    return fail('pattern_not_string', `Expected a string; ${SHAPE}.`);
  }
  if (input.length === 0) return fail('pattern_empty', `The pattern is empty; ${SHAPE}.`);
  if (input.length > MAX_EVENT_PATTERN_LENGTH) {
    return fail(
      'pattern_too_long',
      `The pattern has ${input.length} characters; at most ${MAX_EVENT_PATTERN_LENGTH} are allowed (${MAX_EVENT_PART_LENGTH} per part).`,
    );
  }
  const slash = input.indexOf('/');
  if (slash === -1) {
    if (input === '*') {
      return fail(
        'pattern_wildcard_topic',
        `"*" would select every topic; name the topic: ${SHAPE}.`,
      );
    }
    return fail('pattern_missing_slash', `"${input}" has no "/"; ${SHAPE}.`);
  }
  if (input.indexOf('/', slash + 1) !== -1) {
    return fail(
      'pattern_too_many_segments',
      `"${input}" has more than one "/"; a pattern is exactly two parts: ${SHAPE}.`,
    );
  }
  const topic = input.slice(0, slash);
  const event = input.slice(slash + 1);
  if (topic.length === 0)
    return fail('pattern_empty_topic', `"${input}" has no topic before "/"; ${SHAPE}.`);
  if (topic === '*') {
    return fail(
      'pattern_wildcard_topic',
      `"${input}" uses "*" as the topic; only the event may be "*": ${SHAPE}.`,
    );
  }
  const topicProblem = partProblem(topic);
  if (topicProblem !== undefined) {
    return fail('pattern_invalid_topic', `The topic "${topic}" ${topicProblem}.`);
  }
  if (event.length === 0) {
    return fail(
      'pattern_empty_event',
      `"${input}" has no event after "/"; write ${topic}/<event> or ${topic}/*.`,
    );
  }
  if (event === '*') return { ok: true, value: { type: 'topic', topic, text: input } };
  const eventProblem = partProblem(event);
  if (eventProblem !== undefined) {
    return fail('pattern_invalid_event', `The event "${event}" ${eventProblem}.`);
  }
  return { ok: true, value: { type: 'kind', topic, event, text: input } };
}

/** Parse the kind of an event that occurred: `<topic>/<event>`, never a wildcard. */
export function parseEventKind(input: unknown): EventPatternResult<EventKindPattern> {
  const parsed = parseEventPattern(input);
  if (!parsed.ok || parsed.value.type === 'kind')
    return parsed as EventPatternResult<EventKindPattern>;
  return fail(
    'pattern_wildcard_kind',
    `"${parsed.value.text}" is a pattern, not an event kind; an event has one kind such as ${parsed.value.topic}/created.`,
  );
}

/** Whether an event of kind `kind` is selected by `pattern`. */
export function patternSelects(pattern: EventPattern, kind: EventKindPattern): boolean {
  return pattern.type === 'topic' ? pattern.topic === kind.topic : pattern.text === kind.text;
}

function partProblem(part: string): string | undefined {
  if (part.length > MAX_EVENT_PART_LENGTH) {
    return `has ${part.length} characters; at most ${MAX_EVENT_PART_LENGTH} are allowed`;
  }
  for (let i = 0; i < part.length; i++) {
    const c = part.charCodeAt(i);
    const alphanumeric = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39);
    if (alphanumeric) continue;
    if (c !== 0x2d) {
      const shown = JSON.stringify(String.fromCodePoint(part.codePointAt(i) ?? c));
      const hint = c >= 0x41 && c <= 0x5a ? ' (use lower case)' : '';
      return `contains ${shown} at position ${i}${hint}; use lower-case letters, digits and inner hyphens`;
    }
    if (i === 0 || i === part.length - 1) {
      return 'starts or ends with "-"; hyphens may only join letters and digits';
    }
    if (part.charCodeAt(i + 1) === 0x2d) {
      return 'contains "--"; use single hyphens between letters and digits';
    }
  }
  return undefined;
}

function fail<T>(code: EventPatternErrorCode, message: string): EventPatternResult<T> {
  return { ok: false, error: { code, message } };
}
