/**
 * A Map kept to a number of entries by dropping the one written longest ago.
 * @module
 */

/**
 * Set `key` to `value` as the newest entry of `map`, then drop the oldest entries while it holds
 * more than `max`. @internal
 */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) {
    const oldest = map.keys().next();
    if (oldest.done === true) return;
    map.delete(oldest.value);
  }
}
