/**
 * The random operations of the account-isolation property: what each step does, from which
 * account, with which id, revision or sequence (picked among those that exist when it runs).
 */
import fc from 'fast-check';
import type { SubscriptionChanges } from '../../src/index.js';
import { PROPERTIES, patternArb } from './webhook-arbitraries.js';

export const ACCOUNTS = ['acme', 'globex', 'initech', 'umbrella'] as const;
export const MAX_STEPS = 30;

const eventsArb = fc.uniqueArray(patternArb, { minLength: 1, maxLength: 3 });
const propertyIdsArb = fc.uniqueArray(fc.constantFrom(...PROPERTIES), {
  minLength: 1,
  maxLength: 3,
});
// Indexes into what exists when the step runs: an account, an id, a revision or a sequence.
const pick = fc.nat({ max: 1_000 });

const changesArb: fc.Arbitrary<SubscriptionChanges> = fc.record(
  {
    endpointUrl: fc.nat({ max: 9 }).map((n) => `https://hooks.example.com/changed/${n}`),
    events: eventsArb,
    propertyIds: fc.option(propertyIdsArb, { nil: null }),
    status: fc.constantFrom('enabled' as const, 'disabled' as const),
    disabledReason: fc.constantFrom(
      'requested' as const,
      'endpoint_failing' as const,
      'endpoint_gone' as const,
    ),
  },
  { requiredKeys: [] },
);

const attemptArb = fc.oneof(
  fc.record({ outcome: fc.constant('delivered' as const), status: fc.constant(204) }),
  fc.record({
    outcome: fc.constant('retry' as const),
    status: fc.constantFrom(429, 503),
    nextAttemptAt: fc.nat({ max: 100_000 }),
  }),
  fc.record({
    outcome: fc.constantFrom('failed' as const, 'retry' as const),
    error: fc.record({
      code: fc.constantFrom('timeout', 'connection_failed'),
      message: fc.string(),
    }),
  }),
);

const stepArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('create' as const),
      account: pick,
      events: eventsArb,
      propertyIds: fc.option(propertyIdsArb, { nil: undefined }),
      maxPerAccount: fc.integer({ min: 1, max: 6 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('get' as const),
      account: pick,
      id: pick,
      mine: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('list' as const),
      account: pick,
      offset: fc.nat({ max: 4 }),
      limit: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('update' as const),
      account: pick,
      id: pick,
      mine: fc.boolean(),
      changes: changesArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('delete' as const),
      account: pick,
      id: pick,
      mine: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('rotate' as const),
      account: pick,
      id: pick,
      mine: fc.boolean(),
      graceMs: fc.oneof(fc.constantFrom(0, 1, 1_000, 86_400_000), fc.nat({ max: 10_000 })),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('secrets' as const),
      account: pick,
      id: pick,
      mine: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('changes' as const),
      revision: pick,
      limit: fc.integer({ min: 1, max: 8 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('record' as const),
      account: pick,
      id: pick,
      attempt: attemptArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('attempts' as const),
      account: pick,
      before: pick,
      limit: fc.integer({ min: 1, max: 4 }),
      // Filters as the service passes them: of one subscription, some outcomes, a time range.
      subscription: fc.option(pick, { nil: undefined }),
      outcomes: fc.option(
        fc.uniqueArray(fc.constantFrom('delivered' as const, 'retry' as const, 'failed' as const), {
          minLength: 1,
        }),
        { nil: undefined },
      ),
      since: fc.option(fc.nat({ max: 10_800_000 }), { nil: undefined }),
      until: fc.option(fc.nat({ max: 10_800_000 }), { nil: undefined }),
    }),
  },
);

/** One operation of one account. */
export type Step = typeof stepArb extends fc.Arbitrary<infer S> ? S : never;

/**
 * One run: how many accounts take part, the ids, and the steps, each with how long after the
 * previous one it runs (0 often, so that creation times tie and the order falls to the ids).
 */
export const scenarioArb = fc.record({
  accounts: fc.integer({ min: 2, max: 4 }),
  // Ids for the creates, and one more that nobody ever holds.
  ids: fc.uniqueArray(fc.uuid(), { minLength: MAX_STEPS + 1, maxLength: MAX_STEPS + 1 }),
  steps: fc.array(fc.tuple(stepArb, fc.constantFrom(0, 0, 1, 1_000, 3_600_000)), {
    minLength: 1,
    maxLength: MAX_STEPS,
  }),
});
