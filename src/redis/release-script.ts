/**
 * Giving leases back: the release script, and the same loop at the head of every decision script,
 * so that a release can travel with the next decision.
 *
 * A throttle keeps its leases in its scope's value (see state-codec.ts). Giving one back appends a
 * record to that value ({@link RELEASE_RECORD}: the throttle's position, the lease's expiry and
 * its id) with one `APPEND`, which leaves the value's expiry alone; the next decision on the scope
 * removes the lease and writes the value back without the record. A record whose lease is not
 * there (already given back, or expired) removes nothing, so releasing twice does nothing. A scope
 * that is gone held no lease any more: the `APPEND` made the key afresh, and it is deleted again.
 *
 * Each throttle of a lease is one KEY (its scope's key) and its records, as many as the lease's plan
 * named the throttle. For a client that sends arguments as bytes (see
 * {@link RedisScriptClient.binaryArguments}) the records come packed, as one argument, and the
 * script appends them as they are: no number to read, nothing to pack. Otherwise they come as four
 * arguments: the throttle's position among the scope's policies (from 1), the lease's expiry (ms),
 * the lease id, and how many times the plan named the throttle (one record each).
 * @module
 */
import type { RedisScriptClient } from './redis-client.js';
import { RELEASE_RECORD } from './state-codec.js';

/**
 * Arguments per throttle of a given-back lease: its packed records, or their four numbers.
 * @param binary - whether the arguments go as bytes
 */
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
 * of each throttle of every lease, lease after lease; ARGV: the records of each KEY (see the
 * module).
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
