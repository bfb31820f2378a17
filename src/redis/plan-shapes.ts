/**
 * What a plan needs of the store: its keys, its active policies and their resources, and the
 * decision script written for its shape (its scopes' policy lists and active positions), written
 * once per shape and found again without rebuilding its signature for the common plan.
 * @module
 */
import type { ConcurrencyPolicy, Policy } from '../limits/policy.js';
import type { Plan, PlanScope } from '../limits/store.js';
import { type DecideShape, decideScript, leaseSlots } from './decide-script.js';
import type { Throttle } from './riding-releases.js';
import { type Script, script } from './script-runner.js';
import { listId, scopeKey } from './store-keys.js';

/** A plan shape's decision script and the throttles it takes leases of. */
export interface Decider {
  readonly script: Script;
  readonly throttles: readonly Throttle[];
  /** The shape the script is written for. */
  readonly shape: DecideShape;
  /**
   * The policies of the shape's scopes, scope after scope: the sections a reply's dropped leases
   * name, from 1.
   */
  readonly sections: readonly Policy[];
  /** The script for several decisions in one call, written when first needed. */
  batched: Script | undefined;
}

/** A plan's active policies in plan order, the resource of each, and its decider. */
export interface Scoped {
  readonly policies: readonly Policy[];
  readonly resources: readonly string[];
  readonly decider: Decider;
}

/** What a plan of one account-level scope needs besides its key, the same for every such plan. */
interface SingleScope extends Scoped {
  readonly listId: string;
}

/** What the scripts are written for besides the plan: how the store talks to Redis. */
export interface ScriptSettings {
  readonly marginMs: number;
  readonly binary: boolean;
  readonly binaryArguments: boolean;
  readonly clock: boolean;
}

const actives = new WeakMap<readonly number[], string>();

/** The deciders of one store, by plan shape. */
export class PlanShapes {
  readonly #settings: ScriptSettings;
  readonly #deciders = new Map<string, Decider>();
  /** By policy list, then active positions: by {@link variantOf}. */
  readonly #singles = new WeakMap<readonly Policy[], WeakMap<readonly number[], SingleScope[]>>();

  constructor(settings: ScriptSettings) {
    this.#settings = settings;
  }

  /** The common plan: one scope of a client and account, kept by its list and active positions. */
  single(plan: Plan, scope: PlanScope): SingleScope {
    let byActive = this.#singles.get(scope.policies);
    if (byActive === undefined) {
      byActive = new WeakMap();
      this.#singles.set(scope.policies, byActive);
    }
    let variants = byActive.get(scope.active);
    if (variants === undefined) {
      variants = [];
      byActive.set(scope.active, variants);
    }
    const which = variantOf(plan);
    variants[which] ??= this.#newSingle(plan, scope);
    return variants[which];
  }

  #newSingle(plan: Plan, scope: PlanScope): SingleScope {
    const list = listId(scope.policies);
    const signature = `${list}0${activeArg(scope.active, scope.policies.length)};`;
    const policies = Object.freeze(scope.active.map((i) => scope.policies[i]!));
    return {
      listId: list,
      policies,
      resources: Object.freeze(policies.map(() => '')),
      decider: this.#decider(signature, plan, [0]),
    };
  }

  /**
   * Any other plan: its keys pushed to `keys`, each distinct scope key once (two scopes with one
   * key share one state).
   */
  several(plan: Plan, prefix: string, keys: string[]): Scoped {
    const policies: Policy[] = [];
    const resources: string[] = [];
    const indices: number[] = [];
    let signature = '';
    for (const scope of plan.scopes) {
      const list = listId(scope.policies);
      // Overridden limits count in the key of the list they override; the script has their numbers.
      const stateList = scope.state === undefined ? list : listId(scope.state);
      const key = scopeKey(prefix, scope.clientId, scope.accountCode, stateList, scope.resource);
      let index = keys.indexOf(key);
      if (index === -1) index = keys.push(key) - 1;
      indices.push(index);
      signature += `${list}${index}${activeArg(scope.active, scope.policies.length)}${shadowArg(scope)};`;
      for (const i of scope.active) {
        policies.push(scope.policies[i]!);
        resources.push(scope.resource);
      }
    }
    return { policies, resources, decider: this.#decider(signature, plan, indices) };
  }

  /** The decider of a plan shape by its signature, written the first time the shape comes. */
  #decider(signature: string, plan: Plan, indices: readonly number[]): Decider {
    // Without statuses an admission's script skips them; a costed decision and a peek have
    // scripts of their own too.
    const key = `${signature}${VARIANT_SUFFIX[variantOf(plan)]}`;
    let decider = this.#deciders.get(key);
    if (decider === undefined) {
      const { marginMs, binary, binaryArguments, clock } = this.#settings;
      const shape: DecideShape = {
        ...shapeOf(plan, indices, marginMs, binary),
        binaryArguments,
        clock,
      };
      // A peek takes no lease.
      const slots = shape.peek === true ? [] : leaseSlots(shape);
      const throttles = slots.map(([scope, position, uses]) => ({
        scope,
        position: position + 1,
        ttlMs: (shape.scopes[scope]![position] as ConcurrencyPolicy).leaseTtlMs,
        copies: uses,
      }));
      decider = {
        script: script(decideScript(shape)),
        throttles,
        shape,
        sections: shape.scopes.flat(),
        batched: undefined,
      };
      this.#deciders.set(key, decider);
    }
    return decider;
  }
}

/**
 * Which script a plan needs besides its shape: 0 the plain one, 1 without statuses, 2 and 3 the
 * same with a cost, 4 a peek and 5 a peek with a cost (a peek always reports statuses).
 */
function variantOf(plan: Plan): number {
  const costed = plan.cost !== undefined && plan.cost !== 1 ? 2 : 0;
  if (plan.peek === true) return 4 + costed / 2;
  return costed + (plan.statuses === false ? 1 : 0);
}

const VARIANT_SUFFIX = ['', '-', '$', '$-', '?', '?$'] as const;

/** The active positions, for a plan's signature: `*` for every position, else the list. */
function activeArg(active: readonly number[], count: number): string {
  let arg = actives.get(active);
  if (arg === undefined) {
    arg =
      active.length === count && active.every((p, i) => p === i) ? '*' : `(${active.join(',')})`;
    actives.set(active, arg);
  }
  return arg;
}

/** The shadow positions of a scope, for a plan's signature: `!` and them, or nothing. */
function shadowArg(scope: PlanScope): string {
  const { shadow } = scope;
  if (shadow === undefined) return '';
  let arg = '!';
  for (const [i, marked] of shadow.entries()) if (marked) arg += `${i}.`;
  return arg;
}

/**
 * The shape of a plan that its decision script is written for: each distinct key's policy list
 * in KEYS order, and the active positions in plan order.
 * @param indices - each plan scope's place among the distinct keys
 */
function shapeOf(
  plan: Plan,
  indices: readonly number[],
  marginMs: number,
  binary: boolean,
): DecideShape {
  const scopes: (readonly Policy[])[] = [];
  const work: [number, number][] = [];
  const shadow: boolean[] = [];
  for (const [i, scope] of plan.scopes.entries()) {
    const index = indices[i]!;
    scopes[index] ??= scope.policies;
    for (const position of scope.active) {
      work.push([index, position]);
      shadow.push(scope.shadow?.[position] === true);
    }
  }
  const peek = plan.peek === true;
  const costed = plan.cost !== undefined && plan.cost !== 1;
  const shape: DecideShape = {
    scopes,
    work,
    marginMs,
    binary,
    statuses: peek || plan.statuses !== false,
    costed,
    peek,
  };
  return plan.shadow === true && shadow.includes(true) ? { ...shape, shadow } : shape;
}
