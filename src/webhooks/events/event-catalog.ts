/** An optional catalog of the topics and events a service publishes. @module */
import { isArray } from '../../internal/describe.js';
import { nearestName } from '../../internal/nearest-name.js';
import {
  checkValue,
  INVALID,
  listOf,
  type Rule,
  refused,
  withFields,
  worded,
} from '../../internal/options.js';
import type { EventPattern } from './event-kind.js';
import { parseEventPattern } from './event-kind.js';

/**
 * Topics and their events. `'*'` in place of a list declares a topic whose events are not
 * enumerated: any well-formed event name of that topic is accepted.
 */
export type EventCatalogDefinition = Readonly<Record<string, readonly string[] | '*'>>;

/** Codes of the errors an {@link EventCatalog} returns. */
export const eventCatalogErrorCodes = ['unknown_topic', 'unknown_event'] as const;

/** A code of {@link eventCatalogErrorCodes}. */
export type EventCatalogErrorCode = (typeof eventCatalogErrorCodes)[number];

/** Why a well-formed pattern is not in the catalog. */
export interface EventCatalogError {
  /** Stable code. */
  readonly code: EventCatalogErrorCode;
  /** What is unknown and what was probably meant. */
  readonly message: string;
  /** The nearest known pattern, for example `folio/created` for `folio/craeted`. */
  readonly suggestion: string;
}

/** A catalog of known topics and events, made by {@link defineEventCatalog}. */
export interface EventCatalog {
  /** The known topics, in the order they were defined. */
  readonly topics: readonly string[];
  /** The events of a topic, `'*'` for a topic with any event, or undefined for an unknown one. */
  eventsOf(topic: string): readonly string[] | '*' | undefined;
  /**
   * Check a pattern from {@link parseEventPattern}.
   * @returns undefined when the pattern is known, else the error with a suggestion
   */
  check(pattern: EventPattern): EventCatalogError | undefined;
}

const CODE = 'invalid_event_catalog';

// Every name a topic or event may have: the event-kind grammar, its parts checked one by one.
const TOPIC: Rule<string> = {
  expected: 'a topic name of 1 to 64 lower-case letters, digits and inner hyphens, such as folio',
  code: CODE,
  read(value) {
    if (typeof value !== 'string') return INVALID;
    const parsed = parseEventPattern(`${value}/*`);
    return parsed.ok && parsed.value.topic === value ? value : INVALID;
  },
};

const EVENT: Rule<string> = {
  expected:
    "an event name of 1 to 64 lower-case letters, digits and inner hyphens, such as created (write '*' in place of the list for any event)",
  code: CODE,
  read(value) {
    if (typeof value !== 'string') return INVALID;
    const parsed = parseEventPattern(`topic/${value}`);
    return parsed.ok && parsed.value.type === 'kind' && parsed.value.event === value
      ? value
      : INVALID;
  },
};

// What a value must be, for the refusal of an event listed a second time.
const LISTED_ONCE = 'an event not listed before it';

const EVENT_LIST = worded(
  listOf(EVENT, 1),
  "a non-empty array of event names such as ['created'], or '*' for any event of the topic",
  CODE,
);

const TOPIC_EVENTS: Rule<readonly string[] | '*'> = {
  expected: EVENT_LIST.expected,
  code: CODE,
  read(value, name) {
    if (value === '*') return '*';
    const list = EVENT_LIST.read(value, name);
    if (list === INVALID) return INVALID;
    list.forEach((event, index) => {
      if (list.indexOf(event) !== index)
        throw refused(`${name}[${index}]`, LISTED_ONCE, event, CODE);
    });
    return Object.freeze(list);
  },
};

// A catalog that knows no topic would refuse every subscription, suggesting nothing.
const DEFINITION: Rule<Readonly<Record<string, unknown>>> = {
  expected:
    "an object mapping at least one topic to its events, such as { folio: ['created'], reservation: '*' } (leave the catalog out to accept any well-formed kind)",
  code: CODE,
  read(value, name) {
    if (typeof value !== 'object' || value === null || isArray(value)) return INVALID;
    let topics: string[];
    try {
      topics = Object.keys(value);
    } catch {
      return INVALID; // a Proxy that will not tell its keys
    }
    if (topics.length === 0) return INVALID;
    // Each topic's events read once; a getter that throws is refused as no plain data.
    return withFields(topics, DEFINITION.expected, CODE).read(value, name);
  },
};

/**
 * Make a catalog of known topics and events. Topic and event names follow the event-kind grammar.
 * @throws ConfigurationError `invalid_event_catalog` when the definition is no object or cannot be
 * read (a getter that throws), there is no topic, a name is not a string or not well formed, a
 * topic has no events, or an event is listed twice; the message names the value at fault
 * (`definition.folio[1]`)
 * @example
 * ```ts
 * const catalog = defineEventCatalog({ folio: ['created', 'charges-changed'], reservation: '*' });
 * ```
 */
export function defineEventCatalog(definition: EventCatalogDefinition): EventCatalog {
  const fields = checkValue(DEFINITION, definition, 'defineEventCatalog definition');
  const events = new Map<string, readonly string[] | '*'>();
  for (const [topic, list] of Object.entries(fields)) {
    checkValue(TOPIC, topic, 'definition topic');
    events.set(topic, checkValue(TOPIC_EVENTS, list, `definition.${topic}`));
  }
  const topics = Object.freeze([...events.keys()]);
  return Object.freeze({
    topics,
    eventsOf: (topic: string) => events.get(topic),
    check: (pattern: EventPattern) => checkPattern(events, topics, pattern),
  });
}

function checkPattern(
  events: ReadonlyMap<string, readonly string[] | '*'>,
  topics: readonly string[],
  pattern: EventPattern,
): EventCatalogError | undefined {
  const known = events.get(pattern.topic);
  if (known === undefined) {
    const topic = nearestName(pattern.topic, topics) ?? '';
    const suggestion =
      pattern.type === 'topic' ? `${topic}/*` : nearestKind(events, topic, pattern.event);
    return {
      code: 'unknown_topic',
      message: `Unknown topic "${pattern.topic}" in "${pattern.text}"; did you mean "${suggestion}"? Known topics: ${topics.join(', ')}.`,
      suggestion,
    };
  }
  if (pattern.type === 'topic' || known === '*' || known.includes(pattern.event)) return undefined;
  const suggestion = nearestKind(events, pattern.topic, pattern.event);
  return {
    code: 'unknown_event',
    message: `Unknown event "${pattern.event}" of topic "${pattern.topic}"; did you mean "${suggestion}"? Known: ${known.map((e) => `${pattern.topic}/${e}`).join(', ')}, ${pattern.topic}/*.`,
    suggestion,
  };
}

// The nearest known kind of `topic` to `event`; the topic wildcard when its events are open.
function nearestKind(
  events: ReadonlyMap<string, readonly string[] | '*'>,
  topic: string,
  event: string,
): string {
  const known = events.get(topic);
  if (known === undefined || known === '*') return `${topic}/*`;
  return `${topic}/${nearestName(event, known) ?? '*'}`;
}

/**
 * The topics and events the specification names: topic `reservation` (its events are not listed
 * there, so any well-formed one is accepted) and topic `folio` with `created` and
 * `charges-changed`. An example: define your own with {@link defineEventCatalog}.
 */
export const exampleEventCatalog: EventCatalog = defineEventCatalog({
  reservation: '*',
  folio: ['created', 'charges-changed'],
});
