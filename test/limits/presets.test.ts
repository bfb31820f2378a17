import { describe, expect, it } from 'vitest';
import { developmentPreset, livePreset, presets, trialPreset } from '../../src/index.js';

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
