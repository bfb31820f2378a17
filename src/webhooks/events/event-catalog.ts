/** An optional catalog of the topics and events a service publishes. @module */
import { ConfigurationError } from '../../errors/index.js';
import { nearestName } from '../../internal/nearest-name.js';
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

/**
 * Make a catalog of known topics and events. Topic and event names follow the event-kind grammar.
 * @throws ConfigurationError `invalid_event_catalog` when the definition is no object, there is
 * no topic, a name is not a string or not well formed, a topic has no events, or an event is
 * listed twice
 * @example
 * ```ts
 * const catalog = defineEventCatalog({ folio: ['created', 'charges-changed'], reservation: '*' });
 * ```
 */
export function defineEventCatalog(definition: EventCatalogDefinition): EventCatalog {
  if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) {
    throw new ConfigurationError(
      'invalid_event_catalog',
      `An event catalog is defined by an object mapping each topic to its events, such as { folio: ['created'], reservation: '*' }; got ${definition === null || definition === undefined ? String(definition) : Array.isArray(definition) ? 'an array' : `a ${typeof definition}`}.`,
    );
  }
  const events = new Map<string, readonly string[] | '*'>();
  for (const [topic, list] of Object.entries(definition)) {
    if (list === '*') {
      checkName(`${topic}/*`, 'topic');
      events.set(topic, '*');
      continue;
    }
    if (!Array.isArray(list) || list.length === 0) {
      throw new ConfigurationError(
        'invalid_event_catalog',
        `Topic "${topic}" needs a non-empty list of events, or '*' when its events are not enumerated.`,
      );
    }
    for (const [at, event] of list.entries()) {
      // Event kinds are strings: a number listed here could never be subscribed to.
      if (typeof event !== 'string') {
        const what =
          event === null || event === undefined
            ? String(event)
            : `${typeof event === 'object' ? 'an' : 'a'} ${typeof event}`;
        const example = typeof event === 'number' ? String(event) : 'created';
        throw new ConfigurationError(
          'invalid_event_catalog',
          `Topic "${topic}" lists ${what} at position ${at}; list event names as strings, such as '${example}'.`,
        );
      }
      checkName(`${topic}/${event}`, 'kind');
    }
    if (new Set(list).size !== list.length) {
      throw new ConfigurationError(
        'invalid_event_catalog',
        `Topic "${topic}" lists an event twice.`,
      );
    }
    events.set(topic, Object.freeze([...list]));
  }
  if (events.size === 0) {
    // A catalog that knows no topic would refuse every subscription, suggesting nothing.
    throw new ConfigurationError(
      'invalid_event_catalog',
      "An event catalog needs at least one topic, such as { folio: ['created'] }; leave the catalog out to accept any well-formed kind.",
    );
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

function checkName(pattern: string, type: EventPattern['type']): void {
  const parsed = parseEventPattern(pattern);
  if (!parsed.ok) {
    throw new ConfigurationError(
      'invalid_event_catalog',
      `The catalog entry "${pattern}" is not well formed: ${parsed.error.message}`,
    );
  }
  if (parsed.value.type !== type) {
    throw new ConfigurationError(
      'invalid_event_catalog',
      `The catalog entry "${pattern}" must name an event; write '*' in place of the list instead.`,
    );
  }
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
