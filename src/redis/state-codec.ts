/**
 * The layout of one scope's state in Redis, as Lua shared by the decision and release scripts.
 *
 * One string value per scope (a client and account, or one of their resources) holds the state of
 * every policy of the scope, packed with Redis's `struct` library so that a decision reads it with
 * one `GET` and writes it with one `SET`:
 *
 * - header `<dI4`: the latest decision time (ms; time never goes backwards for the scope) and the
 *   number of sections, one per policy position;
 * - per section `<BddI4`: the kind (1 window, 2 rate, 3 concurrency), the instant the policy is
 *   blocked until (0 when not), the rate policy's theoretical arrival time (0 otherwise) and the
 *   number of entries that follow;
 * - entries: a window's admission times (`<d`, oldest first, only those still inside the window
 *   when written); a concurrency policy's leases (`<ddd`: expiry, then the lease id as the issuing
 *   store's instance number and its counter). A rate policy has none.
 * @module
 */

/** Lua: constants and the decoder. Prepended to both scripts. */
export const STATE_CODEC_LUA = `
-- The packed layout (see state-codec.ts): a header, then one section per policy position.
local HEADER = '<dI4'
local HEADER_SIZE = 12
local SECTION = '<BddI4'
local SECTION_SIZE = 21
-- Bytes per entry, by kind: window (an admission time), rate (none), concurrency (expiry, id).
local ENTRY_SIZE = { 8, 0, 24 }

-- A section as a table with every field the scripts set, so that the table is sized once.
local function section(kind, blocked, a, n, offset)
  return {
    kind = kind, blocked = blocked, a = a, n = n, offset = offset,
    p1 = 0, p2 = 0, p3 = 0, added = 0, own = 0, raw = false, state = false, head = false, live = false,
  }
end

-- Decode a stored value into { latest, sections = { { kind, blocked, a, n, offset } } }, offset
-- being where the section's entries start. Returns nil for an absent value and for anything not in
-- this layout or not matching the expected kinds (when given): such a value is replaced by a fresh
-- state, never misread.
local function decode(raw, kinds)
  if not raw then return nil end
  local len = #raw
  if len < HEADER_SIZE then return nil end
  local latest, count, pos = struct.unpack(HEADER, raw)
  if kinds and count ~= #kinds then return nil end
  local sections = {}
  for i = 1, count do
    if pos + SECTION_SIZE - 1 > len then return nil end
    local kind, blocked, a, n
    kind, blocked, a, n, pos = struct.unpack(SECTION, raw, pos)
    local width = ENTRY_SIZE[kind]
    if width == nil or (kinds and kinds[i] ~= kind) then return nil end
    sections[i] = section(kind, blocked, a, n, pos)
    pos = pos + n * width
    if pos > len + 1 then return nil end
  end
  if pos ~= len + 1 then return nil end
  return { latest = latest, sections = sections, raw = raw, key = false, dirty = false }
end
`;
