/**
 * Overrides: the memory source (set, replace, remove, expiry, bad input) and what a limiter makes
 * of an override (a multiplier of the default limits, another preset, per account, shadow mode).
 */
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  FakeClock,
  livePreset,
  MemoryOverrides,
  MemoryStore,
  presets,
  window,
} from '../../src/index.js';
import { thrown } from '../support/thrown.js';

const who = { clientId: 'client-1', accountCode: 'ACME' };
const dev = { ...who, accountType: 'development' as const, method: 'GET', path: '/v1/things' };

function setup(start = 0) {
  const clock = new FakeClock(start);
  const overrides = new MemoryOverrides({ presets: presets.byAccountType, clock });
  const limiter = createLimiter({ preset: presets.byAccountType, clock, overrides });
  return { clock, overrides, limiter };
}

const remaining = (statuses: ReadonlyArray<{ policy: { name: string }; remaining: number }>) =>
  Object.fromEntries(statuses.map((s) => [s.policy.name, s.remaining]));

describe('MemoryOverrides', () => {
  it('holds one override per client and one per account, replaces on set, removes on delete', () => {
    const { overrides } = setup();
    const client = overrides.set({ clientId: 'c' }, { multiplier: 2 });
    const account = overrides.set({ clientId: 'c', accountCode: 'A' }, { preset: 'live' });
    expect(client).toEqual({ clientId: 'c', multiplier: 2 });
    expect(account).toEqual({ clientId: 'c', accountCode: 'A', preset: 'live' });
    expect(overrides.set({ clientId: 'c' }, { multiplier: 3 })).toEqual({
      clientId: 'c',
      multiplier: 3,
    });
    expect(overrides.list()).toEqual([
      { clientId: 'c', multiplier: 3 },
      { clientId: 'c', accountCode: 'A', preset: 'live' },
    ]);
    // The account's own override wins over the client's; other accounts get the client's.
    expect(overrides.lookup('c', 'A', 0)?.preset).toBe('live');
    expect(overrides.lookup('c', 'B', 0)?.multiplier).toBe(3);
    expect(overrides.lookup('d', 'A', 0)).toBeUndefined();
    expect(overrides.delete({ clientId: 'c', accountCode: 'A' })).toBe(true);
    expect(overrides.delete({ clientId: 'c', accountCode: 'A' })).toBe(false);
    expect(overrides.lookup('c', 'A', 0)?.multiplier).toBe(3);
    expect(overrides.delete({ clientId: 'c' })).toBe(true);
    expect(overrides.list()).toEqual([]);
  });

  it('ignores an override from its expiry on, as a Date or milliseconds', () => {
    const { overrides, clock } = setup(1_000);
    overrides.set({ clientId: 'c' }, { multiplier: 2, expiresAt: 5_000 });
    overrides.set(
      { clientId: 'c', accountCode: 'A' },
      { preset: 'live', expiresAt: new Date(3_000) },
    );
    expect(overrides.get({ clientId: 'c', accountCode: 'A' })?.expiresAt).toBe(3_000);
    expect(overrides.lookup('c', 'A', 2_999)?.preset).toBe('live');
    // The account's own has ended: the client's applies to it again.
    expect(overrides.lookup('c', 'A', 3_000)?.multiplier).toBe(2);
    expect(overrides.lookup('c', 'A', 5_000)).toBeUndefined();
    expect(overrides.list()).toEqual([]);
    void clock;
  });

  it.each([
    [
      { clientId: '' },
      { multiplier: 2 },
      'invalid_client_id',
      /clientId must be a non-empty string/,
    ],
    [{ clientId: 'x'.repeat(257) }, { multiplier: 2 }, 'invalid_client_id', /at most 256/],
    [{ clientId: 'c', accountCode: '' }, { multiplier: 2 }, 'invalid_account_code', /accountCode/],
    [{ clientId: 7 }, { multiplier: 2 }, 'invalid_client_id', /got 7/],
    [null, { multiplier: 2 }, 'invalid_request', /target must be an object/],
    [
      { clientId: 'c' },
      {},
      'invalid_override',
      /^override must be an object with exactly one of preset \(a preset name\) and multiplier \(a number such as 2\), got one with neither\.$/,
    ],
    [
      { clientId: 'c' },
      { multiplier: 2, preset: 'live' },
      'invalid_override',
      /, got one with preset and multiplier\.$/,
    ],
    [{ clientId: 'c' }, { multiplier: -1 }, 'invalid_override', /above 0 and at most 1000/],
    [{ clientId: 'c' }, { multiplier: 0 }, 'invalid_override', /above 0/],
    [{ clientId: 'c' }, { multiplier: Number.NaN }, 'invalid_override', /above 0/],
    [{ clientId: 'c' }, { multiplier: 1001 }, 'invalid_override', /at most 1000/],
    [{ clientId: 'c' }, { multiplier: '2' }, 'invalid_override', /got "2"/],
    [{ clientId: 'c' }, { preset: '' }, 'invalid_override', /preset name/],
    [
      { clientId: 'c' },
      { preset: 'gold' },
      'unknown_preset',
      /^preset must be the name of a preset of the source, one of "live", "development", "trial", got "gold"\.$/,
    ],
    [
      { clientId: 'c' },
      { multiplier: 2, expiresAt: 500 },
      'invalid_override',
      /^expiresAt must be a time after now \(1970-01-01T00:00:01\.000Z; leave it out for an override until removed\), got "1970-01-01T00:00:00\.500Z"\.$/,
    ],
    [
      { clientId: 'c' },
      { multiplier: 2, expiresAt: 'tomorrow' },
      'invalid_override',
      /expiresAt must be a Date/,
    ],
    [
      { clientId: 'c' },
      { multiplier: 2, expiresAt: new Date(Number.NaN) },
      'invalid_override',
      /expiresAt/,
    ],
    [{ clientId: 'c' }, { multiplier: 2, until: 5 }, 'invalid_option', /no option "until"/],
    [{ clientId: 'c' }, 2, 'invalid_option', /override options must be an object/],
  ])('refuses %j with %j: %s', (target, override, code, message) => {
    const { overrides } = setup(1_000);
    const error = thrown(() => overrides.set(target as never, override as never));
    expect(error).toMatchObject({ code });
    expect((error as Error).message).toMatch(message);
    expect(overrides.list()).toEqual([]);
  });

  it('has no presets unless given: a preset override says how to give them', () => {
    const overrides = new MemoryOverrides();
    const error = thrown(() => overrides.set({ clientId: 'c' }, { preset: 'live' }));
    expect(error).toMatchObject({ code: 'unknown_preset' });
    expect((error as Error).message).toBe(
      'preset must be the name of a preset of the source, which has none (give the source presets: { name: preset }, or override with a multiplier), got "live".',
    );
  });

  it.each<[string, unknown, string, string]>([
    [
      'a misspelt key',
      { multipler: 2 },
      'invalid_option',
      'override has no option "multipler"; did you mean "multiplier"? Its options are preset, multiplier, expiresAt.',
    ],
    [
      'a misspelt expiry',
      { multiplier: 2, expireAt: 5_000 },
      'invalid_option',
      'override has no option "expireAt"; did you mean "expiresAt"? Its options are preset, multiplier, expiresAt.',
    ],
    [
      'an array',
      [2],
      'invalid_option',
      'override options must be an object such as { multiplier: 2 } or { preset: "live", expiresAt: new Date("2030-01-01") }, got an array.',
    ],
    [
      'a getter that throws',
      {
        get multiplier(): number {
          throw new Error('boom');
        },
      },
      'invalid_option',
      'override options must be plain data, got an object that threw when read.',
    ],
    [
      'an expiry that is a proxy of a Date',
      { multiplier: 2, expiresAt: new Proxy(new Date(5_000), {}) },
      'invalid_override',
      'expiresAt must be a Date or milliseconds since the Unix epoch, from 0 to 8640000000000000, got an object.',
    ],
    [
      'an expiry that is an invalid Date',
      { multiplier: 2, expiresAt: new Date(Number.NaN) },
      'invalid_override',
      'expiresAt must be a Date or milliseconds since the Unix epoch, from 0 to 8640000000000000, got an object.',
    ],
    [
      'a multiplier that is NaN',
      { multiplier: Number.NaN },
      'invalid_override',
      'multiplier must be a number above 0 and at most 1000, such as 2 or 0.5, got NaN.',
    ],
  ])('refuses an override that is %s, naming what to give', (_, override, code, message) => {
    const { overrides } = setup(1_000);
    const error = thrown(() => overrides.set({ clientId: 'c' }, override as never));
    expect(error).toMatchObject({ code, message });
    expect(overrides.list()).toEqual([]);
  });

  it('takes an expiry from a Date subclass by the time it holds', () => {
    const { overrides } = setup(1_000);
    class Deadline extends Date {
      override getTime(): number {
        throw new Error('never asked');
      }
    }
    const entry = overrides.set(
      { clientId: 'c' },
      { multiplier: 2, expiresAt: new Deadline(9_000) },
    );
    expect(entry.expiresAt).toBe(9_000);
  });

  it.each<[string, unknown, string]>([
    [
      'a misspelt key',
      { preset: { live: presets.live } },
      'MemoryOverrides has no option "preset"; did you mean "presets"? Its options are presets, clock.',
    ],
    [
      'presets that are an array',
      { presets: [presets.live] },
      'presets must be an object of presets by name, such as { ...presets.byAccountType }, got an array.',
    ],
    [
      'presets whose keys cannot be read',
      {
        presets: new Proxy(
          {},
          {
            ownKeys() {
              throw new Error('boom');
            },
          },
        ),
      },
      'presets must be an object of presets by name, such as { ...presets.byAccountType }, got an object that threw when read.',
    ],
    [
      'a preset that is not one',
      { presets: { gold: 'live' } },
      'presets.gold must be a LimitPreset, got "live".',
    ],
  ])('refuses MemoryOverrides options with %s, naming what to give', (_, options, message) => {
    expect(thrown(() => new MemoryOverrides(options as never))).toMatchObject({
      code: 'invalid_option',
      message,
    });
  });

  it('checks its presets when made', () => {
    expect(
      () => new MemoryOverrides({ presets: { gold: { name: 'gold', policies: [] } } }),
    ).toThrow(expect.objectContaining({ code: 'invalid_policy' }));
    expect(() => new MemoryOverrides({ presets: 5 as never })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
    expect(() => new MemoryOverrides({ clock: {} as never })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
  });
});

describe('a limiter with overrides', () => {
  it('decides with the default limits multiplied, named after them, and back without the override', () => {
    const { overrides, limiter } = setup();
    overrides.set({ clientId: who.clientId }, { multiplier: 2 });
    const raised = limiter.peek(dev);
    expect(remaining(raised.statuses)).toEqual({
      'global: 5 per 1 s (x2)': 10,
      'global: 200 per 60 s (x2)': 400,
      'throttle: 5 concurrent (x2)': 10,
    });
    overrides.delete({ clientId: who.clientId });
    expect(remaining(limiter.peek(dev).statuses)).toEqual({
      'global: 5 per 1 s': 5,
      'global: 200 per 60 s': 200,
      'throttle: 5 concurrent': 5,
    });
  });

  it('rounds multiplied limits down, never below 1, and scales the rate and its burst', () => {
    const { overrides, limiter } = setup();
    overrides.set({ clientId: who.clientId }, { multiplier: 0.1 });
    expect(remaining(limiter.peek(dev).statuses)).toEqual({
      'global: 5 per 1 s (x0.1)': 1,
      'global: 200 per 60 s (x0.1)': 20,
      'throttle: 5 concurrent (x0.1)': 1,
    });
    overrides.set({ clientId: who.clientId }, { multiplier: 1.5 });
    const live = limiter.peek({ ...dev, accountType: 'live' });
    expect(remaining(live.statuses)).toEqual({
      'global: 200 per 1 s (x1.5)': 300,
      'global: 100 per s average, burst 200 (x1.5)': 300,
      'global: 3500 per 60 s (x1.5)': 5250,
      'throttle: 20 concurrent (x1.5)': 30,
    });
  });

  it('raising a limit keeps what was admitted: remaining is the raised limit less the admissions', () => {
    const { overrides, limiter } = setup();
    for (let i = 0; i < 3; i++) expect(limiter.check(dev).allowed).toBe(true);
    overrides.set({ clientId: who.clientId }, { multiplier: 2 });
    const after = limiter.check(dev);
    expect(after.allowed).toBe(true);
    // 3 admitted before, this one: 10 - 4; the three leases are still held: 10 - 4.
    expect(remaining(after.statuses)).toMatchObject({
      'global: 5 per 1 s (x2)': 6,
      'global: 200 per 60 s (x2)': 396,
      'throttle: 5 concurrent (x2)': 6,
    });
  });

  it('an account override wins over the client one; other clients keep the default limits', () => {
    const { overrides, limiter } = setup();
    overrides.set({ clientId: who.clientId }, { multiplier: 2 });
    overrides.set(who, { multiplier: 3 });
    const names = (request: typeof dev) =>
      limiter.peek(request).statuses.map((s) => s.policy.name)[0];
    expect(names(dev)).toBe('global: 5 per 1 s (x3)');
    expect(names({ ...dev, accountCode: 'OTHER' })).toBe('global: 5 per 1 s (x2)');
    expect(names({ ...dev, clientId: 'client-2' })).toBe('global: 5 per 1 s');
  });

  it('a preset override decides with that preset, resource limits and exemptions included', () => {
    const { overrides, limiter } = setup();
    overrides.set({ clientId: who.clientId }, { preset: 'live' });
    const d = limiter.peek(dev);
    expect(d.statuses.map((s) => s.policy.name)).toEqual([
      'global: 200 per 1 s',
      'global: 100 per s average, burst 200',
      'global: 3500 per 60 s',
      'throttle: 20 concurrent',
    ]);
    // Live exempts the offers searches from the throttle; Development throttles everything.
    const offers = limiter.peek({ ...dev, path: '/booking/v1/offers' });
    expect(offers.statuses.map((s) => s.policy.name)).not.toContain('throttle: 20 concurrent');
  });

  it('a preset whose policies line up with the default counts in the same state', () => {
    const clock = new FakeClock(0);
    const big = livePreset({ concurrency: 40 });
    const overrides = new MemoryOverrides({ presets: { big }, clock });
    const limiter = createLimiter({ preset: presets.live, clock, overrides });
    const request = { ...who, method: 'GET', path: '/v1/things' };
    for (let i = 0; i < 20; i++) expect(limiter.check(request).allowed).toBe(true);
    // A peek: a check refused here would block the throttle until its Retry-After, and a block
    // carries over to the overriding list as the leases do.
    expect(limiter.peek(request)).toMatchObject({ allowed: false, reason: 'limit' });
    overrides.set({ clientId: who.clientId }, { preset: 'big' });
    const d = limiter.check(request);
    expect(d.allowed).toBe(true);
    expect(remaining(d.statuses)['throttle: 40 concurrent']).toBe(19);
  });

  it('an override ends at its expiry: the default limits apply again, with what was admitted', () => {
    const { overrides, limiter, clock } = setup(0);
    overrides.set({ clientId: who.clientId }, { multiplier: 2, expiresAt: 500 });
    for (let i = 0; i < 10; i++) {
      const d = limiter.check(dev);
      expect(d.allowed).toBe(true);
      if (d.allowed) d.release();
    }
    clock.set(500);
    const d = limiter.check(dev);
    expect(d).toMatchObject({ allowed: false, policy: { name: 'global: 5 per 1 s' } });
  });

  it('a shadow policy stays in shadow mode when multiplied', () => {
    const clock = new FakeClock(0);
    const overrides = new MemoryOverrides({ clock });
    const limiter = createLimiter({
      preset: presets.development,
      clock,
      overrides,
      shadow: ['global: 5 per 1 s'],
    });
    overrides.set({ clientId: who.clientId }, { multiplier: 2 });
    const request = { ...who, method: 'GET', path: '/v1/things' };
    for (let i = 0; i < 10; i++) {
      const d = limiter.check(request);
      if (d.allowed) d.release();
    }
    const d = limiter.check(request);
    expect(d.allowed).toBe(true);
    expect(d.allowed && d.shadow?.policy.name).toBe('global: 5 per 1 s (x2)');
  });

  it('a reset clears what was counted under an override', () => {
    const { overrides, limiter } = setup();
    overrides.set({ clientId: who.clientId }, { multiplier: 2 });
    for (let i = 0; i < 10; i++) limiter.check(dev);
    expect(limiter.check(dev).allowed).toBe(false);
    expect(limiter.reset(who).cleared).toBeGreaterThan(0);
    expect(limiter.check(dev).allowed).toBe(true);
  });

  it('a cost above a multiplied limit is refused with a typed error naming it', () => {
    const { overrides, limiter } = setup();
    overrides.set({ clientId: who.clientId }, { multiplier: 0.5 });
    expect(thrown(() => limiter.check(dev, { cost: 3 }))).toMatchObject({
      code: 'cost_above_limit',
      message: expect.stringContaining('global: 5 per 1 s (x0.5)'),
    });
  });

  it('refuses an overrides option that is not a source', () => {
    expect(() =>
      createLimiter({ preset: presets.live, overrides: {} as never, store: new MemoryStore() }),
    ).toThrow(
      expect.objectContaining({
        code: 'invalid_option',
        message: expect.stringMatching(/overrides must be an OverrideSource/),
      }),
    );
  });

  it('a window override of a policies list carries its counters too', () => {
    const clock = new FakeClock(0);
    const overrides = new MemoryOverrides({ clock });
    const limiter = createLimiter({
      policies: [window(2, '1s', { name: 'two' })],
      clock,
      overrides,
    });
    const request = { ...who, method: 'GET', path: '/x' };
    expect(limiter.check(request).allowed).toBe(true);
    expect(limiter.check(request).allowed).toBe(true);
    overrides.set({ clientId: who.clientId }, { multiplier: 2 });
    expect(limiter.check(request).allowed).toBe(true);
    expect(limiter.check(request).allowed).toBe(true);
    expect(limiter.check(request)).toMatchObject({ allowed: false, policy: { name: 'two (x2)' } });
  });
});

describe('a block announced before an override lowered the limits', () => {
  it('answers the truthful Retry-After under the lowered limits, and a retry at that time is admitted (Errors, "Rate limit exceeded": the seconds the client waits)', async () => {
    const { clock, overrides, limiter } = setup(301);
    const live = {
      ...who,
      accountType: 'live' as const,
      method: 'GET',
      path: '/booking/v1/reservations',
    };
    // 200 at once fill the Live second (and the rate's burst); the 201st is refused and blocks.
    for (let i = 0; i < 200; i++) {
      const d = await limiter.check(live);
      expect(d.allowed).toBe(true);
      if (d.allowed) d.release();
    }
    const first = await limiter.check(live);
    expect(first).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    // Halved: 50 a second on average, a burst of 100, with the 200 taken carried over.
    overrides.set({ clientId: who.clientId }, { multiplier: 0.5 });
    const blocked = await limiter.check(live);
    expect(blocked.allowed).toBe(false);
    if (blocked.allowed) return;
    expect(blocked.reason).toBe('blocked');
    // Not the block's 1 s: the halved rate has no room for 2 s more.
    expect(blocked.retryAfterSeconds).toBe(3);
    clock.advance(blocked.retryAfterSeconds * 1_000);
    expect((await limiter.check(live)).allowed).toBe(true);
  });
});
