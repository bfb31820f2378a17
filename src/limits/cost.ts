/**
 * The options of a check or a peek (whether an admitted decision reports its statuses, and the
 * request's cost), read by the one options reader, and the cost checked against the request's
 * policies before anything is decided.
 * @module
 */
import {
  aBoolean,
  checkValue,
  readOptions,
  refused,
  wholeNumber,
  worded,
} from '../internal/options.js';
import type { Policy } from './policy.js';
import type { Plan } from './store.js';

/** The admissions a request counts at once, refused as `invalid_cost`. */
const aCost = worded(
  wholeNumber(1),
  'a whole number from 1 (the admissions the request counts; leave it out for 1)',
  'invalid_cost',
);

const CHECK_RULES = { statuses: aBoolean, cost: aCost };

const PEEK_RULES = { cost: aCost };

/**
 * The options of a check without statuses, as the middleware passes them on every request: known
 * to the limiter, which reads them without the reader.
 * @internal
 */
export const WITHOUT_STATUSES: { readonly statuses: false } = Object.freeze({ statuses: false });

/** What a check or a peek is asked: statuses (always for a peek) and the cost. @internal */
export interface VerbOptions {
  readonly statuses: boolean;
  readonly cost: number;
}

/**
 * The options of `check` (`{ statuses, cost }`) or `peek` (`{ cost }`), each read once.
 * @throws ConfigurationError `invalid_option` for options that are not an object, an unknown key
 *   or a read that throws, or a `statuses` that is not a boolean; `invalid_cost` for a cost that
 *   is not a whole number from 1
 * @internal
 */
export function readVerbOptions(options: unknown, peek: boolean): VerbOptions {
  // On every check that passes options: a plain object of known keys is read without the
  // reader's lists (each key still read once, each value by the reader's rules); any other
  // object goes to the reader, which names what is wrong.
  const known = knownKeysOnly(options, peek);
  if (known !== undefined) {
    let statuses: unknown;
    let cost: unknown;
    try {
      if (!peek) statuses = known.statuses;
      cost = known.cost;
    } catch {
      return readVerbOptionsAll(options, peek);
    }
    return {
      statuses: peek || statuses === undefined ? true : checkValue(aBoolean, statuses, 'statuses'),
      cost: cost === undefined ? 1 : checkValue(aCost, cost, 'cost'),
    };
  }
  return readVerbOptionsAll(options, peek);
}

/** The options as a record when every key they enumerate is one the verb takes; else undefined. */
function knownKeysOnly(
  options: unknown,
  peek: boolean,
): { readonly statuses?: unknown; readonly cost?: unknown } | undefined {
  if (typeof options !== 'object' || options === null) return undefined;
  try {
    // Array.isArray throws on a revoked proxy: inside the try, as the keys are.
    if (Array.isArray(options)) return undefined;
    for (const key in options) {
      if (key !== 'cost' && (peek || key !== 'statuses')) return undefined;
    }
  } catch {
    return undefined;
  }
  return options;
}

function readVerbOptionsAll(options: unknown, peek: boolean): VerbOptions {
  if (peek) {
    const { cost } = readOptions(options, 'peek()', PEEK_RULES, {
      defaults: { cost: 1 },
      example: '{ cost: 2 }',
    });
    return { statuses: true, cost };
  }
  return readOptions(options, 'check()', CHECK_RULES, {
    defaults: { statuses: true, cost: 1 },
    example: '{ statuses: false }',
  });
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
        const of = scope.resource === '' ? '' : ` of ${scope.resource}`;
        throw refused(
          'cost',
          `at most the ${what} ${most} of the policy "${policy.name}"${of}, or the request could never be admitted: send it as parts of cost ${most} or less, or raise the policy's ${what}`,
          cost,
          'cost_above_limit',
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
