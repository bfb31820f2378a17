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

/**
 * Read the decision script's reply; undefined when it is not what the script returns.
 * @param binary - whether the script replies in little-endian doubles rather than text
 * @param policies - the active policies, in plan order
 * @param resources - the resource of each
 */
export function parseOutcome(
  reply: unknown,
  binary: boolean,
  plan: Plan,
  policies: readonly Policy[],
  resources: readonly string[],
): StoreOutcome | undefined {
  const numbers = binary ? readDoubles(reply) : readText(reply);
  if (numbers === undefined || numbers.length < 2) return undefined;
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
