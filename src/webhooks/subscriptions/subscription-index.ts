/** The account-scoped subscription index (see docs/webhooks.md). @module */
import { isConfigurationError } from '../../errors/index.js';
import { describe, isArray } from '../../internal/describe.js';
import { checkValue, INVALID, type Rule, refused, worded } from '../../internal/options.js';
import { isInstance, readSafely } from '../../internal/read-once.js';
import { parseEventKind, parseEventPattern } from '../events/event-kind.js';
import type { Subscription } from './subscription.js';
import type { SubscriptionLeaf } from './subscription-leaf.js';
import { addToLeaf, appendLeaf, removeFromLeaf } from './subscription-leaf.js';

/** An event to route: whose it is, what kind, and the property it concerns (if any). */
export interface SubscriptionEvent {
  /** The account the event belongs to. */
  readonly accountCode: string;
  /** The event kind, `<topic>/<event>`. */
  readonly kind: string;
  /** The property the event concerns; without one, only subscriptions without propertyIds match. */
  readonly propertyId?: string | undefined;
}

/** How {@link SubscriptionIndex.match} chooses, besides the event. */
export interface MatchOptions {
  /**
   * The event is of the account as a whole, for every subscription whatever its `propertyIds`
   * (the service's operational events). Left out: an event without a property matches only
   * subscriptions without `propertyIds`.
   */
  readonly everyProperty?: boolean;
  /** Leave out the subscription with this id (the one an operational event is about). */
  readonly except?: string;
}

/** What a {@link SubscriptionIndex} holds. */
export interface SubscriptionIndexStats {
  /** Subscriptions held. */
  subscriptions: number;
  /** Accounts with at least one subscription. */
  accounts: number;
  /** Distinct patterns: each kind named, and each topic of those kinds or wildcards. */
  patterns: number;
  /** Distinct property ids named by held subscriptions. */
  propertyIds: number;
}

interface PatternKey {
  readonly key: number;
  // For a kind, the key of its topic's wildcard; for a wildcard, its own key.
  readonly topicKey: number;
  readonly topicText: string;
  readonly wildcard: boolean;
  // Users of the pattern (for a wildcard, also its topic's kinds held): at zero the entry goes.
  uses: number;
}

interface AccountLeaves {
  readonly everyProperty: Map<number, SubscriptionLeaf>;
  readonly byProperty: Map<number, Map<number, SubscriptionLeaf>>;
  count: number;
}

let replacePlain: (
  index: SubscriptionIndex,
  subscription: Subscription,
) => Subscription | undefined;

/**
 * {@link SubscriptionIndex.replace} for a subscription of a page marked by `markPlainChanges`
 * (plain-changes.ts): frozen, data properties only. Not part of the public API.
 * @internal
 */
export function replacePlainSubscription(
  index: SubscriptionIndex,
  subscription: Subscription,
): Subscription | undefined {
  return replacePlain(index, subscription);
}

/**
 * Subscriptions of many accounts, matched to events.
 * @example
 * ```ts
 * const index = new SubscriptionIndex();
 * index.add(subscription);
 * for (const s of index.match({ accountCode: 'ACME', kind: 'folio/created', propertyId: 'BER' })) {
 *   deliver(s.endpointUrl);
 * }
 * ```
 */
export class SubscriptionIndex {
  readonly #byId = new Map<string, Subscription>();
  readonly #accounts = new Map<string, AccountLeaves>();
  readonly #patterns = new Map<string, PatternKey>();
  #nextKey = 0;
  // Property ids as small integers, counted by use: integer keys compare without reading strings.
  readonly #properties = new Map<string, { readonly number: number; uses: number }>();
  #nextProperty = 0;

  /** The number of subscriptions held. */
  get size(): number {
    return this.#byId.size;
  }

  /** What the index holds, for monitoring its memory; unused patterns and ids are forgotten. */
  stats(): SubscriptionIndexStats {
    return {
      subscriptions: this.#byId.size,
      accounts: this.#accounts.size,
      patterns: this.#patterns.size,
      propertyIds: this.#properties.size,
    };
  }

  /** The subscription with this id. */
  get(id: string): Subscription | undefined {
    return this.#byId.get(id);
  }

  /**
   * Add a subscription. The index freezes it (and its arrays): change a subscription with
   * {@link SubscriptionIndex.replace}.
   * @param subscription - a subscription whose events are valid patterns
   * @throws ConfigurationError `duplicate_subscription_id` when the id is held already, and
   * `invalid_subscription` when a field is malformed or is a getter rather than plain data
   */
  add(subscription: Subscription): void {
    this.#check(subscription);
    if (this.#byId.has(subscription.id)) {
      throw refused('subscription.id', NOT_HELD, subscription.id, 'duplicate_subscription_id');
    }
    this.#insert(frozenData(subscription));
  }

  /**
   * Add a subscription, or put it in place of the one with the same id.
   * @returns the version it replaced, or undefined
   * @throws ConfigurationError `invalid_subscription` when a field is malformed or is a getter
   * rather than plain data (nothing changes)
   */
  replace(subscription: Subscription): Subscription | undefined {
    this.#check(subscription);
    const held = frozenData(subscription);
    const previous = this.remove(held.id);
    this.#insert(held);
    return previous;
  }

  // replace() for a subscription frozen already and known to hold data properties only: its
  // fields and patterns are checked as in replace(), its property descriptors are not.
  #replacePlain(subscription: Subscription): Subscription | undefined {
    this.#check(subscription);
    if (!Object.isFrozen(subscription)) return this.replace(subscription);
    const previous = this.remove(subscription.id);
    this.#insert(subscription);
    return previous;
  }

  static {
    replacePlain = (index, subscription) => index.#replacePlain(subscription);
  }

  /** Remove a subscription; returns it, or undefined when none had that id. */
  remove(id: string): Subscription | undefined {
    const subscription = this.#byId.get(id);
    if (subscription === undefined) return undefined;
    const keys = this.#keysOf(subscription.events);
    const account = this.#accounts.get(subscription.accountCode)!;
    if (subscription.propertyIds === undefined) {
      for (const key of keys) removeFromLeaf(account.everyProperty, key, subscription);
    } else {
      for (const propertyId of distinct(subscription.propertyIds)) {
        const property = this.#properties.get(propertyId)!;
        const leaves = account.byProperty.get(property.number)!;
        for (const key of keys) removeFromLeaf(leaves, key, subscription);
        if (leaves.size === 0) account.byProperty.delete(property.number);
        property.uses -= 1;
        if (property.uses === 0) this.#properties.delete(propertyId);
      }
    }
    account.count -= 1;
    if (account.count === 0) this.#accounts.delete(subscription.accountCode);
    this.#byId.delete(id);
    for (const text of distinct(subscription.events)) this.#release(text);
    return subscription;
  }

  /**
   * Every subscription that must receive the event, each once, in no particular order. Only the
   * event's account is searched. Never throws: a malformed event matches nothing.
   * @param options - `everyProperty`: match whatever the subscriptions' `propertyIds`; `except`:
   *   leave out the subscription with this id
   */
  match(event: SubscriptionEvent, options: MatchOptions = {}): Subscription[] {
    const out = this.#match(event, options.everyProperty === true);
    const { except } = options;
    return except === undefined ? out : out.filter((subscription) => subscription.id !== except);
  }

  #match(event: SubscriptionEvent, everyProperty: boolean): Subscription[] {
    const out: Subscription[] = [];
    if (typeof event !== 'object' || event === null) return out;
    const accountCode = readSafely(event, 'accountCode');
    const kindText = readSafely(event, 'kind');
    const propertyId = readSafely(event, 'propertyId');
    if (typeof accountCode !== 'string' || typeof kindText !== 'string') return out;
    const account = this.#accounts.get(accountCode);
    if (account === undefined) return out;
    let key = -1;
    let topicKey: number;
    const known = this.#patterns.get(kindText);
    if (known !== undefined) {
      if (known.wildcard) return out; // a pattern is not the kind of an event
      key = known.key;
      topicKey = known.topicKey;
    } else {
      // No subscription names this kind; only its topic's wildcard can match.
      const kind = parseEventKind(kindText);
      if (!kind.ok) return out;
      const wildcard = this.#patterns.get(`${kind.value.topic}/*`);
      if (wildcard === undefined) return out;
      topicKey = wildcard.key;
    }
    appendLeaf(account.everyProperty.get(key), out);
    appendLeaf(account.everyProperty.get(topicKey), out);
    if (everyProperty) {
      // A subscription of several properties is under each of them: each is kept once.
      const named = new Set<Subscription>();
      for (const leaves of account.byProperty.values()) {
        const found: Subscription[] = [];
        appendLeaf(leaves.get(key), found);
        appendLeaf(leaves.get(topicKey), found);
        for (const subscription of found) named.add(subscription);
      }
      out.push(...named);
      return out;
    }
    const property = typeof propertyId === 'string' ? this.#properties.get(propertyId) : undefined;
    if (property !== undefined) {
      const leaves = account.byProperty.get(property.number);
      if (leaves !== undefined) {
        appendLeaf(leaves.get(key), out);
        appendLeaf(leaves.get(topicKey), out);
      }
    }
    return out;
  }

  #insert(subscription: Subscription): void {
    const keys = this.#acquireKeys(subscription.events);
    let account = this.#accounts.get(subscription.accountCode);
    if (account === undefined) {
      account = { everyProperty: new Map(), byProperty: new Map(), count: 0 };
      this.#accounts.set(subscription.accountCode, account);
    }
    const propertyIds = subscription.propertyIds;
    if (propertyIds === undefined) {
      for (let k = 0; k < keys.length; k++)
        addToLeaf(account.everyProperty, keys[k]!, subscription);
    } else {
      for (const propertyId of distinct(propertyIds)) {
        let property = this.#properties.get(propertyId);
        if (property === undefined) {
          property = { number: this.#nextProperty++, uses: 0 };
          this.#properties.set(propertyId, property);
        }
        property.uses += 1;
        let leaves = account.byProperty.get(property.number);
        if (leaves === undefined) {
          leaves = new Map();
          account.byProperty.set(property.number, leaves);
        }
        for (let k = 0; k < keys.length; k++) addToLeaf(leaves, keys[k]!, subscription);
      }
    }
    account.count += 1;
    this.#byId.set(subscription.id, subscription);
  }

  // Acquires each distinct pattern once and returns the keys of #keysOf, reading each pattern once.
  #acquireKeys(events: readonly string[]): number[] {
    if (events.length > SHORT) {
      for (const text of distinct(events)) this.#acquire(text);
      return this.#keysOf(events);
    }
    const patterns: PatternKey[] = [];
    for (let i = 0; i < events.length; i++) {
      const text = events[i]!;
      if (i === 0 || events.lastIndexOf(text, i - 1) === -1) patterns.push(this.#acquire(text));
    }
    return shortKeys(patterns);
  }

  // Throws, changing nothing, unless the subscription can be held.
  #check(subscription: Subscription): void {
    checkShape(subscription);
    const events = subscription.events;
    for (let at = 0; at < events.length; at++) {
      const text = events[at]!;
      if (this.#patterns.has(text)) continue;
      checkValue(PATTERN, text, `${nameOf(subscription)}.events[${at}]`);
    }
  }

  // Its wildcards and the kinds none of them covers; linear, as a subscription may name thousands.
  #keysOf(events: readonly string[]): number[] {
    if (events.length <= SHORT) {
      const patterns: PatternKey[] = [];
      for (let i = 0; i < events.length; i++) patterns.push(this.#patterns.get(events[i]!)!);
      return shortKeys(patterns);
    }
    const patterns: PatternKey[] = [];
    const wildcards = new Set<number>();
    for (const text of events) {
      const pattern = this.#patterns.get(text)!;
      if (pattern.wildcard) wildcards.add(pattern.key);
      patterns.push(pattern);
    }
    const keys = new Set<number>();
    for (const pattern of patterns) {
      if (!pattern.wildcard && wildcards.has(pattern.topicKey)) continue;
      keys.add(pattern.key);
    }
    return [...keys];
  }

  // Counts one more use of the pattern (parsed by #check), entering it when new; returns it.
  #acquire(text: string): PatternKey {
    const known = this.#patterns.get(text);
    if (known !== undefined) {
      known.uses += 1;
      return known;
    }
    const parsed = parseEventPattern(text);
    if (!parsed.ok) throw new Error('unreachable: #check has parsed the pattern');
    const topicText = `${parsed.value.topic}/*`;
    let topic = this.#patterns.get(topicText);
    if (topic === undefined) {
      const key = this.#nextKey++;
      topic = { key, topicKey: key, topicText, wildcard: true, uses: 0 };
      this.#patterns.set(topicText, topic);
    }
    topic.uses += 1;
    if (parsed.value.type === 'topic') return topic;
    const key = this.#nextKey++;
    const pattern = { key, topicKey: topic.key, topicText, wildcard: false, uses: 1 };
    this.#patterns.set(text, pattern);
    return pattern;
  }

  #release(text: string): void {
    const pattern = this.#patterns.get(text)!;
    pattern.uses -= 1;
    if (pattern.uses > 0) return;
    this.#patterns.delete(text);
    if (!pattern.wildcard) this.#release(pattern.topicText);
  }
}

const CODE = 'invalid_subscription';

// A leaf holds one subscription, an array or a Set of them: a subscription that is itself an
// array or a Set would be taken for a leaf.
const SUBSCRIPTION: Rule<Readonly<Record<string, unknown>>> = {
  expected: 'a plain object { id, accountCode, events, propertyIds? }, not an array or a Set',
  code: CODE,
  read: (value) =>
    typeof value === 'object' && value !== null && !isArray(value) && !isInstance(value, Set)
      ? (value as Record<string, unknown>)
      : INVALID,
};

const ID: Rule<string> = {
  expected: 'a non-empty string',
  code: CODE,
  read: (value) => (typeof value === 'string' && value !== '' ? value : INVALID),
};

const ACCOUNT_CODE: Rule<string> = {
  expected: 'a string',
  code: CODE,
  read: (value) => (typeof value === 'string' ? value : INVALID),
};

const STRINGS: Rule<readonly string[]> = {
  expected: 'an array of strings',
  code: CODE,
  read: (value) => (allStrings(value) ? (value as readonly string[]) : INVALID),
};

const PROPERTY_IDS = worded(STRINGS, 'an array of strings, or left out');

const PATTERN: Rule<string> = {
  expected:
    'a well-formed pattern, <topic>/<event> or <topic>/* (validate requests with validateSubscriptionRequest())',
  code: CODE,
  read: (value) => (parseEventPattern(value).ok ? (value as string) : INVALID),
};

// What a value must be, for the refusals that depend on what the index holds or how the fields are held.
const NOT_HELD = 'an id no held subscription has (change a held one with replace())';

const PLAIN =
  'a plain object holding its id, accountCode, events and propertyIds (and their elements) as data, not getters';

const nameOf = (subscription: Subscription): string => `subscription ${describe(subscription.id)}`;

// Read as unknown: a subscription given from JavaScript may be anything; a getter that throws is
// no plain data.
function checkShape(subscription: unknown): void {
  const s = checkValue(SUBSCRIPTION, subscription, 'subscription');
  try {
    const { id, accountCode, events, propertyIds } = s;
    checkValue(ID, id, 'subscription.id');
    const name = `subscription ${describe(id)}`;
    checkValue(ACCOUNT_CODE, accountCode, `${name}.accountCode`);
    checkValue(STRINGS, events, `${name}.events`);
    if (propertyIds !== undefined) checkValue(PROPERTY_IDS, propertyIds, `${name}.propertyIds`);
  } catch (error) {
    if (isConfigurationError(error)) throw error;
    throw refused('subscription', PLAIN, subscription, CODE);
  }
}

function allStrings(list: unknown): boolean {
  if (!isArray(list)) return false;
  for (let i = 0; i < list.length; i++) if (typeof list[i] !== 'string') return false;
  return true;
}

/** Lists up to this long are handled with arrays and linear scans rather than Sets. */
const SHORT = 16;

// The keys of #keysOf for a short list of patterns (repeats allowed), in their order.
function shortKeys(patterns: readonly PatternKey[]): number[] {
  const keys: number[] = [];
  for (let i = 0; i < patterns.length; i++) {
    const pattern = patterns[i]!;
    if (!pattern.wildcard && hasWildcard(patterns, pattern.topicKey)) continue;
    if (!keys.includes(pattern.key)) keys.push(pattern.key);
  }
  return keys;
}

function hasWildcard(patterns: readonly PatternKey[], key: number): boolean {
  for (let i = 0; i < patterns.length; i++) {
    if (patterns[i]!.wildcard && patterns[i]!.key === key) return true;
  }
  return false;
}

// The values once each, in order; short lists (the usual case) without allocating a Set.
function distinct(values: readonly string[]): readonly string[] {
  if (values.length > SHORT) return [...new Set(values)];
  for (let i = 1; i < values.length; i++) {
    if (values.lastIndexOf(values[i]!, i - 1) !== -1) return [...new Set(values)];
  }
  return values;
}

// A getter survives freezing and could answer differently at removal, stranding the keys: plain
// data only.
function frozenData(subscription: Subscription): Subscription {
  Object.freeze(subscription.events);
  if (subscription.propertyIds !== undefined) Object.freeze(subscription.propertyIds);
  Object.freeze(subscription);
  const data =
    plain(subscription, 'id') &&
    plain(subscription, 'accountCode') &&
    plain(subscription, 'events') &&
    (subscription.propertyIds === undefined || plain(subscription, 'propertyIds')) &&
    plainElements(subscription.events) &&
    (subscription.propertyIds === undefined || plainElements(subscription.propertyIds));
  if (!data) throw refused(nameOf(subscription), PLAIN, subscription, CODE);
  return subscription;
}

function plain(holder: object, key: PropertyKey): boolean {
  const descriptor = Object.getOwnPropertyDescriptor(holder, key);
  return descriptor !== undefined && 'value' in descriptor;
}

function plainElements(list: readonly string[]): boolean {
  for (let i = 0; i < list.length; i++) if (!plain(list, i)) return false;
  return true;
}
