/**
 * The release script: gives back the leases of one admitted request, one `EVALSHA` per release.
 *
 * KEYS: the lease sets (one per throttle) that hold the lease. ARGV: the lease's members (its id,
 * the issuing store's instance number and counter, once per time the plan named the throttle).
 * Each is one `ZREM`: a lease that already expired, or a set that is gone, is left alone, so
 * releasing twice does nothing. The set keeps its expiry.
 * @module
 */

/** Lua source of the release script. */
export const RELEASE_SCRIPT = `
local released = 0
for s = 1, #KEYS do
  released = released + redis.call('ZREM', KEYS[s], unpack(ARGV))
end
return released
`;
