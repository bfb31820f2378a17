/**
 * The cost of a check or a peek: how many admissions a request counts at once, read from the
 * options and checked against the request's policies before anything is decided.
 * @module
 */
import { ConfigurationError } from '../errors/index.js';
import { describe } from '../internal/describe.js';
import type { Policy } from './policy.js';
import type { Plan } from './store.js';

/**
 * The `cost` of a verb's options: a whole number from 1 (1 when absent).
 * @throws ConfigurationError `invalid_option` for options that are not an object or cannot be
 *   read, `invalid_cost` for a cost that is not a whole number from 1
 * @internal
 */
export function costOf(options: unknown, verb: 'check' | 'peek'): number {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError(
      'invalid_option',
      `${verb}() options must be an object such as { cost: 2 }, got ${describe(options)}.`,
    );
  }
  let cost: unknown;
  try {
    ({ cost } = options as { readonly cost?: unknown });
  } catch (cause) {
    throw new ConfigurationError(
      'invalid_option',
      `Reading the ${verb}() options threw; pass plain data.`,
      { cause },
    );
  }
  if (cost === undefined || cost === 1) return 1;
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
    throw new ConfigurationError(
      'invalid_cost',
      `${verb}() cost must be a whole number from 1 (the admissions the request counts), got ${describe(cost)}; leave it out for 1.`,
    );
  }
  return cost;
}

/**
 * Refuse a cost that a policy of the plan could never admit: above a window's limit or a rate's
 * burst. (A throttle takes one lease whatever the cost.)
 * @throws ConfigurationError `cost_above_limit` naming the policy
 * @internal
 */
export function checkCost(plan: Plan, cost: number): void {
  for (const scope of plan.scopes) {
    for (const position of scope.active) {
      const policy = scope.policies[position] as Policy;
      const most = mostAtOnce(policy);
      if (cost > most) {
        const what = policy.kind === 'rate' ? 'burst' : 'limit';
        throw new ConfigurationError(
          'cost_above_limit',
          `cost ${cost} is above the ${what} ${most} of the policy "${policy.name}"${scope.resource === '' ? '' : ` of ${scope.resource}`}, so the request could never be admitted; send it as parts of cost ${most} or less, or raise the policy's ${what}.`,
        );
      }
    }
  }
}

/** The most admissions a policy takes at once. */
function mostAtOnce(policy: Policy): number {
  switch (policy.kind) {
    case 'window':
      return policy.limit;
    case 'rate':
      return policy.burst;
    case 'concurrency':
      return Number.POSITIVE_INFINITY;
  }
}
