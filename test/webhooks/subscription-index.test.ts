// The subscription index: equal to a linear scan (invariant 9), account-scoped, and the specification's examples.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Subscription } from '../../src/index.js';
import { isConfigurationError, SubscriptionIndex } from '../../src/index.js';
import { thrown } from '../support/thrown.js';
import {
  allEvents,
  eventArb,
  ids,
  linearScan,
  subscriptionArb,
} from '../support/webhook-arbitraries.js';

type Command =
  | { op: 'add'; subscription: Subscription }
  | { op: 'replace'; subscription: Subscription }
  | { op: 'remove'; id: string };

// Commands over `ids` subscription ids; `crowd` puts every subscription in one account and topic,
// so that one key holds many subscriptions (arrays grow into sets and shrink again).
function commandArb(idCount: number, crowd = false): fc.Arbitrary<Command> {
  const pool = Array.from({ length: idCount }, (_, i) => `s${i}`);
  const subscription = fc
    .constantFrom(...pool)
    .chain((id) => subscriptionArb(id))
    .map((s): Subscription => {
      if (!crowd) return s;
      const { propertyIds, ...rest } = s;
      const events = [...s.events.map((e) => e.replace(/^[a-z]+/, 'folio')), 'folio/created'];
      // Most without propertyIds, so that the every-property key of folio/created grows large.
      return Number(s.id.slice(1)) % 4 === 0 && propertyIds !== undefined
        ? { ...rest, accountCode: 'acme', events, propertyIds }
        : { ...rest, accountCode: 'acme', events };
    });
  return fc.oneof(
    subscription.map((s) => ({ op: 'add' as const, subscription: s })),
    subscription.map((s) => ({ op: 'replace' as const, subscription: s })),
    fc.constantFrom(...pool, 'unknown').map((id) => ({ op: 'remove' as const, id })),
  );
}

// Applies a command to the index and to a plain map of the expected subscriptions.
function apply(index: SubscriptionIndex, model: Map<string, Subscription>, command: Command): void {
  if (command.op === 'remove') {
    expect(index.remove(command.id)).toBe(model.get(command.id));
    model.delete(command.id);
  } else if (command.op === 'replace') {
    expect(index.replace(command.subscription)).toBe(model.get(command.subscription.id));
    model.set(command.subscription.id, command.subscription);
  } else if (model.has(command.subscription.id)) {
    expect(() => index.add(command.subscription)).toThrow(/held already/);
  } else {
    index.add(command.subscription);
    model.set(command.subscription.id, command.subscription);
  }
}

// What stats() must report for these held subscriptions: nothing unused is kept.
function expectedStats(held: Subscription[]) {
  const patterns = new Set(
    held.flatMap((s) => s.events.flatMap((e) => [e, `${e.split('/')[0]}/*`])),
  );
  return {
    subscriptions: held.length,
    accounts: new Set(held.map((s) => s.accountCode)).size,
    patterns: patterns.size,
    propertyIds: new Set(held.flatMap((s) => s.propertyIds ?? [])).size,
  };
}

describe('SubscriptionIndex', () => {
  it('invariant 9: returns exactly what a linear scan returns, each once, after any interleaving of add, replace and remove', () => {
    fc.assert(
      fc.property(fc.array(commandArb(8), { maxLength: 30 }), (commands) => {
        // Arrange
        const index = new SubscriptionIndex();
        const model = new Map<string, Subscription>();
        for (const command of commands) {
          // Act
          apply(index, model, command);
          // Assert, after every step, for every event of the alphabet
          expect(index.size).toBe(model.size);
          expect(index.stats()).toEqual(expectedStats([...model.values()]));
          for (const event of allEvents) {
            const found = index.match(event);
            expect(new Set(found).size).toBe(found.length);
            expect(ids(found)).toEqual(ids(linearScan(model.values(), event)));
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('invariant 9: equals a linear scan when many subscriptions share one key', () => {
    fc.assert(
      fc.property(
        fc.array(commandArb(40, true), { minLength: 40, maxLength: 120 }),
        fc.shuffledSubarray(
          Array.from({ length: 40 }, (_, i) => `s${i}`),
          { minLength: 40 },
        ),
        (commands, drainOrder) => {
          const index = new SubscriptionIndex();
          const model = new Map<string, Subscription>();
          const check = () => {
            for (const event of allEvents) {
              const found = index.match(event);
              expect(new Set(found).size).toBe(found.length);
              expect(ids(found)).toEqual(ids(linearScan(model.values(), event)));
            }
          };
          for (const command of commands) apply(index, model, command);
          check();
          // Then remove everything, one by one, so that every key shrinks through every size.
          for (const id of drainOrder) {
            apply(index, model, { op: 'remove', id });
            check();
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it('invariant 9: never returns another account’s subscription', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.nat({ max: 50 }).chain((n) => subscriptionArb(`s${n}`)),
          { maxLength: 40 },
        ),
        eventArb,
        (subscriptions, event) => {
          const index = new SubscriptionIndex();
          for (const s of subscriptions) index.replace(s);
          for (const found of index.match(event)) expect(found.accountCode).toBe(event.accountCode);
        },
      ),
    );
  });

  it('removing every subscription leaves nothing to match, whatever the order', () => {
    fc.assert(
      fc.property(
        fc
          .uniqueArray(fc.nat({ max: 30 }), { maxLength: 20 })
          .chain((numbers) =>
            fc.tuple(
              fc.tuple(...numbers.map((n) => subscriptionArb(`s${n}`))),
              fc.shuffledSubarray(numbers, { minLength: numbers.length }),
            ),
          ),
        ([subscriptions, order]) => {
          const index = new SubscriptionIndex();
          for (const s of subscriptions) index.add(s);
          for (const n of order) expect(index.remove(`s${n}`)?.id).toBe(`s${n}`);
          expect(index.stats()).toEqual({
            subscriptions: 0,
            accounts: 0,
            patterns: 0,
            propertyIds: 0,
          });
          for (const event of allEvents) expect(index.match(event)).toEqual([]);
        },
      ),
    );
  });

  it('keeps results exact when one key holds many subscriptions (a short array grown into a set)', () => {
    const index = new SubscriptionIndex();
    const model = new Map<string, Subscription>();
    const make = (i: number): Subscription => ({
      id: `s${i}`,
      accountCode: 'acme',
      endpointUrl: 'https://hooks.example.com/',
      events: ['folio/created'],
      ...(i % 3 === 0 ? { propertyIds: ['BER'] } : {}),
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    for (let i = 0; i < 100; i++) {
      index.add(make(i));
      model.set(`s${i}`, make(i));
    }
    for (let i = 0; i < 100; i += 2) {
      index.remove(`s${i}`);
      model.delete(`s${i}`);
    }
    for (const propertyId of [undefined, 'BER', 'MUC']) {
      const event = { accountCode: 'acme', kind: 'folio/created', propertyId };
      expect(ids(index.match(event))).toEqual(ids(linearScan(model.values(), event)));
    }
  });

  it('holds a subscription that repeats a property id or pattern in a long list once per entry, and forgets it whole', () => {
    const index = new SubscriptionIndex();
    const propertyIds = Array.from({ length: 20 }, (_, i) => `P${i % 10}`);
    const events = [
      ...Array.from({ length: 18 }, (_, i) => `folio/e${i % 9}`),
      'folio/e0',
      'reservation/*',
    ];
    index.add({
      id: 'long',
      accountCode: 'acme',
      endpointUrl: 'https://hooks.example.com/in',
      events,
      propertyIds,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    expect(index.stats()).toEqual({ subscriptions: 1, accounts: 1, patterns: 11, propertyIds: 10 });
    for (const kind of ['folio/e0', 'folio/e8', 'reservation/created']) {
      expect(ids(index.match({ accountCode: 'acme', kind, propertyId: 'P9' }))).toEqual(['long']);
    }
    expect(index.remove('long')?.id).toBe('long');
    expect(index.stats()).toEqual({ subscriptions: 0, accounts: 0, patterns: 0, propertyIds: 0 });
    expect(index.match({ accountCode: 'acme', kind: 'folio/e0', propertyId: 'P0' })).toEqual([]);
  });
});

describe('SubscriptionIndex: the specification’s examples', () => {
  const base = {
    endpointUrl: 'https://hooks.example.com/in',
    createdAt: '2026-01-01T00:00:00.000Z',
  };

  it('reservation/* with folio/created and folio/charges-changed receives every reservation event and only those folio events', () => {
    const index = new SubscriptionIndex();
    index.add({
      ...base,
      id: 'a',
      accountCode: 'acme',
      events: ['reservation/*', 'folio/created', 'folio/charges-changed'],
    });
    const receives = (kind: string) =>
      index.match({ accountCode: 'acme', kind, propertyId: 'BER' }).length === 1;
    expect(receives('reservation/created')).toBe(true);
    expect(receives('reservation/canceled')).toBe(true);
    expect(receives('folio/created')).toBe(true);
    expect(receives('folio/charges-changed')).toBe(true);
    expect(receives('folio/closed')).toBe(false);
    expect(receives('unit/created')).toBe(false);
  });

  it('omitted propertyIds covers a property added later; present propertyIds covers only those', () => {
    const index = new SubscriptionIndex();
    index.add({ ...base, id: 'all', accountCode: 'acme', events: ['folio/created'] });
    index.add({
      ...base,
      id: 'some',
      accountCode: 'acme',
      events: ['folio/created'],
      propertyIds: ['BER'],
    });
    const to = (propertyId: string) =>
      ids(index.match({ accountCode: 'acme', kind: 'folio/created', propertyId }));
    expect(to('BER')).toEqual(['all', 'some']);
    // A property the account opens after both subscriptions were made:
    expect(to('NEW-PROPERTY')).toEqual(['all']);
  });

  it('an account-level event (no property) reaches only subscriptions without propertyIds', () => {
    const index = new SubscriptionIndex();
    index.add({ ...base, id: 'all', accountCode: 'acme', events: ['folio/*'] });
    index.add({
      ...base,
      id: 'some',
      accountCode: 'acme',
      events: ['folio/*'],
      propertyIds: ['BER'],
    });
    expect(ids(index.match({ accountCode: 'acme', kind: 'folio/created' }))).toEqual(['all']);
  });
});

describe('SubscriptionIndex: bad input', () => {
  const valid: Subscription = {
    id: 'x',
    accountCode: 'acme',
    endpointUrl: 'https://hooks.example.com/in',
    events: ['folio/created'],
    createdAt: '2026-01-01T00:00:00.000Z',
  };

  it('matches nothing for a malformed event and never throws', () => {
    const index = new SubscriptionIndex();
    index.add({ ...valid, events: ['folio/*', 'folio/created'] });
    fc.assert(
      fc.property(fc.anything(), fc.anything(), fc.anything(), (accountCode, kind, propertyId) => {
        const event = { accountCode, kind, propertyId } as never;
        expect(() => index.match(event)).not.toThrow();
      }),
    );
    for (const event of [null, undefined, 'folio/created', 42]) {
      expect(index.match(event as never)).toEqual([]);
    }
    for (const kind of ['folio/*', 'folio', '*', 'folio/created/x', 'Folio/created', '']) {
      expect(index.match({ accountCode: 'acme', kind })).toEqual([]);
    }
    expect(index.match({ accountCode: 'acme', kind: 'folio/never-named' })).toHaveLength(1);
  });

  it('refuses a duplicate id and a malformed subscription with a ConfigurationError, changing nothing', () => {
    const index = new SubscriptionIndex();
    index.add({ ...valid });
    const attempts: [Subscription, RegExp][] = [
      [{ ...valid }, /held already/],
      [{ ...valid, id: 'y', events: ['folio'] }, /invalid pattern at events\[0\]/],
      [{ ...valid, id: 'y', events: 'folio/created' } as never, /events, an array of strings/],
      [{ ...valid, id: '' }, /non-empty string id/],
      [{ ...valid, id: 'y', accountCode: 7 } as never, /string accountCode/],
      [{ ...valid, id: 'y', propertyIds: [1] } as never, /propertyIds/],
      [null as never, /The subscription is not an object\./],
    ];
    for (const [subscription, message] of attempts) {
      const caught = thrown(() => index.add(subscription));
      expect(isConfigurationError(caught)).toBe(true);
      expect((caught as Error).message).toMatch(message);
    }
    expect(() => index.replace({ ...valid, events: ['x'] })).toThrow(/invalid pattern/);
    expect(index.size).toBe(1);
    expect(index.match({ accountCode: 'acme', kind: 'folio/created' })).toHaveLength(1);
  });

  it('refuses a subscription whose fields or elements are getters, which could drift from its keys, changing nothing', () => {
    // Arrange: getters that answer folio/created while the index checks and keys the subscription,
    // and folio/closed afterwards.
    const drifting = (readsBefore: number) => {
      let reads = 0;
      return () => (reads++ < readsBefore ? ['folio/created'] : ['folio/closed']);
    };
    const withGetter = (readsBefore: number): Subscription => {
      const subscription = { ...valid, id: `g${readsBefore}` } as Subscription;
      Object.defineProperty(subscription, 'events', {
        get: drifting(readsBefore),
        enumerable: true,
      });
      return subscription;
    };
    const elementGetter = (): Subscription => {
      const events: string[] = [];
      let reads = 0;
      Object.defineProperty(events, 0, {
        get: () => (reads++ < 3 ? 'folio/created' : 'folio/closed'),
        enumerable: true,
      });
      return { ...valid, id: 'element', events };
    };
    const index = new SubscriptionIndex();
    for (const subscription of [...[2, 3, 4, 5, 6, 8].map(withGetter), elementGetter()]) {
      // Act
      const caught = thrown(() => index.add(subscription));
      // Assert
      expect(isConfigurationError(caught) && caught.code).toBe('invalid_subscription');
      expect(index.size).toBe(0);
      expect(index.stats()).toEqual({ subscriptions: 0, accounts: 0, patterns: 0, propertyIds: 0 });
    }
    expect(() => index.replace(withGetter(8))).toThrow(/plain data/);
    expect(index.size).toBe(0);
  });

  it('freezes what it holds, so that a held subscription cannot drift from its keys', () => {
    const index = new SubscriptionIndex();
    const subscription = { ...valid, events: ['folio/created'], propertyIds: ['BER'] };
    index.add(subscription);
    expect(Object.isFrozen(index.get('x'))).toBe(true);
    expect(Object.isFrozen(subscription.events)).toBe(true);
    expect(Object.isFrozen(subscription.propertyIds)).toBe(true);
    expect(index.get('nope')).toBeUndefined();
    expect(index.remove('nope')).toBeUndefined();
  });
});
