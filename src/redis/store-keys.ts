/**
 * The keys of the Redis store: a scope's key, its hash tag, and the id of each policy list (see
 * docs/redis-store.md for the layout).
 * @module
 */
import { createHash } from 'node:crypto';
import { LONE_SURROGATE } from '../internal/lone-surrogate.js';
import { type Policy, policyListIdentity } from '../limits/policy.js';
import { LAYOUT_VERSION } from './state-codec.js';

const listIds = new WeakMap<readonly Policy[], string>();

/**
 * A policy list's part of its scopes' keys: 16 hex digits of the SHA-1 of the layout version and
 * the list's identity. A changed list starts afresh, as in the memory store; so does a changed
 * layout, whose values are never read, only expire.
 * @param policies - the scope's policy list
 */
export function listId(policies: readonly Policy[]): string {
  let id = listIds.get(policies);
  if (id === undefined) {
    id = createHash('sha1')
      .update(`${LAYOUT_VERSION}:${policyListIdentity(policies)}`)
      .digest('hex')
      .slice(0, 16);
    listIds.set(policies, id);
  }
  return id;
}

/**
 * The key of one scope.
 * @param prefix - the store's prefix
 * @param resource - the resource key; `''` for the client and account as a whole
 */
export function scopeKey(
  prefix: string,
  clientId: string,
  accountCode: string,
  list: string,
  resource: string,
): string {
  const tag = scopeTag(prefix, clientId, accountCode);
  return resource === '' ? `${tag}:${list}` : `${tag}:${list}:${resource}`;
}

/**
 * What every key of a client and account starts with: the prefix and their hash tag.
 * @param prefix - the store's prefix
 */
export function scopeTag(prefix: string, clientId: string, accountCode: string): string {
  // Every key of one decision hashes to one Redis Cluster slot. The length prefix keeps one pair of
  // client id and account code from forging another pair's tag.
  const c = escapeTag(clientId);
  return `${prefix}{${c.length}:${c}${escapeTag(accountCode)}}`;
}

/**
 * The `SCAN MATCH` pattern of the keys a reset clears: every key of the client and account, or
 * those of one resource under any policy list (a list id is 16 hex digits).
 * @param tag - from {@link scopeTag}
 * @param resource - a resource key; undefined for every key
 */
export function resetPattern(tag: string, resource: string | undefined): string {
  const head = `${globEscape(tag)}:`;
  return resource === undefined ? `${head}*` : `${head}${'?'.repeat(16)}:${globEscape(resource)}`;
}

/** A string matched as itself in a Redis glob pattern. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

// Every `%` starts an escape, so two different ids never meet; a lone surrogate would reach Redis
// as U+FFFD, so it is written `%u` and its four hex digits.
const TAG_ESCAPES = new RegExp(`[{}%]|${LONE_SURROGATE.source}`, 'g');

function escapeTag(value: string): string {
  if (!/[{}%\uD800-\uDFFF]/.test(value)) return value;
  return value.replace(TAG_ESCAPES, (c) => {
    const code = c.charCodeAt(0).toString(16).toUpperCase();
    return code.length === 4 ? `%u${code}` : `%${code}`;
  });
}
