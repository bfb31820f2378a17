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
local instance = tonumber(ARGV[1])
local counter = tonumber(ARGV[2])
local released = 0
for s = 1, #KEYS do
  -- Step 1. Read the scope; skip it when it is gone or not in our layout.
  local state = decode(redis.call('GET', KEYS[s]), nil)
  if state then
    -- Step 2. Copy every section, leaving out the concurrency entries that carry this lease id.
    local raw = state.raw
    local parts = { string.sub(raw, 1, HEADER_SIZE) }
    local changed = false
    for i = 1, #state.sections do
      local sec = state.sections[i]
      if sec.kind ~= 3 then
        -- Not a concurrency policy: the section as it is, header and entries.
        parts[#parts + 1] = string.sub(raw, sec.offset - SECTION_SIZE, sec.offset + sec.n * ENTRY_SIZE[sec.kind] - 1)
      else
        local kept = {}
        for j = 1, sec.n do
          local from = sec.offset + (j - 1) * 24
          local _, id_instance, id_counter = struct.unpack('<ddd', raw, from)
          if id_instance == instance and id_counter == counter then
            changed = true
            released = released + 1
          else
            kept[#kept + 1] = string.sub(raw, from, from + 23)
          end
        end
        parts[#parts + 1] = struct.pack(SECTION, 3, sec.blocked, sec.a, #kept)
        parts[#parts + 1] = table.concat(kept)
      end
    end
    -- Step 3. Write it back only when a lease was dropped, keeping the key's expiry.
    if changed then redis.call('SET', KEYS[s], table.concat(parts), 'KEEPTTL') end
  end
end
return released
`;
