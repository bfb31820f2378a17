/**
 * The limiter reads each policy list once, when it first meets it, and works from frozen plain
 * copies from then on: getters, later changes and extra fields of the objects given change no
 * decision, and lists share state exactly when they are equal as data.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  type Decision,
  FakeClock,
  isConfigurationError,
  type LimitRequest,
  MemoryStore,
  type Policy,
  rate,
  window,
} from '../../src/index.js';
import { request } from '../support/limits.js';
import { thrown } from '../support/thrown.js';

/** What a decision says, for comparing two runs. */
function summary(decision: Decision): string {
  if (decision.allowed) return `A ${decision.statuses.map((s) => s.remaining).join(',')}`;
  return `R ${decision.reason} ${decision.retryAfterSeconds} ${decision.policy?.name}`;
}

const policyOf = fc.oneof(
  fc
    .tuple(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 3_000 }))
    .map(([limit, ms]) => window(limit, ms, { name: 'w' })),
  fc
    .tuple(fc.double({ min: 0.5, max: 20, noNaN: true }), fc.integer({ min: 1, max: 4 }))
    .map(([perSecond, burst]) => rate(perSecond, burst, { name: 'r' })),
  fc.integer({ min: 1, max: 3 }).map((max) => concurrency(max, { name: 'c' })),
);

type Step =
  | { kind: 'check'; client: number; mine: boolean }
  | { kind: 'wait'; ms: number }
  | { kind: 'mutate'; field: string; value: unknown };

const steps: fc.Arbitrary<Step[]> = fc.array(
  fc.oneof(
    {
      arbitrary: fc.record({
        kind: fc.constant('check' as const),
        client: fc.integer({ min: 0, max: 3 }),
        mine: fc.boolean(),
      }),
      weight: 6,
    },
    { arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.nat(1_500) }), weight: 2 },
    {
      arbitrary: fc.record({
        kind: fc.constant('mutate' as const),
        field: fc.constantFrom('kind', 'limit', 'windowMs', 'perSecond', 'burst', 'max', 'name'),
        value: fc.constantFrom<unknown>('window', 'rate', 'concurrency', 1, 1_000_000, 0, 'x'),
      }),
      weight: 1,
    },
  ),
  { maxLength: 80 },
);

describe('limiter: policies read once, as frozen copies', () => {
  it('mutating a policy object after createLimiter changes no decision, its own or another limiter’s on the same store', () => {
    fc.assert(
      fc.property(
        policyOf,
        fc.array(policyOf, { minLength: 1, maxLength: 2 }),
        steps,
        (mutable, others, script) => {
          // Arrange: a limiter on plain objects that the script changes, and another limiter on
          // the same store; the reference runs the same on untouched copies and a store apiece.
          const given: Record<string, unknown> = {
            ...mutable,
            limit: 1_000_000,
            windowMs: 1_000,
            max: 1_000_000,
            leaseTtlMs: 1_000_000,
            retryAfterMs: 1_000,
            perSecond: 1,
            burst: 1,
          };
          Object.assign(given, mutable);
          const theirs = others.map((p, i) => ({ ...p, name: `other ${i}` })) as Policy[];
          const clock = new FakeClock(1_000);
          const shared = new MemoryStore();
          const mine = createLimiter({
            policies: [given as unknown as Policy],
            store: shared,
            clock,
          });
          const other = createLimiter({ policies: theirs, store: shared, clock });
          const mineRef = createLimiter({
            policies: [{ ...mutable }],
            store: new MemoryStore(),
            clock,
          });
          const otherRef = createLimiter({ policies: theirs, store: new MemoryStore(), clock });
          for (const step of script) {
            // Act
            if (step.kind === 'wait') clock.advance(step.ms);
            else if (step.kind === 'mutate') given[step.field] = step.value;
            else {
              const req: LimitRequest = { ...request, clientId: `client ${step.client}` };
              const [a, b] = step.mine ? [mine, mineRef] : [other, otherRef];
              const got = a.check(req);
              const want = b.check(req);
              // Assert
              expect(summary(got)).toBe(summary(want));
              if (got.allowed && step.client % 2 === 0) got.release();
              if (want.allowed && step.client % 2 === 0) want.release();
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a kind that answers differently on later reads is read once, and so decides as the first answer', () => {
    // Arrange: a window whose kind says concurrency from its second read on.
    let reads = 0;
    const flipping = {
      name: 'flip',
      limit: 2,
      windowMs: 10_000,
      max: 1_000,
      leaseTtlMs: 1_000,
      retryAfterMs: 1_000,
      get kind() {
        reads++;
        return reads === 1 ? 'window' : 'concurrency';
      },
    };
    const clock = new FakeClock(0);
    const store = new MemoryStore();
    const limiter = createLimiter({ policies: [flipping as unknown as Policy], store, clock });
    const other = createLimiter({ policies: [window(3, '10s', { name: 'w' })], store, clock });
    // Act
    const mine = [1, 2, 3].map(() => limiter.check(request).allowed);
    const theirs = [1, 2, 3, 4].map(() => other.check({ ...request, clientId: 'other' }).allowed);
    // Assert
    expect(reads).toBe(1);
    expect(mine).toEqual([true, true, false]);
    expect(theirs).toEqual([true, true, true, false]);
  });

  it('a limit getter that calls check() again is read when the limiter is made, never inside a decision', () => {
    // Arrange: a resource policy whose limit getter decides another request when it can.
    let limiter: ReturnType<typeof createLimiter<MemoryStore>> | undefined;
    let reads = 0;
    const reentrant = {
      kind: 'window',
      name: 'res',
      windowMs: 3_600_000,
      get limit() {
        reads++;
        limiter?.check({ ...request, clientId: 'other', method: 'PATCH', path: '/r/OTHER' });
        return 3;
      },
    };
    const preset = (resource: Policy) => ({
      name: 'p',
      policies: [window(100, '1h', { name: 'g' }), concurrency(50, { name: 't' })],
      rules: [{ route: 'PATCH /r/{id}', policies: [resource] }],
    });
    const clock = new FakeClock(0);
    limiter = createLimiter({ preset: preset(reentrant as unknown as Policy), clock });
    const reference = createLimiter({ preset: preset(window(3, '1h', { name: 'res' })), clock });
    const mine = { ...request, method: 'PATCH', path: '/r/MINE' };
    // Act
    const got = Array.from({ length: 6 }, () => summary(limiter.check(mine)));
    const want = Array.from({ length: 6 }, () => summary(reference.check(mine)));
    // Assert
    expect(got).toEqual(want);
    expect(reads).toBe(1);
  });

  it('a policy list’s state is shared exactly when the lists are equal as data, whatever objects hold them', () => {
    // Policies as plain objects, as class instances with accessors and private fields, and as
    // objects whose fields are not enumerable: JSON of the last two is `{}`.
    class Window {
      readonly #limit: number;
      readonly #ms: number;
      readonly #name: string;
      constructor(limit: number, ms: number, name: string) {
        this.#limit = limit;
        this.#ms = ms;
        this.#name = name;
      }
      get kind() {
        return 'window';
      }
      get name() {
        return this.#name;
      }
      get limit() {
        return this.#limit;
      }
      get windowMs() {
        return this.#ms;
      }
    }
    const hidden = (limit: number, ms: number, name: string) =>
      Object.defineProperties(
        {},
        {
          kind: { value: 'window' },
          name: { value: name },
          limit: { value: limit },
          windowMs: { value: ms },
        },
      );
    const spec = fc.record({
      limit: fc.integer({ min: 2, max: 4 }),
      ms: fc.constantFrom(1_000, 2_000),
      name: fc.constantFrom('a', 'b'),
      shape: fc.constantFrom('plain', 'class', 'hidden'),
    });
    type Spec = { limit: number; ms: number; name: string; shape: string };
    const make = ({ limit, ms, name, shape }: Spec): Policy =>
      (shape === 'plain'
        ? { kind: 'window', name, limit, windowMs: ms }
        : shape === 'class'
          ? new Window(limit, ms, name)
          : hidden(limit, ms, name)) as Policy;
    fc.assert(
      fc.property(spec, spec, fc.integer({ min: 1, max: 3 }), (x, y, used) => {
        // Arrange: two lists picked by account type.
        const listX = [make(x)];
        const listY = [make(y)];
        const equal = x.limit === y.limit && x.ms === y.ms && x.name === y.name;
        const limiter = createLimiter({
          policies: (r) => (r.accountType === 'y' ? listY : listX),
          clock: new FakeClock(0),
        });
        // Act: `used` requests under list X, then one under list Y, from the same client.
        for (let i = 0; i < used; i++) limiter.check({ ...request, accountType: 'x' });
        const first = limiter.check({ ...request, accountType: 'y' });
        // Assert: list Y counts X's requests exactly when the lists are equal as data.
        const seen = equal ? Math.min(used, x.limit) : 0;
        expect(first.allowed).toBe(seen < y.limit);
        if (first.allowed) expect(first.statuses[0]!.remaining).toBe(y.limit - seen - 1);
      }),
      { numRuns: 300 },
    );
  });

  it('extra fields JSON cannot write (a BigInt, a cycle) are not copied, and never make check() throw', () => {
    // Arrange
    const withBigInt = { ...window(5, '1s', { name: 'w' }), tier: 1n };
    const circular: Record<string, unknown> = { ...window(5, '1s', { name: 'w' }) };
    circular.self = circular;
    const store = new MemoryStore();
    const clock = new FakeClock(0);
    const byFunction = createLimiter({ policies: () => [withBigInt as Policy], store, clock });
    const byCycle = createLimiter({
      policies: () => [circular as unknown as Policy],
      store,
      clock,
    });
    const preset = () => ({
      name: 'p',
      policies: [withBigInt as Policy],
      rules: [{ route: 'GET /a', policies: [window(5, '1s', { name: 'r' })] }],
    });
    const a = createLimiter({ preset: preset(), store, clock });
    const b = createLimiter({ preset: preset(), store, clock });
    // Act
    const decisions = [
      byFunction.check(request),
      byCycle.check(request),
      a.check({ ...request, clientId: 'p' }),
      b.check({ ...request, clientId: 'p' }),
    ];
    // Assert: the first two lists are equal as data, and so are the two presets' lists.
    expect(decisions.map((d) => d.allowed && d.statuses[0]!.remaining)).toEqual([4, 3, 4, 3]);
  });

  it('decision.policy and each status are the frozen copy: the same kind, name and numbers as the policy given', () => {
    // Arrange
    const given = { kind: 'window', name: 'w', limit: 1, windowMs: 1_000, note: 'extra' };
    const limiter = createLimiter({ policies: [given as Policy], clock: new FakeClock(0) });
    // Act
    limiter.check(request);
    const refused = limiter.check(request);
    // Assert
    expect(refused.allowed).toBe(false);
    if (refused.allowed) return;
    expect(refused.policy).toEqual({ kind: 'window', name: 'w', limit: 1, windowMs: 1_000 });
    expect(Object.isFrozen(refused.policy)).toBe(true);
    expect(refused.statuses[0]!.policy).toBe(refused.policy);
  });

  it.each<[string, () => unknown]>([
    [
      'a policy whose field getter throws',
      () =>
        createLimiter({
          policies: [
            Object.defineProperty({ kind: 'window', name: 'w', windowMs: 1 }, 'limit', {
              get() {
                throw new Error('boom');
              },
            }) as Policy,
          ],
        }),
    ],
    [
      'a policy list that is a revoked proxy',
      () => {
        const { proxy, revoke } = Proxy.revocable([], {});
        revoke();
        return createLimiter({ policies: proxy });
      },
    ],
  ])('%s is refused when the limiter is made, with invalid_policy', (_, make) => {
    const caught = thrown(make);
    expect(isConfigurationError(caught) && caught.code).toBe('invalid_policy');
  });
});
