/**
 * Reading the decision script's reply into the outcome the memory store would give (the reply's
 * layout is in docs/redis-store.md).
 * @module
 */
import type { Policy } from '../limits/policy.js';
import {
  rateRemaining,
  rateResetAfter,
  throttleRemaining,
  windowRemaining,
  windowResetAfter,
} from '../limits/quota.js';
import type { Plan, RefusalReason, ShadowOutcome, StoreOutcome } from '../limits/store.js';
import { admissionWithoutStatuses, NO_STATUSES } from '../limits/store.js';

const REASONS: readonly (RefusalReason | undefined)[] = [undefined, 'limit', 'blocked'];

/** What a decision's reply is read against: its plan, its active policies and their resources. */
export interface ReplyRequest {
  readonly plan: Plan;
  /** The active policies, in plan order. */
  readonly policies: readonly Policy[];
  /** The resource of each. */
  readonly resources: readonly string[];
}

/** Where the leases a decision dropped expired go: `reportLeaseExpiry`'s parameters. */
export type ExpiryReport = (policy: string, expiredAt: number, foundAt: number) => void;

/**
 * Read the decision script's reply; undefined when it is not what the script returns. The leases
 * the decision dropped expired, which follow its numbers, go to the report, each with the
 * decision's time, once the whole reply is read.
 * @param binary - whether the script replies in little-endian doubles rather than text
 * @param sections - the policies of the script's scopes, scope after scope (a dropped lease names
 *   its throttle by its place here)
 * @param report - asked for only when the decision dropped leases; undefined: they are checked,
 *   not reported
 */
export function parseOutcome(
  reply: unknown,
  binary: boolean,
  request: ReplyRequest,
  sections: readonly Policy[],
  report: () => ExpiryReport | undefined,
): StoreOutcome | undefined {
  const numbers = binary ? readDoubles(reply) : readText(reply);
  if (numbers === undefined || numbers.length < 2) return undefined;
  const { plan, policies, resources } = request;
  const head = headLength(numbers[0]!, plan, policies.length, numbers.length);
  if (head === numbers.length) return outcomeOf(numbers, plan, policies, resources);
  // Leases dropped expired follow: rare, never on the usual path.
  if (head > numbers.length || !droppedFit(numbers, head, sections)) return undefined;
  const outcome = outcomeOf(numbers.slice(0, head), plan, policies, resources);
  const to = outcome === undefined ? undefined : report();
  if (to !== undefined) reportDropped(numbers, head, sections, to);
  return outcome;
}

/**
 * How many numbers the decision itself replies, as its first number tells; `count` (no dropped
 * lease can follow) for a peek, which writes nothing, and for what is not a reply.
 */
function headLength(allowed: number, plan: Plan, n: number, count: number): number {
  if (plan.peek === true) return count;
  const lean = plan.statuses === false;
  if (allowed === 0) return 5 + 2 * n;
  if (allowed === 1) return lean ? 2 : 2 + n;
  if (allowed === 3 && plan.shadow === true) return lean ? 5 : 5 + n;
  return count;
}

/**
 * Whether the numbers from `from` on are dropped leases: per throttle, its section (from 1), how
 * many, and their expiries, each at or before the decision's time.
 */
function droppedFit(
  numbers: readonly number[],
  from: number,
  sections: readonly Policy[],
): boolean {
  const t = numbers[1]!;
  let i = from;
  while (i < numbers.length) {
    const section = numbers[i]!;
    const count = numbers[i + 1];
    if (sections[section - 1]?.kind !== 'concurrency') return false;
    if (count === undefined || !Number.isInteger(count) || count < 1) return false;
    const end = i + 2 + count;
    if (end > numbers.length) return false;
    for (let k = i + 2; k < end; k++) if (!(numbers[k]! <= t)) return false;
    i = end;
  }
  return true;
}

/** Report each dropped lease (checked by {@link droppedFit}), found at the decision's time. */
function reportDropped(
  numbers: readonly number[],
  from: number,
  sections: readonly Policy[],
  report: ExpiryReport,
): void {
  const t = numbers[1]!;
  for (let i = from; i < numbers.length; ) {
    const policy = sections[numbers[i]! - 1]!;
    const end = i + 2 + numbers[i + 1]!;
    for (let k = i + 2; k < end; k++) report(policy.name, numbers[k]!, t);
    i = end;
  }
}

/** The outcome of the decision's own numbers. */
function outcomeOf(
  numbers: readonly number[],
  plan: Plan,
  policies: readonly Policy[],
  resources: readonly string[],
): StoreOutcome | undefined {
  const n = policies.length;
  const [allowed, t] = numbers as [number, number];
  // A peek replies as a refusal does, admitted or not.
  if (plan.peek === true) return peekOutcome(numbers, plan, policies, resources);
  if (allowed === 3 && plan.shadow === true) {
    return escapedOutcome(numbers, plan, policies, resources, plan.statuses === false);
  }
  // An admission asked without statuses replies with its first two numbers only.
  const lean = plan.statuses === false && n > 0;
  if (allowed === 1) {
    if (numbers.length !== (lean ? 2 : 2 + n)) return undefined;
    if (lean) return admissionWithoutStatuses(t, undefined);
    return {
      allowed: true,
      now: t,
      lease: undefined,
      policies: activePolicies(plan, policies),
      values: admittedStatuses(policies, numbers, t),
    };
  }
  if (allowed !== 0) return undefined;
  return refusal(numbers, plan, policies, resources);
}

/** A peek's reply: a refusal's layout, its first number 1 when the request would be admitted. */
function peekOutcome(
  numbers: readonly number[],
  plan: Plan,
  policies: readonly Policy[],
  resources: readonly string[],
): StoreOutcome | undefined {
  const [allowed, t] = numbers as [number, number];
  if (allowed === 0) return refusal(numbers, plan, policies, resources);
  if (numbers.length !== 5 + 2 * policies.length) return undefined;
  // 3: admitted, with the refusal shadow policies would have made in the head.
  const shadow =
    allowed === 3 && plan.shadow === true ? shadowOf(numbers, policies, resources) : undefined;
  if (allowed !== 1 && shadow === undefined) return undefined;
  return {
    allowed: true,
    now: t,
    lease: undefined,
    policies: activePolicies(plan, policies),
    values: numbers.slice(5),
    shadow,
  };
}

/**
 * An admission that shadow policies would have refused: 3, the time, that refusal's reason,
 * Retry-After and policy, then (unless `lean`) what the admission's statuses are worked out from.
 */
function escapedOutcome(
  numbers: readonly number[],
  plan: Plan,
  policies: readonly Policy[],
  resources: readonly string[],
  lean: boolean,
): StoreOutcome | undefined {
  const n = policies.length;
  if (numbers.length !== (lean ? 5 : 5 + n)) return undefined;
  const shadow = shadowOf(numbers, policies, resources);
  if (shadow === undefined) return undefined;
  const t = numbers[1]!;
  const statuses = lean ? NO_STATUSES : undefined;
  return {
    allowed: true,
    now: t,
    lease: undefined,
    policies: statuses?.policies ?? activePolicies(plan, policies),
    values: statuses?.values ?? admittedStatuses(policies, numbers.slice(3), t),
    shadow,
  };
}

/** The refusal an admission escaped, from the reply's reason, Retry-After and policy. */
function shadowOf(
  numbers: readonly number[],
  policies: readonly Policy[],
  resources: readonly string[],
): ShadowOutcome | undefined {
  const [, , reason, retry, refusing] = numbers as [number, number, number, number, number];
  const why = REASONS[reason];
  if (why === undefined || why === 'capacity' || why === 'unavailable') return undefined;
  if (refusing < 1 || refusing > policies.length || retry < 1) return undefined;
  return {
    reason: why,
    retryAfterSeconds: retry,
    policy: policies[refusing - 1]!,
    resource: resources[refusing - 1]!,
  };
}

/** A refusal's reply: the time, reason, Retry-After, refusing policy, then the statuses. */
function refusal(
  numbers: readonly number[],
  plan: Plan,
  policies: readonly Policy[],
  resources: readonly string[],
): StoreOutcome | undefined {
  const n = policies.length;
  if (numbers.length !== 5 + 2 * n) return undefined;
  const [, t, reason, retry, refusing] = numbers as [number, number, number, number, number];
  const why = REASONS[reason];
  if (why === undefined || refusing < 1 || refusing > n) return undefined;
  return {
    allowed: false,
    now: t,
    reason: why,
    retryAfterSeconds: retry,
    policy: policies[refusing - 1],
    resource: resources[refusing - 1],
    policies: activePolicies(plan, policies),
    values: numbers.slice(5),
  };
}

/** The scope's own list when it is all of them, as the memory store answers. */
function activePolicies(plan: Plan, policies: readonly Policy[]): readonly Policy[] {
  const only = plan.scopes.length === 1 ? plan.scopes[0]! : undefined;
  return only !== undefined && only.active.length === only.policies.length
    ? only.policies
    : policies;
}

/**
 * The statuses of an admission, worked out with the memory store's own functions from what the
 * script replies after the time (counting them in Lua cost Redis more than the rest of the reply).
 */
function admittedStatuses(
  policies: readonly Policy[],
  numbers: readonly number[],
  t: number,
): number[] {
  const values: number[] = new Array(2 * policies.length);
  for (let k = 0; k < policies.length; k++) {
    const policy = policies[k]!;
    const raw = numbers[2 + k]!;
    switch (policy.kind) {
      case 'window':
        values[2 * k] = windowRemaining(policy, raw);
        values[2 * k + 1] = windowResetAfter(policy, raw, t, t);
        break;
      case 'rate':
        values[2 * k] = rateRemaining(policy, raw, t);
        values[2 * k + 1] = rateResetAfter(raw, t);
        break;
      case 'concurrency':
        values[2 * k] = throttleRemaining(policy, raw);
        values[2 * k + 1] = 0;
        break;
    }
  }
  return values;
}

/** A binary reply: little-endian doubles, each finite; undefined when it is not that. */
function readDoubles(reply: unknown): number[] | undefined {
  if (!(reply instanceof Uint8Array) || reply.byteLength % 8 !== 0) return undefined;
  const count = reply.byteLength / 8;
  const view = new DataView(reply.buffer, reply.byteOffset, reply.byteLength);
  const numbers: number[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const value = view.getFloat64(8 * i, true);
    if (!Number.isFinite(value)) return undefined;
    numbers[i] = value;
  }
  return numbers;
}

/** A text reply (or its bytes): numbers separated by commas; undefined when it is not that. */
function readText(reply: unknown): number[] | undefined {
  const text = reply instanceof Uint8Array ? Buffer.from(reply).toString('latin1') : reply;
  if (typeof text !== 'string') return undefined;
  const fields = text.split(',');
  const count = fields.length;
  const numbers: number[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const value = Number(fields[i]);
    if (fields[i] === '' || !Number.isFinite(value)) return undefined;
    numbers[i] = value;
  }
  return numbers;
}
