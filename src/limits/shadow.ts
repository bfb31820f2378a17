/**
 * Shadow mode: the limiter's `shadow` option, read once, and the policies it puts in shadow
 * mode, marked on the plans of the limiter (docs/limits.md, "Shadow mode").
 * @module
 */
import { aString, checkValue, listOf, oneOf, type Rule, worded } from '../internal/options.js';
import type { ResourceScope } from './limit-rule.js';
import type { Policy } from './policy.js';
import type { PlanScope } from './store.js';

/**
 * Which policies of a limiter run in shadow mode: `true` for all of them (a whole preset), or
 * their names (the preset's own policies, its resource limits', or a `policies` list's).
 */
export type ShadowOption = boolean | readonly string[];

const policyNames = listOf(aString(200), 1);

/** The `shadow` option: `true`, `false`, or a non-empty array of policy names. @internal */
export const aShadowOption: Rule<boolean | readonly string[]> = {
  expected: 'true (every policy), false, or an array of policy names',
  read: (value, name) => (typeof value === 'boolean' ? value : policyNames.read(value, name)),
};

/** The policies of a limiter in shadow mode, and the mask of each list of policies. @internal */
export class ShadowPolicies {
  readonly #all: boolean;
  readonly #names: ReadonlySet<string>;
  readonly #masks = new WeakMap<readonly Policy[], readonly boolean[] | null>();

  constructor(all: boolean, names: ReadonlySet<string>) {
    this.#all = all;
    this.#names = names;
  }

  /** `mask[i]` true when `list[i]` is in shadow mode; undefined when none of the list is. */
  maskOf(list: readonly Policy[]): readonly boolean[] | undefined {
    let mask = this.#masks.get(list);
    if (mask === undefined) {
      const marks = list.map((policy) => this.#all || this.#names.has(policy.name));
      mask = marks.includes(true) ? Object.freeze(marks) : null;
      this.#masks.set(list, mask);
    }
    return mask ?? undefined;
  }

  /**
   * The scopes of a request, each with its shadow mask, and whether any policy is in shadow. An
   * override's list (with its `state`) is masked as the list it counts in: a multiplied policy is
   * in shadow mode when its default one is.
   */
  scopes(
    clientId: string,
    accountCode: string,
    list: readonly Policy[],
    state: readonly Policy[] | undefined,
    active: readonly number[],
    resources: readonly ResourceScope[],
  ): { scopes: PlanScope[]; shadow: boolean } {
    let mask = this.maskOf(state ?? list);
    let shadow = mask !== undefined;
    const scopes: PlanScope[] = [
      { clientId, accountCode, resource: '', policies: list, active, shadow: mask, state },
    ];
    for (const { key, policies, positions } of resources) {
      mask = this.maskOf(policies);
      if (mask !== undefined) shadow = true;
      scopes.push({
        clientId,
        accountCode,
        resource: key,
        policies,
        active: positions,
        shadow: mask,
      });
    }
    return { scopes, shadow };
  }
}

/**
 * The policies the `shadow` option puts in shadow mode; undefined for none.
 * @param known - the names of every policy of the limiter, when known at its making (not for a
 *   `policies` function): a name none has is refused
 * @throws ConfigurationError `invalid_option` for a name no policy of the limiter has
 * @internal
 */
export function shadowPolicies(
  option: boolean | readonly string[] | undefined,
  known: ReadonlySet<string> | undefined,
): ShadowPolicies | undefined {
  if (option === undefined || option === false) return undefined;
  if (option === true) return new ShadowPolicies(true, new Set());
  if (known !== undefined) {
    const names = oneOf(...known);
    const aName = worded(
      names,
      `the name of a policy of the limiter, ${names.expected} (or shadow: true for all of them)`,
    );
    option.forEach((name, index) => {
      checkValue(aName, name, `shadow[${index}]`);
    });
  }
  return new ShadowPolicies(false, new Set(option));
}
