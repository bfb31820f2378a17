/** Drivers that run an arrival sequence through the engine and through the exact oracle. */
import {
  createLimiter,
  type Decision,
  FakeClock,
  type LimitRequest,
  MemoryStore,
  type Policy,
} from '../../src/index.js';
import { ExactOracle, type OracleDecision } from './oracle.js';

// Names no account type: it fits a limiter whatever its presets' account types.
export const request: LimitRequest<never> = {
  clientId: 'client-1',
  accountCode: 'ACME',
  method: 'GET',
  path: '/booking/v1/reservations',
};

export interface Step {
  at: number;
  allowed: boolean;
  retryAfterSeconds: number | undefined;
  policy: string | undefined;
}

/** Run gaps through a limiter; every admitted request ends (releases) at once. */
export function runEngine(policies: readonly Policy[], gaps: readonly number[]): Step[] {
  const clock = new FakeClock(0);
  const limiter = createLimiter({ policies, clock, store: new MemoryStore() });
  const steps: Step[] = [];
  for (const gap of gaps) {
    clock.advance(gap);
    const decision = limiter.check(request);
    steps.push(stepOf(clock.now(), decision));
    if (decision.allowed) decision.release();
  }
  return steps;
}

/** Run gaps through the oracle; every admitted request ends at once. */
export function runOracle(policies: readonly Policy[], gaps: readonly number[]): Step[] {
  const oracle = new ExactOracle(policies);
  const steps: Step[] = [];
  let t = 0;
  for (const gap of gaps) {
    t += gap;
    const decision: OracleDecision = oracle.decide(t);
    steps.push({
      at: t,
      allowed: decision.allowed,
      retryAfterSeconds: decision.retryAfterSeconds,
      policy: decision.policy,
    });
    if (decision.leaseId !== undefined) oracle.release(decision.leaseId);
  }
  return steps;
}

export function stepOf(at: number, decision: Decision): Step {
  return decision.allowed
    ? { at, allowed: true, retryAfterSeconds: undefined, policy: undefined }
    : {
        at,
        allowed: false,
        retryAfterSeconds: decision.retryAfterSeconds,
        policy: decision.policy?.name,
      };
}

export const admittedTimes = (steps: readonly Step[]): number[] =>
  steps.filter((s) => s.allowed).map((s) => s.at);

/**
 * What a decision says, without its lease handle (each store issues its own): two stores' decisions
 * compare equal when they decide alike.
 */
export function comparable(d: Decision) {
  return d.allowed
    ? { allowed: true, now: d.now, statuses: d.statuses, shadow: d.shadow }
    : {
        allowed: false,
        now: d.now,
        reason: d.reason,
        retryAfterSeconds: d.retryAfterSeconds,
        retryAt: d.retryAt,
        policy: d.policy,
        statuses: d.statuses,
      };
}
