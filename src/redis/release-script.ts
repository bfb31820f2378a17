/**
 * The release script, and the same loop at the head of every decision script so a release can
 * ride on the next decision (see docs/redis-store.md).
 * @module
 */
import type { RedisScriptClient } from './redis-client.js';
import { RELEASE_RECORD } from './state-codec.js';

/** Arguments per throttle of a given-back lease: its packed records, or their four numbers. */
export function releaseArgs(binary: boolean): number {
  return binary ? 1 : 4;
}

/**
 * Lua statements that give back the leases described from `ARGV[firstArg]` on, whose scopes are
 * `KEYS[firstKey]` on: up to the last argument, or `count` of them. Expects the locals `call`,
 * `keys`, `argv`, `pack_struct` and `rep` (`redis.call`, `KEYS`, `ARGV`, `struct.pack`,
 * `string.rep`) to be declared.
 * @param firstKey - the Lua expression of the first scope's index in KEYS
 * @param firstArg - the Lua expression of the first lease's first argument's index in ARGV
 * @param binary - whether each throttle's records come packed, as one argument
 * @param count - the Lua expression of how many throttles' records to give back; all that
 *   follow when absent
 * @returns the Lua source
 */
export function releaseLoop(
  firstKey: string,
  firstArg: string,
  binary: boolean,
  count?: string,
): string {
  const record = binary
    ? ['    local record = argv[a]']
    : [
        `    local record = pack_struct('${RELEASE_RECORD}', argv[a] + 0, argv[a + 1] + 0, argv[a + 2] + 0)`,
        '    local copies = argv[a + 3] + 0',
        '    if copies > 1 then record = rep(record, copies) end',
      ];
  return [
    'do',
    `  local k, a = ${firstKey}, ${firstArg}`,
    count === undefined ? '  while argv[a] do' : `  for _ = 1, ${count} do`,
    ...record,
    "    if call('APPEND', keys[k], record) == #record then call('DEL', keys[k]) end",
    `    k, a = k + 1, a + ${releaseArgs(binary)}`,
    '  end',
    'end',
  ].join('\n');
}

/**
 * Lua source of the release script: one `EVALSHA` gives back one lease or several. KEYS: the scope
 * of each throttle of every lease, lease after lease; ARGV: the records of each KEY (see
 * docs/redis-store.md).
 * @param binary - whether the records come packed (a client with
 *   {@link RedisScriptClient.binaryArguments})
 * @returns the Lua source
 */
export function releaseScript(binary: boolean): string {
  return [
    'local call, keys, argv = redis.call, KEYS, ARGV',
    'local pack_struct, rep = struct.pack, string.rep',
    releaseLoop('1', '1', binary),
  ].join('\n');
}
