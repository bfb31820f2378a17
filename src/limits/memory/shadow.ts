/**
 * Shadow mode in the memory store: only the enforcing policies refuse; what the shadow ones would
 * have refused is reported with the admission. Reached only when a plan names shadow policies
 * and some policy is full, so a plan without them decides exactly as before.
 * @module
 */
import { announcedSeconds, type Plan, type ShadowOutcome } from '../store.js';
import type { Work } from './decision.js';

/**
 * Mark in `mask` (by place in the work arrays, the plan's active policies in order) the shadow
 * policies; answers `mask`.
 */
export function shadowMask(plan: Plan, mask: boolean[]): boolean[] {
  let n = 0;
  for (const { active, shadow } of plan.scopes) {
    for (const i of active) mask[n++] = shadow?.[i] === true;
  }
  return mask;
}

/**
 * The enforcing policy a refusal names (-1 when they all admit), as refusingPolicy chooses among
 * all, from the own times it wrote into `w.own`; sets `w.earliest` and `w.blocked` when one refuses.
 */
export function enforcedRefusing(
  w: Work,
  n: number,
  t: number,
  cost: number,
  mask: readonly boolean[],
): number {
  let blocked = false;
  let earliest = t;
  let refusingOwn = t;
  let refusing = -1;
  for (let k = 0; k < n; k++) {
    if (mask[k] === true) continue;
    const own = w.own[k]!;
    const until = w.records[k]!.arena.mem[w.slots[k]!] as number;
    if (until > t) blocked = true;
    const at = until > t ? (cost > 1 && own > until ? own : until) : own;
    if (at > t && (at > earliest || (at === earliest && own >= refusingOwn))) {
      earliest = at;
      refusingOwn = own;
      refusing = k;
    }
  }
  if (refusing !== -1) {
    w.earliest = earliest;
    w.blocked = blocked;
  }
  return refusing;
}

/**
 * The refusal every active policy enforcing would have made, from refusingPolicy's choice
 * `refusing` (its `w.earliest` and `w.blocked` still in place).
 */
export function shadowOutcome(w: Work, t: number, refusing: number): ShadowOutcome {
  return {
    reason: w.blocked ? 'blocked' : 'limit',
    retryAfterSeconds: announcedSeconds(w.earliest, t),
    policy: w.policies[refusing]!,
    resource: w.resources[refusing]!,
  };
}
