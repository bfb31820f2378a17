/**
 * The release script: gives back the leases of one admitted request, one `EVALSHA` per release.
 *
 * KEYS: the scopes whose concurrency policies hold the lease. ARGV: the lease id (the issuing
 * store's instance number and its counter). A lease that already expired, or a scope that is gone,
 * is left alone, so releasing twice does nothing. The key keeps its expiry.
 * @module
 */
import { STATE_CODEC_LUA } from './state-codec.js';

/** Lua source of the release script. */
export const RELEASE_SCRIPT = `${STATE_CODEC_LUA}
local instance, counter = ARGV[1] + 0, ARGV[2] + 0
local unpack_struct, pack_struct, sub = struct.unpack, struct.pack, string.sub
local released = 0
for s = 1, #KEYS do
  -- Step 1. Read the scope; skip it when it is gone or not in our layout.
  local raw = redis.call('GET', KEYS[s])
  local count = raw and #raw >= HEADER_SIZE and unpack_struct('<I4', raw, 9) or 0
  local size = HEADER_SIZE + SECTION_SIZE * count
  if count > 0 and #raw >= size then
    local fixed = { unpack_struct(fixed_format(count), raw) }
    fixed[#fixed] = nil
    -- Step 2. Copy every section's entries, leaving out the leases that carry this lease id.
    local parts = { '' }
    local offset = size + 1
    local valid, changed = true, false
    for i = 1, count do
      local v = i * 4 - 1
      local width = WIDTH[fixed[v]]
      if not width then
        valid = false
        break
      end
      local n = fixed[v + 3]
      local stop = offset + n * width
      if stop > #raw + 1 then
        valid = false
        break
      end
      if width ~= 24 then
        parts[#parts + 1] = sub(raw, offset, stop - 1)
      else
        local kept = 0
        for from = offset, stop - 1, 24 do
          local _, id_instance, id_counter = unpack_struct('<ddd', raw, from)
          if id_instance == instance and id_counter == counter then
            changed = true
            released = released + 1
          else
            parts[#parts + 1] = sub(raw, from, from + 23)
            kept = kept + 1
          end
        end
        fixed[v + 3] = kept
      end
      offset = stop
    end
    -- Step 3. Write it back only when a lease was dropped, keeping the key's expiry.
    if valid and changed and offset == #raw + 1 then
      parts[1] = pack_struct(fixed_format(count), unpack(fixed))
      redis.call('SET', KEYS[s], table.concat(parts), 'KEEPTTL')
    end
  end
end
return released
`;
