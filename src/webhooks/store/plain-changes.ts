import type { SubscriptionChange } from '../subscriptions/subscription.js';

/**
 * Pages of changes the library itself made of frozen plain data (a repository's rows), which the
 * index may take without checking each field for a getter. Not part of the public API. @module
 */

// Pages, not subscriptions: a start over a million subscriptions marks a hundred of them.
const plainPages = new WeakSet<readonly SubscriptionChange[]>();

/**
 * Freeze a page of changes that the caller made itself, each change and its subscription frozen
 * already and holding only data properties (object literals and arrays from `JSON.parse`), and
 * mark it so.
 * @internal
 */
export function markPlainChanges(changes: SubscriptionChange[]): readonly SubscriptionChange[] {
  Object.freeze(changes);
  plainPages.add(changes);
  return changes;
}

/** Whether the page was marked by {@link markPlainChanges}. @internal */
export function isPlainChanges(changes: readonly SubscriptionChange[]): boolean {
  return plainPages.has(changes);
}
