/**
 * Which policies apply to a request: a limiter's `preset` or `policies`, read and copied once,
 * and a selector that picks a group of them per request without reading any configuration again.
 * @module
 */
import { InvalidRequestError } from '../errors/index.js';
import { describe, isArray } from '../internal/describe.js';
import {
  checkValue,
  conflictingKeys,
  INVALID,
  oneOf,
  type Rule,
  refused,
  unreadable,
  withFields,
} from '../internal/options.js';
import { type LimitRequest, RequestFields } from './limit-request.js';
import { type CompiledRules, compileRuleList, readLimitRules } from './limit-rule.js';
import { copyPolicies, type Policy, policyListIdentity } from './policy.js';

/** The policies that apply to a request (frozen copies) and its preset's route rules. @internal */
export interface PolicyGroup {
  readonly list: readonly Policy[];
  readonly active: readonly number[];
  readonly rules: CompiledRules;
  /** The list whose state the group counts in, for an override's group (see `PlanScope.state`). */
  readonly state?: readonly Policy[] | undefined;
}

/**
 * Picks the group of a request from its fields, checked already; positional, so that a request
 * costs no object (a selector of the user's sees them in a {@link RequestFields} made for it).
 * @internal
 */
export type Selector = (
  clientId: string,
  accountCode: string,
  accountType: string | undefined,
  method: string,
  path: string,
) => PolicyGroup;

/** A preset's fields, read once each; `label` names it in messages. @internal */
export interface PresetFields {
  readonly label: string;
  readonly policies: readonly unknown[];
  readonly rules: unknown;
}

const NO_RULES: CompiledRules = { table: undefined, effectOf: undefined, ruleNames: [] };

// Distinct lists a `policies` function may return that are remembered by identity; past it, a
// list is found by its content only (a function that builds a list per request stays bounded).
const REMEMBERED_LISTS = 10_000;

/**
 * The selector of a limiter's `preset` or `policies`, exactly one of which is given.
 * @param groups - where the groups are made and kept (and the names of their policies)
 * @throws ConfigurationError for limits that are missing, given twice or invalid
 * @internal
 */
export function policySelector(
  preset: unknown,
  policies: unknown,
  defaultAccountType: unknown,
  groups: PolicyGroups,
): Selector {
  if ((preset === undefined) === (policies === undefined)) {
    const given = preset === undefined ? [] : ['preset', 'policies'];
    throw conflictingKeys('createLimiter options', 'exactly one of preset and policies', given);
  }
  if (policies !== undefined) return listSelector(policies, groups);
  const single = aPreset.read(preset, 'preset');
  if (single !== INVALID) return fixed(groups.ofPreset(single, `preset ${single.label}`));
  return typeSelector(presetsByType(preset, groups), defaultAccountType);
}

/**
 * Groups by the identity of the list given and by the content of its copies: each list is read
 * and copied once, and lists equal as data share one group, and so one state in the store.
 * @internal
 */
export class PolicyGroups {
  readonly #byList = new Map<unknown, PolicyGroup>();
  readonly #byContent = new Map<string, PolicyGroup>();
  readonly #names: Set<string> | undefined;

  /** @param names - where the name of every policy read here goes, when given */
  constructor(names?: Set<string>) {
    this.#names = names;
  }

  of(list: unknown, where: string): PolicyGroup {
    return this.#byList.get(list) ?? this.#add(list, where);
  }

  // A preset with rules is compiled on its own: its rules are not shared by content.
  ofPreset(preset: PresetFields, where: string): PolicyGroup {
    const rules = readLimitRules(preset.rules, where);
    if (rules.length === 0) return this.of(preset.policies, `${where}: policies`);
    const list = copyPolicies(preset.policies, `${where}: policies`);
    const compiled = compileRuleList(rules, list, where);
    this.#name(list);
    for (const name of compiled.ruleNames) this.#names?.add(name);
    return { list, active: positions(list), rules: compiled };
  }

  #name(list: readonly Policy[]): void {
    for (const policy of list) this.#names?.add(policy.name);
  }

  #add(list: unknown, where: string): PolicyGroup {
    const copies = copyPolicies(list, where);
    if (copies.length === 0) {
      throw refused(where, 'an array of at least one policy', list, 'invalid_policy');
    }
    this.#name(copies);
    const identity = policyListIdentity(copies);
    let group = this.#byContent.get(identity);
    if (group === undefined) {
      group = { list: copies, active: positions(copies), rules: NO_RULES };
      this.#byContent.set(identity, group);
    }
    if (this.#byList.size < REMEMBERED_LISTS) this.#byList.set(list, group);
    return group;
  }
}

function positions(list: readonly unknown[]): number[] {
  return list.map((_, i) => i);
}

function fixed(group: PolicyGroup): Selector {
  return () => group;
}

function listSelector(policies: unknown, groups: PolicyGroups): Selector {
  if (typeof policies !== 'function') return fixed(groups.of(policies, 'policies'));
  const pick = policies as (request: LimitRequest) => unknown;
  return (clientId, accountCode, accountType, method, path) =>
    groups.of(
      pick(new RequestFields(clientId, accountCode, accountType, method, path)),
      'policies',
    );
}

function typeSelector(
  byType: ReadonlyMap<string, PolicyGroup>,
  defaultAccountType: unknown,
): Selector {
  const types = [...byType.keys()];
  const fallback = checkValue(
    oneOf(...types),
    defaultAccountType ?? 'development',
    'defaultAccountType',
  );
  return (_clientId, _accountCode, accountType) => {
    const type = accountType ?? fallback;
    return byType.get(type) ?? noPresetFor(type, types);
  };
}

function noPresetFor(type: string, types: readonly string[]): never {
  throw new InvalidRequestError(
    'invalid_account_type',
    `accountType ${describe(type)} has no preset; use one of ${types.join(', ')}.`,
  );
}

const presetFields = withFields(['name', 'policies', 'rules'], 'a LimitPreset');

/** A preset: an object whose `policies` is an array. */
const aPreset: Rule<PresetFields> = {
  expected: presetFields.expected,
  read(value, name) {
    const fields = presetFields.read(value, name);
    if (fields === INVALID || !isArray(fields.policies)) return INVALID;
    const label = typeof fields.name === 'string' ? fields.name : describe(fields.name);
    return { label, policies: fields.policies, rules: fields.rules };
  },
};

/**
 * A preset checked as a limiter would check it, and its fields as read (for a preset an override
 * may name, checked when it is given rather than when first used).
 * @throws ConfigurationError naming `where` for anything but a valid preset
 * @internal
 */
export function checkedPreset(value: unknown, where: string): PresetFields {
  const fields = checkValue(aPreset, value, where);
  new PolicyGroups().ofPreset(fields, where);
  return fields;
}

function presetsByType(preset: unknown, groups: PolicyGroups): Map<string, PolicyGroup> {
  const entries = presetEntries(preset);
  if (entries === undefined || entries.length === 0) throw refused('preset', PRESETS, preset);
  const byType = new Map<string, PolicyGroup>();
  for (const [type, value] of entries) {
    const member = checkValue(aPreset, value, `preset.${type}`);
    byType.set(type, groups.ofPreset(member, `preset.${type}`));
  }
  return byType;
}

/** The members of presets by account type, read once; undefined for anything but an object. */
function presetEntries(value: unknown): Array<[string, unknown]> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    return Object.entries(value);
  } catch (cause) {
    throw unreadable('preset', PRESETS, value, cause);
  }
}

const PRESETS = 'a LimitPreset or presets by account type such as presets.byAccountType';
