/**
 * The plan the limiter writes afresh for each plain check on the memory store, which reads a plan
 * only while it decides (docs/limits.md, "Inside the limiter").
 * @module
 */
import { MemoryStore } from './memory/store.js';
import type { PolicyGroup } from './policy-selector.js';
import type { LimitStore, Plan, PlanScope } from './store.js';

/** A plan of one scope, made once and written afresh by each check. @internal */
export class ReusablePlan {
  // `state` as an own field, undefined but for an override: the store reads it on every plan.
  readonly #global = {
    clientId: '',
    accountCode: '',
    resource: '',
    policies: [],
    active: [],
    state: undefined,
  } as { -readonly [K in keyof PlanScope]: PlanScope[K] };
  // Cost and peek as own fields: the store reads them on every plan, and an own field is read
  // faster than an absent one.
  readonly #plan: { -readonly [K in keyof Plan]: Plan[K] } = {
    scopes: [this.#global],
    statuses: true,
    cost: 1,
    peek: false,
  };

  write(
    clientId: string,
    accountCode: string,
    group: PolicyGroup,
    active: readonly number[],
    statuses: boolean,
  ): Plan {
    const global = this.#global;
    global.clientId = clientId;
    global.accountCode = accountCode;
    global.policies = group.list;
    global.state = group.state;
    global.active = active;
    this.#plan.statuses = statuses;
    return this.#plan;
  }
}

/**
 * Whether the limiter may hand `store` its {@link ReusablePlan}: the memory store itself, not a
 * subclass (which may keep the plan). A Proxy whose getPrototypeOf trap throws is some other store.
 * @internal
 */
export function isPlainMemoryStore(store: LimitStore): boolean {
  try {
    return Object.getPrototypeOf(store) === MemoryStore.prototype;
  } catch {
    return false;
  }
}
