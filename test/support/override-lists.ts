/**
 * Overridden limits for the store tests: a list scaled by a multiplier (every limit times it,
 * names changed, window lengths kept), as a client's limits raised or lowered at runtime, and the
 * plan scope that decides with them while counting in the default list's state (PlanScope.state).
 */
import { concurrency, type PlanScope, type Policy, rate, window } from '../../src/index.js';

/** `n` times `multiplier`, a whole number from 1. */
function scaled(n: number, multiplier: number): number {
  return Math.max(1, Math.round(n * multiplier));
}

/**
 * The override of `policies` by `multiplier`: the same kinds and window lengths at each position,
 * each limit (a window's limit, a rate's per second and burst, a throttle's max) multiplied.
 */
export function override(policies: readonly Policy[], multiplier: number): readonly Policy[] {
  return Object.freeze(
    policies.map((p): Policy => {
      const name = `${p.name} x${multiplier}`;
      if (p.kind === 'window') return window(scaled(p.limit, multiplier), p.windowMs, { name });
      if (p.kind === 'rate') {
        return rate(p.perSecond * multiplier, scaled(p.burst, multiplier), { name });
      }
      return concurrency(scaled(p.max, multiplier), {
        name,
        leaseTtl: p.leaseTtlMs,
        retryAfter: p.retryAfterMs,
      });
    }),
  );
}

/**
 * A scope of `clientId` and `accountCode` that decides with `policies` and counts in the state of
 * `state` (omitted when they are the same list).
 */
export function overrideScope(
  clientId: string,
  accountCode: string,
  resource: string,
  policies: readonly Policy[],
  state: readonly Policy[],
  active: readonly number[] = policies.map((_, i) => i),
): PlanScope {
  const scope = { clientId, accountCode, resource, policies, active };
  return policies === state ? scope : { ...scope, state };
}
