/**
 * Shadow mode on the memory store (the same suite runs on Redis in test/redis/shadow.test.ts),
 * the `shadow` option's checks, and the decision channel's `shadow_refused`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  createLimiter,
  type DecisionMessage,
  FakeClock,
  limitsChannels,
  MemoryStore,
  presets,
  window,
} from '../../src/index.js';
import { ChannelLog } from '../support/channel-log.js';
import { shadowSuite } from '../support/shadow-suite.js';

shadowSuite('the memory store', () => new MemoryStore(), 300);

const log = new ChannelLog();
afterEach(log.stop);

const request = { clientId: 'client-1', accountCode: 'ACME', method: 'GET', path: '/folios' };

describe('the shadow option', () => {
  it.each([
    ['yes', /shadow must be true \(every policy\), false, or an array of policy names/],
    [[], /shadow must be/],
    [[''], /shadow\[0\] must be a non-empty string/],
    [1, /shadow must be/],
  ])('refuses %j, saying what to give', (value, message) => {
    expect(() => createLimiter({ preset: presets.live, shadow: value as never })).toThrow(message);
  });

  it('refuses a name no policy of the preset has (its own and its resource limits), naming them', () => {
    const make = () => createLimiter({ preset: presets.live, shadow: ['global: 3500 per 6 s'] });
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow(
      /^shadow\[0\] must be the name of a policy of the limiter, one of "global: 200 per 1 s", .*"resource PATCH \/booking\/v\*\/bookings\/\{id\}: 20 per 5 min", .* \(or shadow: true for all of them\), got "global: 3500 per 6 s"\.$/,
    );
    const resource = presets.live.rules?.flatMap((r) => r.policies ?? [])[0]?.name;
    expect(resource).toBeDefined();
    expect(() => createLimiter({ preset: presets.live, shadow: [resource!] })).not.toThrow();
  });

  it('with a function picking the policies, takes any name (a list not met yet may have it)', () => {
    expect(() =>
      createLimiter({ policies: () => [window(1, '1s', { name: 'a' })], shadow: ['later'] }),
    ).not.toThrow();
  });

  it('false, or left out, enforces every policy', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [window(1, '1s')], clock, shadow: false });
    limiter.check(request);
    expect(limiter.check(request).allowed).toBe(false);
  });

  it('runs a whole preset by account type in shadow: a request over a resource limit is admitted, reported with the resource policy', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.byAccountType, clock, shadow: true });
    const patch = {
      clientId: 'c',
      accountCode: 'A',
      accountType: 'live' as const,
      method: 'PATCH',
      path: '/booking/v1/bookings/B1',
    };
    let last = limiter.check(patch);
    for (let i = 0; i < 100 && !(last.allowed && last.shadow); i++) last = limiter.check(patch);
    expect(last.allowed).toBe(true);
    expect(last.allowed && last.shadow?.policy.name).toMatch(/bookings/);
  });
});

describe('the decision channel in shadow mode', () => {
  it("publishes 'shadow_refused' with the policy, reason and Retry-After escaped, and 'admitted' otherwise", () => {
    const decisions = log.listen<DecisionMessage>(limitsChannels.decision);
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [window(1, '10s', { name: 'tight' })],
      clock,
      shadow: ['tight'],
    });

    const first = limiter.check(request);
    const second = limiter.check(request);

    expect(decisions.map((m) => m.outcome)).toEqual(['admitted', 'shadow_refused']);
    expect(decisions[1]).toMatchObject({
      policy: 'tight',
      reason: 'limit',
      retryAfterSeconds: 10,
      lease: false,
      decision: second,
    });
    expect(decisions[0]?.decision).toBe(first);
  });
});
