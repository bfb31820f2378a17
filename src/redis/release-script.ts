/**
 * Giving leases back: the release script, and the same loop at the head of every decision script
 * that takes a throttle's leases, so that a release can travel with the next decision.
 *
 * Each lease is given as three arguments: how many lease sets hold it (one per throttle of its
 * plan; they are the next KEYS, in order), how many members it has in each (one per time its plan
 * named the throttle), and its id (the issuing store's instance number and counter). The members
 * are the id, then `id.2`, `id.3` and so on. Each member is one `ZREM`: a lease that already
 * expired, or a set that is gone, is left alone, so releasing twice does nothing. A set keeps its
 * expiry.
 * @module
 */

/**
 * Lua statements that give back the leases described from `ARGV[firstArg]` on, whose lease sets
 * are `KEYS[firstKey]` on; they count the members removed into `released`. Expects the locals
 * `call`, `keys` and `argv` (`redis.call`, `KEYS`, `ARGV`) and `released` to be declared.
 * @param firstKey - the Lua expression of the first lease set's index in KEYS
 * @param firstArg - the index of the first lease's first argument in ARGV
 * @returns the Lua source
 */
export function releaseLoop(firstKey: string, firstArg: number): string {
  return [
    'do',
    `  local k, a = ${firstKey}, ${firstArg}`,
    '  while argv[a] do',
    '    local sets, uses, lease = argv[a] + 0, argv[a + 1] + 0, argv[a + 2]',
    '    for s = 1, sets do',
    "      released = released + call('ZREM', keys[k], lease)",
    "      for u = 2, uses do released = released + call('ZREM', keys[k], lease .. '.' .. u) end",
    '      k = k + 1',
    '    end',
    '    a = a + 3',
    '  end',
    'end',
  ].join('\n');
}

/**
 * Lua source of the release script: one `EVALSHA` gives back one lease or several. KEYS: the lease
 * sets of every lease, lease after lease; ARGV: three arguments per lease (see the module).
 */
export const RELEASE_SCRIPT = [
  'local call, keys, argv = redis.call, KEYS, ARGV',
  'local released = 0',
  releaseLoop('1', 1),
  'return released',
].join('\n');

/**
 * The arguments that describe one lease to {@link releaseLoop}.
 * @param sets - how many lease sets hold it
 * @param uses - how many members it has in each
 * @param id - its id
 * @returns the three arguments
 */
export function releaseArgs(sets: number, uses: number, id: string): [string, string, string] {
  return [String(sets), String(uses), id];
}
