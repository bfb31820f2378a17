/**
 * The reset script: every key of a client and account, or of one resource of theirs, deleted in
 * one atomic call (see docs/redis-store.md).
 * @module
 */
import { script } from './script-runner.js';

/**
 * KEYS[1]: the client and account's hash tag, never a key itself: it sends the call to the node
 * that holds their keys (one slot in Redis Cluster). ARGV[1]: the `SCAN MATCH` pattern of the keys
 * to delete. Replies how many it deleted. SCAN walks the whole database, in one call: a reset is
 * an operator's action, not a request's.
 */
export const RESET_SCRIPT = script(
  [
    'local call, pattern = redis.call, ARGV[1]',
    "local cursor, cleared = '0', 0",
    'repeat',
    "  local page = call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)",
    '  cursor = page[1]',
    '  local found = page[2]',
    "  for i = 1, #found do cleared = cleared + call('DEL', found[i]) end",
    "until cursor == '0'",
    'return cleared',
  ].join('\n'),
);
