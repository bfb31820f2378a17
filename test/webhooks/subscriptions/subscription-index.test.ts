// The subscription index: equal to a linear scan (invariant 9), account-scoped, and the specification's examples.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Subscription, SubscriptionEvent } from '../../../src/index.js';
import { isConfigurationError, SubscriptionIndex } from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';
import {
  allEvents,
  eventArb,
  ids,
  linearScan,
  subscriptionArb,
} from '../../support/webhook-arbitraries.js';

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
    expect(() => index.add(command.subscription)).toThrow(
      `subscription.id must be an id no held subscription has (change a held one with replace()), got ${JSON.stringify(command.subscription.id)}.`,
    );
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
      fc.property(fc.array(commandArb(8), { maxLength: 30, size: 'max' }), (commands) => {
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
    const PATTERN =
      'must be a well-formed pattern, <topic>/<event> or <topic>/* (validate requests with validateSubscriptionRequest())';
    const attempts: [Subscription, string, string][] = [
      [
        { ...valid },
        'duplicate_subscription_id',
        'subscription.id must be an id no held subscription has (change a held one with replace()), got "x".',
      ],
      [
        { ...valid, id: 'y', events: ['folio'] },
        'invalid_subscription',
        `subscription "y".events[0] ${PATTERN}, got "folio".`,
      ],
      [
        { ...valid, id: 'y', events: 'folio/created' } as never,
        'invalid_subscription',
        'subscription "y".events must be an array of strings, got "folio/created".',
      ],
      [
        { ...valid, id: 'y', events: ['folio/created', Number.NaN] } as never,
        'invalid_subscription',
        'subscription "y".events must be an array of strings, got an array.',
      ],
      [
        { ...valid, id: '' },
        'invalid_subscription',
        'subscription.id must be a non-empty string, got "".',
      ],
      [
        { ...valid, id: ['y'] } as never,
        'invalid_subscription',
        'subscription.id must be a non-empty string, got an array.',
      ],
      [
        { ...valid, id: 'y', accountCode: 7 } as never,
        'invalid_subscription',
        'subscription "y".accountCode must be a string, got 7.',
      ],
      [
        { ...valid, id: 'y', propertyIds: [1] } as never,
        'invalid_subscription',
        'subscription "y".propertyIds must be an array of strings, or left out, got an array.',
      ],
      [
        null as never,
        'invalid_subscription',
        'subscription must be a plain object { id, accountCode, events, propertyIds? }, not an array or a Set, got null.',
      ],
      [
        'x' as never,
        'invalid_subscription',
        'subscription must be a plain object { id, accountCode, events, propertyIds? }, not an array or a Set, got "x".',
      ],
      [
        Object.defineProperty({ ...valid, id: 'y' }, 'accountCode', {
          enumerable: true,
          get() {
            throw new Error('boom');
          },
        }),
        'invalid_subscription',
        'subscription must be a plain object holding its id, accountCode, events and propertyIds (and their elements) as data, not getters, got an object.',
      ],
    ];
    for (const [subscription, code, message] of attempts) {
      const caught = thrown(() => index.add(subscription));
      expect(isConfigurationError(caught) && caught.code).toBe(code);
      expect((caught as Error).message).toBe(message);
    }
    expect(() => index.replace({ ...valid, events: ['x'] })).toThrow(
      `subscription "x".events[0] ${PATTERN}, got "x".`,
    );
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
    expect(() => index.replace(withGetter(8))).toThrow(
      'subscription "g8" must be a plain object holding its id, accountCode, events and propertyIds (and their elements) as data, not getters, got an object.',
    );
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

describe('SubscriptionIndex: a subscription with very many events', () => {
  it('adds, matches and removes a subscription of 100,000 events in time linear in their number', () => {
    // Arrange: 100,000 kinds of distinct topics and two wildcards. Comparing every event with the
    // others is billions of comparisons, minutes of work, far past this test's timeout of 60
    // seconds; one pass over them takes a second or two even on a busy machine.
    const n = 100_000;
    const events = [...Array.from({ length: n }, (_, i) => `t${i}/e`), 'zz/*', 't7/*'];
    const subscription: Subscription = {
      id: 'many',
      accountCode: 'acme',
      endpointUrl: 'https://hooks.example.com/in',
      events,
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    const index = new SubscriptionIndex();
    // Act and assert
    index.add(subscription);
    expect(index.stats()).toEqual({
      subscriptions: 1,
      accounts: 1,
      patterns: 2 * n + 1,
      propertyIds: 0,
    });
    for (const kind of ['t0/e', `t${n - 1}/e`, 'zz/anything', 't7/e', 't7/other']) {
      expect(ids(index.match({ accountCode: 'acme', kind }))).toEqual(['many']);
    }
    expect(index.match({ accountCode: 'acme', kind: 't0/other' })).toEqual([]);
    expect(index.remove('many')?.id).toBe('many');
    expect(index.stats()).toEqual({ subscriptions: 0, accounts: 0, patterns: 0, propertyIds: 0 });
  }, 60_000);
});

describe('SubscriptionIndex: a refused add or replace changes nothing', () => {
  const valid: Subscription = {
    id: 'y',
    accountCode: 'acme',
    endpointUrl: 'https://hooks.example.com/in',
    events: ['folio/created'],
    createdAt: '2026-01-01T00:00:00.000Z',
  };

  it('refuses a subscription that is an array or a Set carrying the fields, and then adds the same pattern', () => {
    // Arrange: containers like the ones the index keeps several subscriptions of one key in.
    const index = new SubscriptionIndex();
    index.add({ ...valid, id: 'held' });
    const fields = { ...valid, id: 'x', events: ['folio/created'] };
    for (const impostor of [Object.assign([], fields), Object.assign(new Set(), fields)]) {
      // Act
      const caught = thrown(() => index.add(impostor as never));
      // Assert
      expect(isConfigurationError(caught) && caught.code).toBe('invalid_subscription');
      expect((caught as Error).message).toBe(
        `subscription must be a plain object { id, accountCode, events, propertyIds? }, not an array or a Set, got ${Array.isArray(impostor) ? 'an array' : 'an object'}.`,
      );
      expect(() => index.replace(impostor as never)).toThrow((caught as Error).message);
    }
    expect(index.get('x')).toBeUndefined();
    index.add({ ...valid });
    expect(ids(index.match({ accountCode: 'acme', kind: 'folio/created' }))).toEqual(['held', 'y']);
    expect(index.stats()).toEqual({ subscriptions: 2, accounts: 1, patterns: 2, propertyIds: 0 });
  });

  // Subscriptions the index must refuse, each a variation of a valid one.
  const refusedArb = fc
    .tuple(subscriptionArb('bad'), fc.nat({ max: 9 }), fc.constantFrom(...['x', 'folio', '*', '']))
    .map(([s, variant, junk]): unknown => {
      switch (variant) {
        case 0:
          return Object.assign([], s);
        case 1:
          return Object.assign(new Set(), s);
        case 2:
          return { ...s, events: [...s.events, junk] };
        case 3:
          return { ...s, events: [...s.events, 5] };
        case 4:
          return { ...s, id: '' };
        case 5:
          return { ...s, accountCode: null };
        case 6:
          return { ...s, propertyIds: ['BER', 7] };
        case 7: {
          const withGetter = { ...s };
          Object.defineProperty(withGetter, 'events', { get: () => s.events, enumerable: true });
          return withGetter;
        }
        case 8:
          return { ...s, events: 'folio/created' };
        default:
          return null;
      }
    });

  it('leaves size, stats, get and every match as they were, and the index usable, after any refused add or replace', () => {
    fc.assert(
      fc.property(
        fc
          .uniqueArray(fc.nat({ max: 20 }), { maxLength: 12 })
          .chain((numbers) => fc.tuple(...numbers.map((n) => subscriptionArb(`s${n}`)))),
        refusedArb,
        fc.boolean(),
        subscriptionArb('after'),
        (held, refused, viaReplace, after) => {
          // Arrange
          const index = new SubscriptionIndex();
          for (const s of held) index.add(s);
          const before = {
            size: index.size,
            stats: index.stats(),
            matches: allEvents.map((event) => ids(index.match(event))),
          };
          // Act
          const caught = thrown(() =>
            viaReplace ? index.replace(refused as never) : index.add(refused as never),
          );
          // Assert: refused, and nothing changed
          expect(isConfigurationError(caught) && caught.code).toBe('invalid_subscription');
          expect(index.size).toBe(before.size);
          expect(index.stats()).toEqual(before.stats);
          expect(index.get('bad')).toBeUndefined();
          expect(allEvents.map((event) => ids(index.match(event)))).toEqual(before.matches);
          // And the index keeps working: a valid add is matched as a linear scan says.
          index.add(after);
          for (const event of allEvents) {
            expect(ids(index.match(event))).toEqual(ids(linearScan([...held, after], event)));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

// A model-based test: one index driven by random commands beside a plain array of subscriptions
// and a matcher written from the specification's rules. Names of topics and events are lower case
// only (docs/webhooks.md), so an upper-case kind is malformed and matches nothing; account codes and
// property ids are opaque strings compared exactly, so `ACME` and `acme`, `BER` and `ber` differ.
// The index promises no order for match results: they are compared as sorted ids, each id once.
describe('SubscriptionIndex: model-based, against a plain array and the specification’s matcher', () => {
  const ID_POOL = ['s0', 's1', 's2', 's3', 's4', 's5'] as const;
  const ACCOUNT_POOL = ['acme', 'ACME', 'globex'] as const;
  const TOPIC_POOL = ['reservation', 'folio', 'unit'] as const;
  const EVENT_POOL = ['created', 'charges-changed', 'closed'] as const;
  const PROPERTY_POOL = ['BER', 'ber', 'MUC', 'LON'] as const;
  const KINDS = TOPIC_POOL.flatMap((topic) => EVENT_POOL.map((event) => `${topic}/${event}`));
  const PATTERNS = [...KINDS, ...TOPIC_POOL.map((topic) => `${topic}/*`)];
  // Kinds an event may carry: every kind of the pools, and malformed ones that match nothing.
  const EVENT_KINDS = [...KINDS, 'Folio/created', 'folio/Created', 'RESERVATION/CLOSED', 'folio/*'];
  const EXTRA_KINDS = ['unit/never-named', 'folio', '', ' folio/created', 'folio/created/x', '*'];
  const EXTRA_ACCOUNTS = ['', 'Acme', '__proto__', 'initech'];
  const EXTRA_PROPERTIES = ['', 'NEW', 'constructor', 'ber '];

  interface Held {
    // The object handed to the index, which it freezes and returns from get, match and remove.
    readonly given: Subscription;
    // What was handed over, copied: the model's own data, never shared with the index.
    readonly accountCode: string;
    readonly events: readonly string[];
    readonly propertyIds: readonly string[] | undefined;
  }
  type Model = { held: Held[] };
  type Real = { index: SubscriptionIndex };

  const KIND_SYNTAX = /^[a-z0-9]+(-[a-z0-9]+)*\/[a-z0-9]+(-[a-z0-9]+)*$/;

  // The specification's rules, one by one, as a scan of every held subscription.
  function modelMatch(model: Model, event: SubscriptionEvent): string[] {
    // An event has one kind, `<topic>/<event>`; anything else (a pattern, upper case) is malformed.
    if (!KIND_SYNTAX.test(event.kind)) return [];
    const topic = event.kind.slice(0, event.kind.indexOf('/'));
    return model.held
      .filter(
        (s) =>
          // Only the subscription's own account.
          s.accountCode === event.accountCode &&
          // `<topic>/<event>` selects itself; `<topic>/*` every event of the topic.
          s.events.some((pattern) => pattern === event.kind || pattern === `${topic}/*`) &&
          // Omitted propertyIds: every property (and account-level events); given: only those.
          (s.propertyIds === undefined ||
            (event.propertyId !== undefined && s.propertyIds.includes(event.propertyId))),
      )
      .map((s) => s.given.id)
      .sort();
  }

  const sweep: SubscriptionEvent[] = ACCOUNT_POOL.flatMap((accountCode) =>
    EVENT_KINDS.flatMap((kind) =>
      [undefined, ...PROPERTY_POOL].map((propertyId) =>
        propertyId === undefined ? { accountCode, kind } : { accountCode, kind, propertyId },
      ),
    ),
  );

  // After every command: size, get, and every event of the pools, exactly as the model says.
  function expectSameAsModel(model: Model, index: SubscriptionIndex): void {
    expect(index.size).toBe(model.held.length);
    for (const id of [...ID_POOL, 'missing']) {
      expect(index.get(id)).toBe(model.held.find((s) => s.given.id === id)?.given);
    }
    // Nothing that no held subscription uses is kept.
    const events = model.held.flatMap((s) => s.events);
    expect(index.stats()).toEqual({
      subscriptions: model.held.length,
      accounts: new Set(model.held.map((s) => s.accountCode)).size,
      patterns: new Set([...events, ...events.map((e) => `${e.slice(0, e.indexOf('/'))}/*`)]).size,
      propertyIds: new Set(model.held.flatMap((s) => s.propertyIds ?? [])).size,
    });
    // One assertion for the whole sweep, listing only the events that disagree.
    expect(sweep.flatMap((event) => disagreement(model, index, event))).toEqual([]);
  }

  // The event with what the index and the model answer, when they differ: matched ids (sorted,
  // each once) and the held objects themselves.
  function disagreement(model: Model, index: SubscriptionIndex, event: SubscriptionEvent) {
    const found = index.match(event);
    const fromIndex = found.map((s) => s.id).sort();
    const fromModel = modelMatch(model, event);
    const same =
      fromIndex.length === fromModel.length &&
      fromIndex.every((id, i) => id === fromModel[i]) &&
      found.every((s) => s === index.get(s.id));
    return same ? [] : [{ event, index: fromIndex, model: fromModel }];
  }

  const copy = (s: Subscription): Held => ({
    given: s,
    accountCode: s.accountCode,
    events: [...s.events],
    propertyIds: s.propertyIds === undefined ? undefined : [...s.propertyIds],
  });

  const patternsArb = fc.oneof(
    fc.array(fc.constantFrom(...PATTERNS), { minLength: 1, maxLength: 4 }),
    // A wildcard beside a kind it covers, repeated.
    fc
      .constantFrom(
        ['reservation/*', 'reservation/created'],
        ['reservation/created', 'reservation/*', 'reservation/created'],
        ['folio/created', 'folio/*', 'folio/*', 'unit/closed'],
      )
      .map((events) => [...events]),
    // Long lists (over the 16 at which the index changes how it removes repeats), with repeats.
    fc.array(fc.constantFrom(...PATTERNS), { minLength: 17, maxLength: 40 }),
  );
  const propertyIdsArb = fc.oneof(
    fc.constant(undefined),
    fc.array(fc.constantFrom(...PROPERTY_POOL), { maxLength: 3 }),
    fc.array(fc.constantFrom(...PROPERTY_POOL), { minLength: 17, maxLength: 30 }),
  );
  const subscriptionArb = fc
    .record({
      id: fc.constantFrom(...ID_POOL),
      accountCode: fc.constantFrom(...ACCOUNT_POOL),
      events: patternsArb,
      propertyIds: propertyIdsArb,
    })
    .map(
      ({ propertyIds, ...fields }): Subscription => ({
        ...fields,
        endpointUrl: `https://hooks.example.com/${fields.id}`,
        createdAt: '2026-01-01T00:00:00.000Z',
        ...(propertyIds === undefined ? {} : { propertyIds }),
      }),
    );

  class Add implements fc.Command<Model, Real> {
    constructor(readonly subscription: Subscription) {}
    check = () => true;
    run(model: Model, { index }: Real): void {
      const id = this.subscription.id;
      if (model.held.some((s) => s.given.id === id)) {
        const caught = thrown(() => index.add(this.subscription));
        expect(isConfigurationError(caught) && caught.code).toBe('duplicate_subscription_id');
      } else {
        index.add(this.subscription);
        model.held.push(copy(this.subscription));
      }
      expectSameAsModel(model, index);
    }
    toString = () => `add(${JSON.stringify(this.subscription)})`;
  }

  // A malformed pattern: add and replace refuse it and change nothing, whatever the id.
  class AddMalformed implements fc.Command<Model, Real> {
    constructor(
      readonly subscription: Subscription,
      readonly viaReplace: boolean,
    ) {}
    check = () => true;
    run(model: Model, { index }: Real): void {
      const caught = thrown(() =>
        this.viaReplace ? index.replace(this.subscription) : index.add(this.subscription),
      );
      expect(isConfigurationError(caught) && caught.code).toBe('invalid_subscription');
      expectSameAsModel(model, index);
    }
    toString = () =>
      `${this.viaReplace ? 'replace' : 'add'}(${JSON.stringify(this.subscription)}) refused`;
  }

  class Replace implements fc.Command<Model, Real> {
    constructor(readonly subscription: Subscription) {}
    check = () => true;
    run(model: Model, { index }: Real): void {
      const at = model.held.findIndex((s) => s.given.id === this.subscription.id);
      expect(index.replace(this.subscription)).toBe(at === -1 ? undefined : model.held[at]!.given);
      if (at === -1) model.held.push(copy(this.subscription));
      else model.held[at] = copy(this.subscription);
      expectSameAsModel(model, index);
    }
    toString = () => `replace(${JSON.stringify(this.subscription)})`;
  }

  class Remove implements fc.Command<Model, Real> {
    constructor(
      readonly id: string,
      readonly twice: boolean,
    ) {}
    check = () => true;
    run(model: Model, { index }: Real): void {
      const at = model.held.findIndex((s) => s.given.id === this.id);
      expect(index.remove(this.id)).toBe(at === -1 ? undefined : model.held[at]!.given);
      if (at !== -1) model.held.splice(at, 1);
      expectSameAsModel(model, index);
      if (this.twice) {
        expect(index.remove(this.id)).toBeUndefined();
        expectSameAsModel(model, index);
      }
    }
    toString = () => `remove(${JSON.stringify(this.id)}${this.twice ? ', twice' : ''})`;
  }

  // One event, from pools wider than the sweep's (malformed kinds, other accounts and properties).
  class Match implements fc.Command<Model, Real> {
    constructor(readonly event: SubscriptionEvent) {}
    check = () => true;
    run(model: Model, { index }: Real): void {
      expect(disagreement(model, index, this.event)).toEqual([]);
    }
    toString = () => `match(${JSON.stringify(this.event)})`;
  }

  const commandsArb = fc.commands(
    [
      subscriptionArb.map((s) => new Add(s)),
      subscriptionArb.map((s) => new Replace(s)),
      fc
        .tuple(
          subscriptionArb,
          fc.constantFrom('Folio/created', 'folio/', 'folio/*/x', '*', 'folio/creat*'),
          fc.boolean(),
        )
        .map(
          ([s, bad, viaReplace]) =>
            new AddMalformed({ ...s, events: [...s.events, bad] }, viaReplace),
        ),
      fc
        .tuple(fc.constantFrom(...ID_POOL, 'missing'), fc.boolean())
        .map(([id, twice]) => new Remove(id, twice)),
      fc
        .record(
          {
            accountCode: fc.constantFrom(...ACCOUNT_POOL, ...EXTRA_ACCOUNTS),
            kind: fc.constantFrom(...EVENT_KINDS, ...EXTRA_KINDS),
            propertyId: fc.constantFrom(...PROPERTY_POOL, ...EXTRA_PROPERTIES),
          },
          { requiredKeys: ['accountCode', 'kind'] },
        )
        .map((event) => new Match(event)),
    ],
    { maxCommands: 40, size: 'max' },
  );

  it('agrees with the model on size, get, stats and every match after each add, replace, remove and match', () => {
    fc.assert(
      fc.property(commandsArb, (commands) => {
        fc.modelRun(
          () => ({ model: { held: [] }, real: { index: new SubscriptionIndex() } }),
          commands,
        );
      }),
      { numRuns: 300 },
    );
  });
});
