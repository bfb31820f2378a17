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

/** The header names a subscription may not set (any case): the documented list, and `webhook-*`. */
export const FORBIDDEN_HEADERS = [
  'host',
  'content-length',
  'content-type',
  'connection',
  'transfer-encoding',
  'keep-alive',
  'proxy-connection',
  'te',
  'upgrade',
  'expect',
] as const;

const forbidden = (name: string): boolean =>
  (FORBIDDEN_HEADERS as readonly string[]).includes(name.toLowerCase()) ||
  name.toLowerCase().startsWith('webhook-');

// RFC 9110: token = 1*tchar; field-value visible ASCII, spaces and tabs inside only.
const headerNameArb = fc.stringMatching(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,24}$/);
const headerValueArb = fc.stringMatching(/^(?:[!-~](?:[ \t!-~]{0,60}[!-~])?)?$/);

/**
 * Valid delivery headers of a subscription: at most 20, names tokens unique in any case and not
 * forbidden, values visible ASCII (under 4 KiB together by construction).
 */
export const validHeaders: fc.Arbitrary<Record<string, string>> = fc
  .uniqueArray(
    fc.tuple(
      headerNameArb.filter((name) => !forbidden(name)),
      headerValueArb,
    ),
    {
      selector: ([name]) => name.toLowerCase(),
      maxLength: 20,
    },
  )
  .map((entries) => Object.fromEntries(entries));

/** A forbidden header name in any mix of cases. */
export const forbiddenHeaderName: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(
      fc.constantFrom(...FORBIDDEN_HEADERS),
      headerNameArb.map((tail) => `webhook-${tail}`),
    ),
    fc.infiniteStream(fc.boolean()),
  )
  .map(([name, upper]) =>
    [...name].map((c) => (upper.next().value ? c.toUpperCase() : c.toLowerCase())).join(''),
  );
