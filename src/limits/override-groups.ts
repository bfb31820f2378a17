/**
 * What an override makes of a request's limits: the group of policies it decides with instead of
 * the default one, and whose state that group counts in (docs/limits.md, "Overrides").
 * @module
 */
import type { OverrideEntry, OverrideSource } from './overrides.js';
import { concurrency, type Policy, rate, window } from './policy.js';
import type { PolicyGroup, PolicyGroups } from './policy-selector.js';

// Derived groups one default group remembers; past it they are made afresh (a bounded memory
// whatever multipliers are set).
const REMEMBERED_OVERRIDES = 1_024;

/**
 * The groups overrides give, made once per default group and override and remembered.
 * @internal
 */
export class OverrideGroups {
  readonly #source: OverrideSource;
  readonly #groups: PolicyGroups;
  readonly #derived = new WeakMap<PolicyGroup, Derived>();

  constructor(source: OverrideSource, groups: PolicyGroups) {
    this.#source = source;
    this.#groups = groups;
  }

  /**
   * The group a request of `group` decides with: its client's and account's override's, as the
   * source holds it at `now`, or `group` itself when there is none.
   */
  groupFor(group: PolicyGroup, clientId: string, accountCode: string, now: number): PolicyGroup {
    const entry = this.#source.lookup(clientId, accountCode, now);
    return entry === undefined ? group : this.groupOf(group, entry);
  }

  /**
   * The group a request of `group` decides with under `entry`: the default limits multiplied (they
   * count in the default group's state), or the named preset's (in the default's state when its
   * policies line up with the default's, else in their own). A preset the source no longer has
   * leaves the default group.
   */
  groupOf(group: PolicyGroup, entry: OverrideEntry): PolicyGroup {
    let derived = this.#derived.get(group);
    if (derived === undefined) {
      derived = { byMultiplier: new Map(), byPreset: new Map() };
      this.#derived.set(group, derived);
    }
    const { preset, multiplier } = entry;
    if (preset === undefined) {
      return remembered(derived.byMultiplier, multiplier!, () => multiplied(group, multiplier!));
    }
    return remembered(derived.byPreset, preset, () => this.#presetGroup(group, preset));
  }

  #presetGroup(group: PolicyGroup, name: string): PolicyGroup {
    const preset = this.#source.preset(name);
    if (preset === undefined) return group;
    const own = this.#groups.ofPreset(
      { label: name, policies: preset.policies, rules: preset.rules },
      `override preset ${name}`,
    );
    if (own.list === group.list || !sameState(own.list, group.list)) return own;
    return { ...own, state: group.list };
  }
}

/** The groups derived from one default group, by multiplier and by preset name. */
interface Derived {
  readonly byMultiplier: Map<number, PolicyGroup>;
  readonly byPreset: Map<string, PolicyGroup>;
}

function remembered<K>(map: Map<K, PolicyGroup>, key: K, make: () => PolicyGroup): PolicyGroup {
  let group = map.get(key);
  if (group === undefined) {
    group = make();
    if (map.size >= REMEMBERED_OVERRIDES) map.clear();
    map.set(key, group);
  }
  return group;
}

/**
 * Whether two lists may share one state: the same length and, position by position, the same
 * kind and, for windows, the same window (the contract of `PlanScope.state`).
 * @internal
 */
export function sameState(a: readonly Policy[], b: readonly Policy[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const p = a[i]!;
    const q = b[i]!;
    if (p.kind !== q.kind) return false;
    if (p.kind === 'window' && q.kind === 'window' && p.windowMs !== q.windowMs) return false;
  }
  return true;
}

/** The default group with every limit multiplied, counting in the default group's state. */
function multiplied(group: PolicyGroup, multiplier: number): PolicyGroup {
  const list = Object.freeze(group.list.map((policy) => scaled(policy, multiplier)));
  return { list, active: group.active, rules: group.rules, state: group.list };
}

/**
 * A policy with its limits multiplied, never below 1, named after the default one (`… (x2)`). A
 * rate beyond what a rate policy can keep stays the default one.
 */
export function scaled(policy: Policy, multiplier: number): Policy {
  const name = `${policy.name} (x${multiplier})`;
  const times = (n: number) => Math.max(1, Math.floor(n * multiplier));
  switch (policy.kind) {
    case 'window':
      return window(times(policy.limit), policy.windowMs, { name });
    case 'rate':
      try {
        return rate(policy.perSecond * multiplier, times(policy.burst), { name });
      } catch {
        return policy;
      }
    case 'concurrency':
      return concurrency(times(policy.max), {
        name,
        leaseTtl: policy.leaseTtlMs,
        retryAfter: policy.retryAfterMs,
      });
  }
}
