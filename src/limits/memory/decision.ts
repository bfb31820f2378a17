/**
 * One memory-store decision over a plan flattened into {@link Work}: the refusing policy, the
 * refusal and its blocks, the statuses.
 * @module
 */
import type { Policy } from '../policy.js';
import { announcedSeconds, type Plan, type StoreOutcome } from '../store.js';
import { earliestFor, writeStatus } from './policy-kinds.js';
import { QUIET, type ScopeRecord } from './records.js';
import { pruneLog } from './sliding-log.js';

/** The active policies of one decision, flattened; reused from decision to decision. */
export interface Work {
  readonly policies: Policy[];
  /** Offset of each policy's slots in the arena. */
  readonly slots: number[];
  /** Offset of each policy's slots from its record's base. */
  readonly offsets: number[];
  readonly records: ScopeRecord[];
  readonly resources: string[];
  /** Each policy's own earliest admission time, blocks aside. */
  readonly own: number[];
  /** Of a refusal: when the request could be admitted, and whether a block is in the way. */
  earliest: number;
  blocked: boolean;
}

/** Work arrays to reuse, empty. */
export function newWork(): Work {
  return {
    policies: [],
    slots: [],
    offsets: [],
    records: [],
    resources: [],
    own: [],
    earliest: Number.NEGATIVE_INFINITY,
    blocked: false,
  };
}

/**
 * The policy a refusal names (-1 when all admit at `t`): the one that frees up last, blocks
 * counted (a blocked policy frees up at its block's end, or for a `cost` above one when it has
 * room for all of it, if later); on a tie, the one whose own limit frees up last, then the later
 * (more specific) one.
 */
export function refusingPolicy(w: Work, n: number, t: number, lazy: boolean, cost: number): number {
  let blocked = false;
  let earliest = t;
  let refusingOwn = t;
  let refusing = -1;
  for (let k = 0; k < n; k++) {
    const s = w.slots[k]!;
    const m = w.records[k]!.arena.mem;
    const own = earliestFor(w.policies[k]!, m, s, t, lazy, cost);
    w.own[k] = own;
    const until = m[s] as number;
    if (until > t) blocked = true;
    // A block frees a policy at its end, or later when its own limit needs more room: a cost
    // above one, or a window or rate an override lowered since the block was announced.
    const later = own > until && (cost > 1 || w.policies[k]!.kind !== 'concurrency');
    const at = until > t && !later ? until : own;
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
 * Refuse, recording nothing but blocks: each full policy not yet blocked is blocked until the
 * announced instant, so a retry then finds none of them in the way; announced blocks stay. A
 * `peek` records no block either.
 */
export function refuse(
  plan: Plan,
  w: Work,
  n: number,
  t: number,
  lazy: boolean,
  refusing: number,
  peek: boolean,
): StoreOutcome {
  const seconds = announcedSeconds(w.earliest, t);
  const outcome: StoreOutcome = {
    allowed: false,
    now: t,
    reason: w.blocked ? 'blocked' : 'limit',
    retryAfterSeconds: seconds,
    policy: w.policies[refusing],
    resource: w.resources[refusing],
    policies: activePolicies(plan, w, n),
    values: statusValues(w, n, t, lazy, false),
  };
  if (!peek) startBlocks(w, n, t, seconds, undefined);
  return outcome;
}

/**
 * Block each full policy not yet blocked until `seconds` after `t`; a policy `shadow` marks (by
 * its place in the work arrays) is never blocked.
 */
export function startBlocks(
  w: Work,
  n: number,
  t: number,
  seconds: number,
  shadow: readonly boolean[] | undefined,
): void {
  const until = t + seconds * 1000;
  for (let k = 0; k < n; k++) {
    const s = w.slots[k]!;
    const { base, arena } = w.records[k]!;
    const m = arena.mem;
    if (w.own[k]! <= t || (m[s] as number) > t || shadow?.[k] === true) continue;
    m[s] = until;
    if (until > (m[base + QUIET] as number)) m[base + QUIET] = until;
  }
}

/** The active policies in plan order; the scope's own list when it is all of them (no copy). */
export function activePolicies(plan: Plan, w: Work, n: number): readonly Policy[] {
  const only = plan.scopes.length === 1 ? plan.scopes[0]! : undefined;
  if (only !== undefined && only.active.length === only.policies.length) return only.policies;
  return w.policies.slice(0, n);
}

/** After a `lazy` look (see earliestFor), windows first drop what has left them. */
export function statusValues(
  w: Work,
  n: number,
  t: number,
  lazy: boolean,
  admitted: boolean,
): number[] {
  const values: number[] = new Array(2 * n);
  for (let k = 0; k < n; k++) {
    const policy = w.policies[k]!;
    const m = w.records[k]!.arena.mem;
    const s = w.slots[k]!;
    if (lazy && policy.kind === 'window') pruneLog(m, s, policy, t);
    writeStatus(values, k, policy, m, s, t, admitted);
  }
  return values;
}

/** The refusal of a request that needs a record the store has no room for. */
export function capacityRefusal(t: number): StoreOutcome {
  return {
    allowed: false,
    now: t,
    reason: 'capacity',
    retryAfterSeconds: 1,
    policy: undefined,
    resource: undefined,
    policies: [],
    values: [],
  };
}
