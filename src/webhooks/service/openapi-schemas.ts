/**
 * The parts of the webhook service's OpenAPI document that no route owns: the shared parameters
 * and the component schemas, made from the limits and codes the service's validators apply.
 * @module
 */
import type { DeliveryFailure } from '../delivery/attempt.js';
import type { EventCatalog } from '../events/event-catalog.js';
import { MAX_EVENT_PART_LENGTH, MAX_EVENT_PATTERN_LENGTH } from '../events/event-kind.js';
import { withOperationalTopic } from '../events/operational-events.js';
import { DEFAULT_MAX_ENDPOINT_URL_LENGTH } from '../subscriptions/endpoint-url.js';
import type { DisabledReason } from '../subscriptions/subscription.js';
import { signatureTypes } from '../subscriptions/subscription.js';
import { subscriptionFieldLimits } from '../subscriptions/subscription-fields.js';
import { subscriptionRequestDefaults } from '../subscriptions/subscription-request.js';
import { ATTEMPT_OUTCOMES } from './attempts.js';
import { SERVICE_CURSORS, SERVICE_PAGES } from './options.js';
import { MAX_ID_LENGTH } from './routes.js';

/** What the document is made from: the options as the service reads them. @internal */
export interface DocumentSettings {
  readonly basePath: string;
  readonly catalog?: EventCatalog | undefined;
  readonly endpointUrl?: { readonly maxLength?: number | undefined } | undefined;
  readonly maxBodyBytes: number;
  readonly maxSubscriptionsPerAccount: number;
  readonly limiter?: unknown;
}

// Each listed from its type, so that a value added to the type must be added here.
const DISABLED_REASONS = Object.keys({
  requested: true,
  endpoint_failing: true,
  endpoint_gone: true,
} satisfies Record<DisabledReason, true>);
const DELIVERY_FAILURES = Object.keys({
  attempts_exhausted: true,
  max_age: true,
  forbidden_address: true,
  no_secret: true,
  secret_unreadable: true,
  invalid_job: true,
  gone: true,
} satisfies Record<DeliveryFailure, true>);

/** A reference to one of the document's component schemas. @internal */
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const DATE_TIME = { type: 'string', format: 'date-time' };
const COUNT = { type: 'integer', minimum: 0 };

/** The parameters routes share, by name. @internal */
export function parameters(): Record<string, unknown> {
  const { sizes: pageSizes, maxPageNumber } = SERVICE_PAGES;
  const { sizes: limits, maxCursorLength } = SERVICE_CURSORS;
  const query = (name: string, description: string, schema: unknown) => ({
    name,
    in: 'query',
    required: false,
    description,
    schema,
  });
  return {
    id: {
      name: 'id',
      in: 'path',
      required: true,
      description: 'The id, one percent-encoded segment; a longer one is no id (404).',
      schema: { type: 'string', minLength: 1, maxLength: MAX_ID_LENGTH },
    },
    pageNumber: query('pageNumber', 'The page, from 1', {
      type: 'integer',
      minimum: 1,
      maximum: maxPageNumber,
      default: 1,
    }),
    pageSize: query('pageSize', 'Items per page (business data)', {
      type: 'integer',
      minimum: 1,
      maximum: pageSizes.maxSize,
      default: pageSizes.defaultSize,
    }),
    limit: query('limit', 'Items per page (analytical data)', {
      type: 'integer',
      minimum: 1,
      maximum: limits.maxSize,
      default: limits.defaultSize,
    }),
    cursor: query(
      'cursor',
      'The nextCursor of the previous page, sent as received: bound to the filters, the listing and the account it was issued for',
      { type: 'string', minLength: 1, maxLength: maxCursorLength },
    ),
    outcome: query('outcome', 'Outcomes, separated by commas (outcome=failed,retry)', {
      type: 'string',
      pattern: `^(${ATTEMPT_OUTCOMES.join('|')})(,(${ATTEMPT_OUTCOMES.join('|')}))*$`,
    }),
    since: query('since', 'Attempts that started at or after this RFC 3339 date-time', DATE_TIME),
    until: query('until', 'Attempts that started before this RFC 3339 date-time', DATE_TIME),
  };
}

/** The `events` item: any well-formed pattern, or the catalog's (and the service's own topic). */
function eventPattern(catalog: EventCatalog | undefined): Record<string, unknown> {
  const part = `[a-z0-9](?:[a-z0-9-]{0,${MAX_EVENT_PART_LENGTH - 2}}[a-z0-9])?`;
  if (catalog === undefined) {
    return {
      type: 'string',
      maxLength: MAX_EVENT_PATTERN_LENGTH,
      description: '<topic>/<event> or <topic>/*',
    };
  }
  const known = withOperationalTopic(catalog);
  const patterns: string[] = [];
  const anyEvent: string[] = [];
  for (const topic of known.topics) {
    patterns.push(`${topic}/*`);
    const events = known.eventsOf(topic);
    if (events === '*') anyEvent.push(topic);
    else if (events !== undefined) patterns.push(...events.map((event) => `${topic}/${event}`));
  }
  return anyEvent.length === 0
    ? { type: 'string', enum: patterns }
    : {
        type: 'string',
        anyOf: [{ enum: patterns }, { pattern: `^(${anyEvent.join('|')})/${part}$` }],
      };
}

/** The component schemas. @internal */
export function schemas(settings: DocumentSettings): Record<string, unknown> {
  const limits = subscriptionFieldLimits;
  const { maxEvents, maxPropertyIds, maxPropertyIdLength } = subscriptionRequestDefaults;
  const endpointUrl = {
    type: 'string',
    format: 'uri',
    maxLength: settings.endpointUrl?.maxLength ?? DEFAULT_MAX_ENDPOINT_URL_LENGTH,
  };
  const events = {
    type: 'array',
    minItems: 1,
    maxItems: maxEvents,
    uniqueItems: true,
    items: eventPattern(settings.catalog),
  };
  const propertyIds = {
    type: 'array',
    minItems: 1,
    maxItems: maxPropertyIds,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: maxPropertyIdLength },
  };
  const settingsFields = {
    description: { type: 'string', maxLength: limits.maxDescriptionLength },
    rateLimit: {
      type: 'integer',
      minimum: limits.minRateLimit,
      maximum: limits.maxRateLimit,
      description: 'Deliveries per second',
    },
    headers: {
      type: 'object',
      maxProperties: limits.maxHeaders,
      additionalProperties: { type: 'string' },
      description: `Sent with every delivery; at most ${limits.maxHeaderBytes} bytes of names and values`,
    },
    metadata: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: `Never sent; at most ${limits.maxMetadataBytes} bytes (UTF-8) of keys and values`,
    },
  };
  const signatureType = { enum: [...signatureTypes] };
  const publicKey = { type: 'string', pattern: '^whpk_' };
  const secret = { type: 'string', pattern: '^whsec_' };
  const view = {
    id: { type: 'string' },
    endpointUrl,
    events,
    propertyIds,
    ...settingsFields,
    signatureType,
    publicKey,
    status: { enum: ['enabled', 'disabled'] },
    disabledReason: { enum: DISABLED_REASONS },
    disabledAt: DATE_TIME,
    createdAt: DATE_TIME,
    updatedAt: DATE_TIME,
  };
  const required = [
    'id',
    'endpointUrl',
    'events',
    'signatureType',
    'status',
    'createdAt',
    'updatedAt',
  ];
  const object = (properties: Record<string, unknown>, needed: readonly string[] = []) => ({
    type: 'object',
    properties,
    ...(needed.length === 0 ? {} : { required: needed }),
    additionalProperties: false,
  });
  const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });
  const links = object(
    {
      first: { type: 'string' },
      prev: { type: 'string' },
      next: { type: 'string' },
      last: { type: 'string' },
    },
    ['first'],
  );
  const { sizes: pageSizes } = SERVICE_PAGES;
  const { sizes: attemptSizes } = SERVICE_CURSORS;
  const replayCounts = {
    deliveries: COUNT,
    queued: COUNT,
    paced: COUNT,
    pacedUntil: DATE_TIME,
  };
  return {
    Subscription: object(view, required),
    SubscriptionCreated: object({ ...view, secret }, required),
    SubscriptionChanged: object({ ...view, secret, previousSecretsExpireAt: DATE_TIME }, required),
    Rotation: {
      oneOf: [
        object({ secret, previousSecretsExpireAt: DATE_TIME }, [
          'secret',
          'previousSecretsExpireAt',
        ]),
        object({ publicKey, previousSecretsExpireAt: DATE_TIME }, [
          'publicKey',
          'previousSecretsExpireAt',
        ]),
      ],
    },
    SubscriptionRequest: {
      ...object({ endpointUrl, events, propertyIds, ...settingsFields, signatureType }, [
        'endpointUrl',
        'events',
      ]),
      description: `At most ${settings.maxSubscriptionsPerAccount} subscriptions an account.`,
    },
    SubscriptionChange: {
      ...object({
        endpointUrl,
        events,
        propertyIds: nullable(propertyIds),
        status: { enum: ['enabled', 'disabled'] },
        description: nullable(settingsFields.description),
        rateLimit: nullable(settingsFields.rateLimit),
        headers: nullable(settingsFields.headers),
        metadata: nullable(settingsFields.metadata),
        signatureType,
      }),
      minProperties: 1,
    },
    ReplayRequest: object({ since: DATE_TIME }, ['since']),
    SubscriptionPage: object(
      {
        items: { type: 'array', maxItems: pageSizes.maxSize, items: ref('Subscription') },
        pageNumber: { type: 'integer', minimum: 1 },
        pageSize: { type: 'integer', minimum: 1, maximum: pageSizes.maxSize },
        totalItems: COUNT,
        endOfData: { type: 'boolean' },
        links,
      },
      ['items', 'pageNumber', 'pageSize', 'totalItems', 'endOfData', 'links'],
    ),
    DeliveryAttempt: object(
      {
        sequence: { type: 'integer', minimum: 1 },
        id: { type: 'string' },
        subscriptionId: { type: 'string' },
        endpointUrl: { type: 'string' },
        attempt: { type: 'integer', minimum: 1 },
        replay: { type: 'integer', minimum: 1 },
        at: { type: 'integer', description: 'When it started, in ms' },
        durationMs: { type: 'number', minimum: 0 },
        status: { type: 'integer' },
        error: object({ code: { type: 'string' }, message: { type: 'string' } }, [
          'code',
          'message',
        ]),
        outcome: { enum: ATTEMPT_OUTCOMES },
        nextAttemptAt: { type: 'integer' },
        reason: { enum: DELIVERY_FAILURES },
      },
      ['sequence', 'id', 'subscriptionId', 'endpointUrl', 'attempt', 'at', 'outcome'],
    ),
    AttemptPage: object(
      {
        items: { type: 'array', maxItems: attemptSizes.maxSize, items: ref('DeliveryAttempt') },
        limit: { type: 'integer', minimum: 1, maximum: attemptSizes.maxSize },
        nextCursor: { type: ['string', 'null'] },
        endOfData: { type: 'boolean' },
        links,
      },
      ['items', 'limit', 'nextCursor', 'endOfData', 'links'],
    ),
    SubscriptionReplay: object(
      { subscriptionId: { type: 'string' }, since: DATE_TIME, ...replayCounts },
      ['subscriptionId', 'since', 'deliveries', 'queued', 'paced'],
    ),
    MessageReplay: object({ messageId: { type: 'string' }, ...replayCounts }, [
      'messageId',
      'deliveries',
      'queued',
      'paced',
    ]),
  };
}
