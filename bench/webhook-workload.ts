/**
 * The seeded webhook workload: 50 topics of 20 events, subscriptions with 1 to 5 patterns (20% of
 * them `<topic>/*`), 30% with 1 to 3 of 500 property ids, spread over 1,000 accounts; and random
 * events (10% of them account-level, without a property).
 */
import type { Subscription, SubscriptionEvent } from 'api-conventions';

export const TOPICS = 50;
export const EVENTS_PER_TOPIC = 20;
export const PROPERTIES = 500;
export const ACCOUNTS = 1_000;

/** mulberry32: a small, fast, seeded generator; the same seed gives the same workload. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const int = (random: () => number, n: number): number => Math.floor(random() * n);

// n distinct values drawn by `draw`.
function distinct<T>(n: number, draw: () => T): T[] {
  const values = new Set<T>();
  while (values.size < n) values.add(draw());
  return [...values];
}

/** `count` subscriptions over `accounts` accounts (1,000 unless given). */
export function makeSubscriptions(
  count: number,
  random: () => number,
  accounts = ACCOUNTS,
): Subscription[] {
  const subscriptions: Subscription[] = [];
  for (let i = 0; i < count; i++) {
    const events = distinct(1 + int(random, 5), () =>
      random() < 0.2
        ? `t${int(random, TOPICS)}/*`
        : `t${int(random, TOPICS)}/e${int(random, EVENTS_PER_TOPIC)}`,
    );
    const base = {
      id: `s${i}`,
      accountCode: `a${int(random, accounts)}`,
      endpointUrl: `https://hooks.example.com/${i}`,
      events,
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    subscriptions.push(
      random() < 0.3
        ? {
            ...base,
            propertyIds: distinct(1 + int(random, 3), () => `p${int(random, PROPERTIES)}`),
          }
        : base,
    );
  }
  return subscriptions;
}

export function makeEvents(count: number, random: () => number): SubscriptionEvent[] {
  const events: SubscriptionEvent[] = [];
  for (let i = 0; i < count; i++) {
    const accountCode = `a${int(random, ACCOUNTS)}`;
    const kind = `t${int(random, TOPICS)}/e${int(random, EVENTS_PER_TOPIC)}`;
    events.push(
      random() < 0.1
        ? { accountCode, kind }
        : { accountCode, kind, propertyId: `p${int(random, PROPERTIES)}` },
    );
  }
  return events;
}
