/** The pacer's store on its own: exact instants, no blocks, bounded by its sweep. */
import { describe, expect, it } from 'vitest';
import { PacingStore } from '../../src/client/pacing-store.js';
import { type Plan, rate, window } from '../../src/index.js';

const planOf = (resource: string, policies: Plan['scopes'][number]['policies']): Plan => ({
  scopes: [
    { clientId: 'c', accountCode: 'a', resource, policies, active: policies.map((_, i) => i) },
  ],
});

describe('PacingStore', () => {
  it('refuses with the exact instant the limits allow, and a refusal moves nothing', () => {
    const store = new PacingStore(0);
    const plan = planOf('', [window(2, '1s'), rate(10, 2)]);
    expect(store.apply(plan, 0).allowed).toBe(true);
    expect(store.apply(plan, 0).allowed).toBe(true);
    // The rate: burst 2 spent at 0, the third goes one interval (100 ms) later; the window: 1 s.
    for (const t of [0, 1, 500, 999]) {
      expect(store.apply(plan, t).allowed).toBe(false);
      expect(store.refusedUntil).toBe(1000);
    }
    expect(store.apply(plan, 1000).allowed).toBe(true);
  });

  it('keeps the margin between any two sends: a rate with a burst of 1 sends an interval plus the margin apart', () => {
    const store = new PacingStore(50);
    const plan = planOf('', [rate(10, 1)]);
    expect(store.apply(plan, 0).allowed).toBe(true);
    expect(store.apply(plan, 100).allowed).toBe(false);
    expect(store.refusedUntil).toBe(150);
    expect(store.apply(plan, 150).allowed).toBe(true);
  });

  it('drops the state of resources that no longer hold a send back', () => {
    const store = new PacingStore(50);
    const policies = [window(1, '1s')];
    for (let i = 0; i < 3000; i++) store.apply(planOf(`R${i}`, policies), i);
    // The sweep at the 2,048th apply (t = 2,047 ms) dropped the 998 resources sent to by 997 ms,
    // whose window (1 s and the margin) had passed.
    expect(store.size).toBe(3000 - 998);
    for (let i = 0; i < 1024; i++) store.apply(planOf('', policies), 10_000 + i * 2000);
    expect(store.size).toBeLessThanOrEqual(1);
  });
});
