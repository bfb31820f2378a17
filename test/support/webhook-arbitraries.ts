/**
 * Arbitraries for webhook tests over small alphabets (three accounts, two topics, three events,
 * three properties) so that random subscriptions and events collide often.
 */
import fc from 'fast-check';
import type { Subscription, SubscriptionEvent } from '../../src/index.js';

export const ACCOUNTS = ['acme', 'globex', 'initech'] as const;
export const TOPICS = ['reservation', 'folio'] as const;
export const EVENTS = ['created', 'changed', 'charges-changed'] as const;
export const PROPERTIES = ['BER', 'MUC', 'LON'] as const;

export const kindArb = fc
  .tuple(fc.constantFrom(...TOPICS), fc.constantFrom(...EVENTS))
  .map(([topic, event]) => `${topic}/${event}`);

// Kinds and wildcards, with duplicates and overlaps (folio/* beside folio/created) on purpose.
export const patternArb = fc.oneof(
  kindArb,
  fc.constantFrom(...TOPICS).map((topic) => `${topic}/*`),
);

export const subscriptionArb = (id: string): fc.Arbitrary<Subscription> =>
  fc
    .record(
      {
        accountCode: fc.constantFrom(...ACCOUNTS),
        events: fc.array(patternArb, { minLength: 1, maxLength: 4 }),
        propertyIds: fc.array(fc.constantFrom(...PROPERTIES), { maxLength: 3 }),
      },
      { requiredKeys: ['accountCode', 'events'] },
    )
    .map((fields) => ({
      id,
      endpointUrl: `https://hooks.example.com/${id}`,
      createdAt: '2026-01-01T00:00:00.000Z',
      ...fields,
    }));

export const eventArb: fc.Arbitrary<SubscriptionEvent> = fc.record(
  {
    accountCode: fc.constantFrom(...ACCOUNTS),
    kind: kindArb,
    propertyId: fc.constantFrom(...PROPERTIES),
  },
  { requiredKeys: ['accountCode', 'kind'] },
);

/** Every event of the small alphabets: each account, kind, and property or none. */
export const allEvents: SubscriptionEvent[] = ACCOUNTS.flatMap((accountCode) =>
  TOPICS.flatMap((topic) =>
    EVENTS.flatMap((event) =>
      [undefined, ...PROPERTIES].map((propertyId) =>
        propertyId === undefined
          ? { accountCode, kind: `${topic}/${event}` }
          : { accountCode, kind: `${topic}/${event}`, propertyId },
      ),
    ),
  ),
);

/** The oracle: a straightforward scan of every subscription, written from the specification. */
export function linearScan(
  subscriptions: Iterable<Subscription>,
  event: SubscriptionEvent,
): Subscription[] {
  const topic = event.kind.split('/')[0];
  return [...subscriptions].filter(
    (s) =>
      s.accountCode === event.accountCode &&
      s.events.some((p) => p === event.kind || p === `${topic}/*`) &&
      (s.propertyIds === undefined ||
        (event.propertyId !== undefined && s.propertyIds.includes(event.propertyId))),
  );
}

export const ids = (subscriptions: readonly Subscription[]): string[] =>
  subscriptions.map((s) => s.id).sort();
