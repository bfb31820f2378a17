/** The subscriptions under one index key: one alone, a short array, or a Set. @module */
import type { Subscription } from './subscription.js';

/** One subscription, a short array of them, or a Set of them. */
export type SubscriptionLeaf = Subscription | Subscription[] | Set<Subscription>;

// Above this many, an array becomes a Set so that removal stays O(1).
const ARRAY_LIMIT = 16;

/** Add `subscription` to the leaf under `key` (the caller never adds one twice). */
export function addToLeaf<K>(
  map: Map<K, SubscriptionLeaf>,
  key: K,
  subscription: Subscription,
): void {
  const leaf = map.get(key);
  if (leaf === undefined) {
    map.set(key, subscription);
  } else if (Array.isArray(leaf)) {
    if (leaf.length < ARRAY_LIMIT) leaf.push(subscription);
    else map.set(key, new Set([...leaf, subscription]));
  } else if (leaf instanceof Set) {
    leaf.add(subscription);
  } else {
    map.set(key, [leaf, subscription]);
  }
}

/** Remove `subscription` from the leaf under `key`, deleting the key when nothing is left. */
export function removeFromLeaf<K>(
  map: Map<K, SubscriptionLeaf>,
  key: K,
  subscription: Subscription,
): void {
  const leaf = map.get(key);
  if (leaf === subscription) {
    map.delete(key);
  } else if (Array.isArray(leaf)) {
    const at = leaf.indexOf(subscription);
    if (at === -1) return;
    leaf[at] = leaf[leaf.length - 1]!;
    leaf.pop();
    if (leaf.length === 1) map.set(key, leaf[0]!);
  } else if (leaf instanceof Set) {
    leaf.delete(subscription);
    if (leaf.size === 1) map.set(key, leaf.values().next().value!);
  }
}

/** Append every subscription of a leaf (or none) to `out`. */
export function appendLeaf(leaf: SubscriptionLeaf | undefined, out: Subscription[]): void {
  if (leaf === undefined) return;
  if (Array.isArray(leaf)) {
    for (let i = 0; i < leaf.length; i++) out.push(leaf[i]!);
  } else if (leaf instanceof Set) {
    for (const subscription of leaf) out.push(subscription);
  } else {
    out.push(leaf);
  }
}
