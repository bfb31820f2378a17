/**
 * The topic `operational`: the events the webhook service itself publishes about its
 * subscriptions and deliveries, their data, and the catalog that knows them beside the platform's
 * (see docs/webhook-service.md, "Operational events").
 * @module
 */

import { encodeBase64Url } from '../../internal/base64.js';
import { sha256 } from '../../internal/sha256.js';
import { defineEventCatalog, type EventCatalog } from './event-catalog.js';
import type { EventPattern } from './event-kind.js';

/** The topic of the service's own events; platforms cannot publish events of it. */
export const OPERATIONAL_TOPIC = 'operational';

/** The kinds of the topic `operational`, each `operational/<event>`. */
export const operationalEventKinds = [
  'operational/subscription-disabled',
  'operational/attempt-exhausted',
  'operational/attempt-failing',
  'operational/attempt-recovered',
] as const;

/** A kind of {@link operationalEventKinds}. */
export type OperationalEventKind = (typeof operationalEventKinds)[number];

/** The data of `operational/subscription-disabled`: the service disabled a subscription. */
export interface SubscriptionDisabledData {
  /** The subscription disabled. */
  readonly subscriptionId: string;
  /** `endpoint_failing` (no success for too long) or `endpoint_gone` (it answered 410). */
  readonly reason: 'endpoint_failing' | 'endpoint_gone';
}

/** The data of `operational/attempt-exhausted`: a message's delivery was given up. */
export interface AttemptExhaustedData {
  /** The subscription the message was not delivered to. */
  readonly subscriptionId: string;
  /** The message (`webhook-id`). */
  readonly messageId: string;
  /** The attempts started (in this round: since the publish or the last replay). */
  readonly attempts: number;
  /** `attempts_exhausted` (every attempt of the schedule failed) or `max_age` (too old to retry). */
  readonly reason: 'attempts_exhausted' | 'max_age';
}

/** The data of `operational/attempt-failing`: the third attempt of a message failed. */
export interface AttemptFailingData {
  /** The subscription the message is not getting through to. */
  readonly subscriptionId: string;
  /** The message (`webhook-id`). */
  readonly messageId: string;
  /** The failed attempts: 3. */
  readonly attempts: number;
}

/** The data of `operational/attempt-recovered`: the first success after a failing streak. */
export interface AttemptRecoveredData {
  /** The subscription whose endpoint receives again. */
  readonly subscriptionId: string;
  /** The message delivered. */
  readonly messageId: string;
  /** When the streak's first failed attempt started, ISO 8601 in UTC. */
  readonly failingSince: string;
  /** The messages with a failed attempt in the streak. */
  readonly failedMessages: number;
}

// The service's own catalog of the topic: its kinds alone.
const OPERATIONAL_CATALOG = defineEventCatalog({
  [OPERATIONAL_TOPIC]: operationalEventKinds.map((kind) =>
    kind.slice(OPERATIONAL_TOPIC.length + 1),
  ),
});

/**
 * A catalog that knows the topic `operational` beside the topics of `catalog`: the service's
 * kinds, whatever `catalog` says of the topic. @internal
 */
export function withOperationalTopic(catalog: EventCatalog): EventCatalog {
  const topics = Object.freeze([
    ...catalog.topics.filter((topic) => topic !== OPERATIONAL_TOPIC),
    OPERATIONAL_TOPIC,
  ]);
  return Object.freeze({
    topics,
    eventsOf: (topic: string) =>
      topic === OPERATIONAL_TOPIC ? OPERATIONAL_CATALOG.eventsOf(topic) : catalog.eventsOf(topic),
    check: (pattern: EventPattern) =>
      pattern.topic === OPERATIONAL_TOPIC
        ? OPERATIONAL_CATALOG.check(pattern)
        : catalog.check(pattern),
  });
}

/** Whether a kind is of the topic `operational`. @internal */
export function isOperationalKind(kind: string): boolean {
  return kind.startsWith(`${OPERATIONAL_TOPIC}/`);
}

/**
 * Whether a message body is an operational event's: the default envelope, serialised with its
 * `id` then its `topic` first, so that nothing in the data can pass for it. @internal
 */
export function isOperationalBody(id: string, body: string): boolean {
  return body.startsWith(`{"id":${JSON.stringify(id)},"topic":"${OPERATIONAL_TOPIC}",`);
}

/**
 * The message id of one operational fact: the same for the same fact, so that publishing it again
 * records nothing new (`op_` and the SHA-256 of the fact, base64url). @internal
 */
export function operationalMessageId(
  accountCode: string,
  kind: OperationalEventKind,
  fact: readonly (string | number)[],
): string {
  const digest = encodeBase64Url(sha256(JSON.stringify([accountCode, kind, ...fact])));
  return `op_${digest}`;
}
