import { describe, expect, it } from 'vitest';
import {
  developmentPreset,
  isConfigurationError,
  livePreset,
  presets,
  trialPreset,
} from '../../src/index.js';
import { thrown } from '../support/thrown.js';

function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

const shape = (p: { policies: readonly object[] }) => p.policies.map((x) => ({ ...x }));

describe('presets (specification, "Limits")', () => {
  it('Live: bursts up to 200 per second, 100 per second on average, 3500 per minute, and the throttle', () => {
    expect(shape(presets.live)).toEqual([
      { kind: 'window', name: 'global: 200 per 1 s', limit: 200, windowMs: 1_000 },
      { kind: 'rate', name: 'global: 100 per s average, burst 200', perSecond: 100, burst: 200 },
      { kind: 'window', name: 'global: 3500 per 60 s', limit: 3_500, windowMs: 60_000 },
      {
        kind: 'concurrency',
        name: 'throttle: 20 concurrent',
        max: 20,
        leaseTtlMs: 60_000,
        retryAfterMs: 1_000,
      },
    ]);
  });

  it('Development and Trial: 5 per second and 200 per minute in total, and the throttle', () => {
    const expected = [
      { kind: 'window', name: 'global: 5 per 1 s', limit: 5, windowMs: 1_000 },
      { kind: 'window', name: 'global: 200 per 60 s', limit: 200, windowMs: 60_000 },
      {
        kind: 'concurrency',
        name: 'throttle: 5 concurrent',
        max: 5,
        leaseTtlMs: 60_000,
        retryAfterMs: 1_000,
      },
    ];
    expect(shape(presets.development)).toEqual(expected);
    expect(shape(presets.trial)).toEqual(expected);
    expect(presets.byAccountType).toEqual({
      live: presets.live,
      development: presets.development,
      trial: presets.trial,
    });
  });

  it('the throttle size and lease TTL are configurable', () => {
    expect(livePreset({ concurrency: 50, leaseTtl: '10s' }).policies[3]).toMatchObject({
      name: 'throttle: 50 concurrent',
      max: 50,
      leaseTtlMs: 10_000,
    });
    expect(developmentPreset({ concurrency: 2 }).policies[2]).toMatchObject({ max: 2 });
    expect(trialPreset().name).toBe('trial');
  });
});

describe('preset factories refuse options they cannot use, naming the option', () => {
  it.each<[string, () => unknown, string, RegExp]>([
    [
      'livePreset(null)',
      () => livePreset(null as never),
      'invalid_option',
      /^livePreset options must be an object/,
    ],
    [
      'developmentPreset(null)',
      () => developmentPreset(null as never),
      'invalid_option',
      /^developmentPreset options must be an object/,
    ],
    [
      'trialPreset(5)',
      () => trialPreset(5 as never),
      'invalid_option',
      /^trialPreset options must be an object/,
    ],
    [
      'options that are a revoked proxy',
      () => livePreset(revokedProxy() as never),
      'invalid_option',
      /^livePreset options must be plain data, got an object that threw when read\.$/,
    ],
    [
      'exempt routes given as one string',
      () => livePreset({ throttleExemptRoutes: 'GET /booking/v*/offers' as never }),
      'invalid_route_rule',
      /^livePreset option throttleExemptRoutes must be an array of route patterns/,
    ],
    [
      'resource limits given as an object',
      () => livePreset({ resourceLimits: {} as never }),
      'invalid_route_rule',
      /^livePreset option resourceLimits must be an array of \{ route, limit, periodMs \} rows, got an object\.$/,
    ],
    [
      'a throttle size that is a symbol',
      () => livePreset({ concurrency: Symbol('n') as never }),
      'invalid_limit',
      /^concurrency must be a whole number from 1 to 9007199254740991 \(Number\.MAX_SAFE_INTEGER\), got a symbol\.$/,
    ],
    [
      'a throttle size of 0',
      () => developmentPreset({ concurrency: 0 }),
      'invalid_limit',
      /^concurrency must be a whole number from 1 to 9007199254740991 \(Number\.MAX_SAFE_INTEGER\), got 0\.$/,
    ],
    [
      'a lease TTL that is a revoked proxy',
      () => trialPreset({ leaseTtl: revokedProxy() as never }),
      'invalid_duration',
      /^leaseTtl must be a whole number of milliseconds/,
    ],
    [
      'a resource row with a bad period',
      () => developmentPreset({ resourceLimits: [{ route: 'GET /a', limit: 1, periodMs: -1 }] }),
      'invalid_duration',
      /^developmentPreset option resourceLimits\[0\]\.periodMs must be/,
    ],
  ])('%s is a ConfigurationError', (_, make, code, message) => {
    const caught = thrown(make);
    expect(isConfigurationError(caught) && caught.code).toBe(code);
    expect((caught as Error).message).toMatch(message);
  });
});
