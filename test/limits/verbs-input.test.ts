/**
 * Bad input to peek, reset and cost: each a typed error with a code and a message that says what
 * to change, never a crash and never a decision; and the documented scenarios of each verb.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AsyncLimitStore,
  concurrency,
  createLimiter,
  type Decision,
  FakeClock,
  isApiConventionsError,
  MemoryStore,
  presets,
  rate,
  window,
} from '../../src/index.js';
import { describe as describeValue } from '../../src/internal/describe.js';
import { HostileReadError, hostileValue, hostileVariant } from '../support/hostile.js';

const request = { clientId: 'c', accountCode: 'ACME', method: 'GET', path: '/booking/v1/x' };
const booking = { ...request, method: 'PATCH', path: '/booking/v1/bookings/B1' };

function limiter() {
  return createLimiter({ preset: presets.development, clock: new FakeClock(0) });
}

/** Check and end the request at once, as a handler that answered. */
function ended(decision: Decision): Decision {
  if (decision.allowed) decision.release();
  return decision;
}

/** What a call throws, as its class name, code and message (undefined when nothing is thrown). */
function thrown(call: () => unknown): { name: string; code: unknown; message: string } | undefined {
  try {
    call();
    return undefined;
  } catch (error) {
    const e = error as Error & { code?: unknown };
    return { name: e.name, code: e.code, message: e.message };
  }
}

describe('cost', () => {
  it.each([
    [0, 'invalid_cost'],
    [-1, 'invalid_cost'],
    [1.5, 'invalid_cost'],
    [Number.NaN, 'invalid_cost'],
    [Number.POSITIVE_INFINITY, 'invalid_cost'],
    [2 ** 60, 'invalid_cost'],
    ['2', 'invalid_cost'],
    [null, 'invalid_cost'],
    [6, 'cost_above_limit'],
    [2 ** 40, 'cost_above_limit'],
  ])('check with cost %s: ConfigurationError %s, nothing counted', (cost, code) => {
    // Arrange
    const l = limiter();
    // Act
    const error = thrown(() => l.check(request, { cost: cost as number }));
    const peekError = thrown(() => l.peek(request, { cost: cost as number }));
    // Assert: the message names what to change; the limiter counted nothing.
    expect(error).toMatchObject({ name: 'ConfigurationError', code });
    expect(peekError).toMatchObject({ name: 'ConfigurationError', code });
    expect(error!.message).toBe(
      code === 'invalid_cost'
        ? `cost must be a whole number from 1 (the admissions the request counts; leave it out for 1), got ${describeValue(cost)}.`
        : `cost must be at most the limit 5 of the policy "global: 5 per 1 s", or the request could never be admitted: send it as parts of cost 5 or less, or raise the policy's limit, got ${cost}.`,
    );
    expect(peekError!.message).toBe(error!.message);
    const status = l.peek(request).statuses.map((s) => s.remaining);
    expect(status).toEqual([5, 200, 5]);
  });

  it('a cost above a resource limit names the resource and its policy', () => {
    const live = createLimiter({ preset: presets.live, clock: new FakeClock(0) });
    const error = thrown(() => live.check(booking, { cost: 21 }));
    expect(error?.code).toBe('cost_above_limit');
    expect(error?.message).toBe(
      'cost must be at most the limit 20 of the policy "resource PATCH /booking/v*/bookings/{id}: 20 per 5 min" of PATCH /booking/v*/bookings/{id} id=B1, or the request could never be admitted: send it as parts of cost 20 or less, or raise the policy\'s limit, got 21.',
    );
  });

  it('a throttle counts a costly request once: 3 in flight of a throttle of 3, each of cost 4', () => {
    const l = createLimiter({
      policies: [window(100, '1s', { name: 'w' }), concurrency(3, { name: 'c' })],
      clock: new FakeClock(0),
    });
    const decisions = [1, 2, 3, 4].map(() => l.check(request, { cost: 4 }));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions[3]?.allowed === false && decisions[3].policy?.name).toBe('c');
    expect(l.peek(request).statuses.map((s) => s.remaining)).toEqual([88, 0]);
  });

  it('all or nothing: a cost of 3 with 2 left is refused and records nothing; its Retry-After is when 3 fit', () => {
    // Arrange: a rate of 1 per second, burst 4; 2 taken at 0.
    const clock = new FakeClock(0);
    const l = createLimiter({ policies: [rate(1, 4, { name: 'r' })], clock });
    l.check(request, { cost: 2 });
    // Act
    const refused = l.check(request, { cost: 3 });
    // Assert: one token back after 1 s makes 3; nothing was taken by the refusal.
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 1, reason: 'limit' });
    clock.set(1_000);
    expect(l.check(request, { cost: 3 }).allowed).toBe(true);
  });
});

describe('options and scopes that are not what they should be', () => {
  it.each([null, 5, 'cost', true])(
    'check and peek options %s: ConfigurationError invalid_option',
    (options) => {
      const l = limiter();
      expect(thrown(() => l.check(request, options as never))).toMatchObject({
        code: 'invalid_option',
      });
      expect(thrown(() => l.peek(request, options as never))).toMatchObject({
        code: 'invalid_option',
      });
    },
  );

  it.each<[string, object, string, string]>([
    [
      'cost misspelt',
      { cots: 2 },
      'check() has no option "cots"; did you mean "cost"? Its options are statuses, cost.',
      'peek() has no option "cots"; did you mean "cost"? Its options are cost.',
    ],
    [
      'statuses, which a peek always reports',
      { statuses: false },
      '',
      'peek() has no option "statuses"; did you mean "cost"? Its options are cost.',
    ],
  ])(
    'check and peek options with %s: the key refused with the nearest name, nothing counted',
    (_, options, checkMessage, peekMessage) => {
      const l = limiter();
      const checked = thrown(() => ended(l.check(request, options)));
      if (checkMessage === '') expect(checked).toBeUndefined();
      else expect(checked).toMatchObject({ code: 'invalid_option', message: checkMessage });
      expect(thrown(() => l.peek(request, options))).toMatchObject({
        code: 'invalid_option',
        message: peekMessage,
      });
      expect(l.peek(request).statuses.map((s) => s.remaining)).toEqual(
        checkMessage === '' ? [4, 199, 5] : [5, 200, 5],
      );
    },
  );

  it.each([
    [{ clientId: '', accountCode: 'ACME' }, 'invalid_client_id'],
    [{ clientId: 'c', accountCode: '' }, 'invalid_account_code'],
    [{ clientId: 'c'.repeat(257), accountCode: 'ACME' }, 'invalid_client_id'],
    [{ clientId: 5, accountCode: 'ACME' }, 'invalid_client_id'],
    [{ clientId: 'c', accountCode: 'ACME', method: 'PATCH' }, 'invalid_request'],
    [{ clientId: 'c', accountCode: 'ACME', path: '/x' }, 'invalid_request'],
    [{ clientId: 'c', accountCode: 'ACME', method: 'GE T', path: '/x' }, 'invalid_method'],
    [{ clientId: 'c', accountCode: 'ACME', method: 'GET', path: '/booking/v1/x' }, 'invalid_path'],
    [{ clientId: 'c', accountCode: 'ACME', accountType: 7 }, 'invalid_account_type'],
    [null, 'invalid_request'],
    ['c', 'invalid_request'],
  ])('reset(%j): InvalidRequestError %s, nothing cleared', (scope, code) => {
    const l = limiter();
    ended(l.check(request));
    expect(thrown(() => l.reset(scope as never))).toMatchObject({
      name: 'InvalidRequestError',
      code,
    });
    expect(l.peek(request).statuses.map((s) => s.remaining)).toEqual([4, 199, 5]);
  });

  it('reset on a store without reset(): ConfigurationError invalid_option saying what to use', () => {
    const store: AsyncLimitStore = {
      synchronous: false,
      apply: () => Promise.reject(new Error('unused')),
      release: () => Promise.resolve(),
    };
    const l = createLimiter({ preset: presets.development, store });
    expect(thrown(() => l.reset({ clientId: 'c', accountCode: 'ACME' }))).toMatchObject({
      name: 'ConfigurationError',
      code: 'invalid_option',
      message:
        "the limiter's store.reset must be a reset(scope) method, as a MemoryStore and a RedisStore have (see LimitStore), got undefined.",
    });
  });

  it('never crashes on hostile options or scopes: a typed error with a message, or an answer', () => {
    const l = limiter();
    const valid = [
      (v: unknown) => l.check(request, v as never),
      (v: unknown) => l.peek(request, v as never),
      (v: unknown) => l.reset(v as never),
    ];
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 }),
        fc.oneof(
          hostileValue(),
          hostileVariant({ cost: 2 }),
          hostileVariant({ clientId: 'c', accountCode: 'ACME' }),
        ),
        (which, hostile) => {
          try {
            valid[which]!(hostile.make());
          } catch (error) {
            // Assert: the library's own typed error, or the hostile read's own error passed as
            // the cause of one; never a TypeError of the library's making.
            if (error instanceof HostileReadError) return;
            expect(isApiConventionsError(error), String(error)).toBe(true);
            expect((error as Error).message.length).toBeGreaterThan(0);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('peek and reset, the documented scenarios', () => {
  it('a peek of a blocked client reports the block and leaves it where it was', () => {
    // Arrange: Development, 5 in the second at 0, the 6th refused and blocked until 1 s.
    const clock = new FakeClock(0);
    const l = createLimiter({ preset: presets.development, clock });
    for (let i = 0; i < 6; i++) ended(l.check(request));
    // Act
    clock.set(999);
    const peeked = l.peek(request);
    clock.set(1_000);
    const after = l.check(request);
    // Assert
    expect(peeked).toMatchObject({ allowed: false, reason: 'blocked', retryAfterSeconds: 1 });
    expect(after.allowed).toBe(true);
  });

  it('a peek of a client never seen is admitted with full statuses and holds nothing', () => {
    const store = new MemoryStore();
    const l = createLimiter({ preset: presets.development, clock: new FakeClock(0), store });
    const peeked = l.peek(booking);
    expect(peeked.allowed).toBe(true);
    expect(peeked.statuses.map((s) => s.remaining)).toEqual([5, 200, 5, 5]);
    expect(store.size).toBe(0);
  });

  it('support unblocks a customer: reset of the client and account, then admitted at once', () => {
    const clock = new FakeClock(0);
    const l = createLimiter({ preset: presets.development, clock });
    for (let i = 0; i < 6; i++) ended(l.check(booking));
    expect(l.check(booking)).toMatchObject({ allowed: false, reason: 'blocked' });
    // Act
    const cleared = l.reset({ clientId: 'c', accountCode: 'ACME' });
    // Assert
    expect(cleared.cleared).toBe(2);
    expect(l.check(booking).allowed).toBe(true);
  });

  it('reset of one resource, named through another version segment, clears that resource only', () => {
    const clock = new FakeClock(0);
    const l = createLimiter({ preset: presets.development, clock });
    const other = { ...booking, path: '/booking/v1/bookings/B2' };
    for (let i = 0; i < 5; i++) {
      clock.set(i * 1_000);
      ended(l.check(booking));
      ended(l.check(other));
    }
    clock.set(10_000);
    // Act
    const cleared = l.reset({ ...booking, path: '/booking/v0-nsfh/bookings/B1' });
    // Assert: B1 fresh; B2 and the global limits as they were.
    expect(cleared.cleared).toBe(1);
    expect(ended(l.check(booking)).allowed).toBe(true);
    expect(l.check(other)).toMatchObject({ allowed: false, reason: 'limit' });
    expect(l.reset({ clientId: 'x', accountCode: 'y' }).cleared).toBe(0);
  });
});
