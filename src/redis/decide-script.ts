/**
 * The decision script: one `EVALSHA` per request checks the blocks, every policy and the leases of
 * every scope of a plan, and records all or nothing, atomically (a Lua script runs alone on the
 * server). It follows the memory store step for step, so that both give identical decisions.
 *
 * KEYS: one per scope of the plan, all carrying the same hash tag (one Redis Cluster slot).
 * ARGV: the time in ms (`''` for the server's `TIME`), the expiry margin in ms, the lease id
 * (instance number and counter), then per scope: the policies' kinds as one string of digits
 * (`1` window, `2` rate, `3` concurrency; one per position), the active positions as one string
 * (`*` for all; otherwise one character per position, its code being 48 + the position; or, for
 * long lists, a comma and the positions separated by commas), then each
 * policy's numbers in order (window: limit, windowMs; rate: perSecond, burst; concurrency: max,
 * leaseTtlMs, retryAfterMs). Few arguments, because each costs a conversion in Lua.
 *
 * Reply: an array of numbers, each an integer reply when it is a whole number and a `%.17g` string
 * otherwise (so that every double comes back exact): admitted (1 or 0), the decision time, the
 * reason (0 none, 1 limit, 2 blocked), Retry-After in seconds, the refusing policy's place among
 * the active ones (from 1; 0 none), then remaining and reset-after (ms) of each active policy in
 * plan order.
 * @module
 */
import { STATE_CODEC_LUA } from './state-codec.js';

/** Lua source of the decision script. */
export const DECIDE_SCRIPT = `${STATE_CODEC_LUA}
-- The float tolerance of the rate policy and of Retry-After rounding (store.ts RETRY_TOLERANCE_MS).
local EPSILON = 1e-6
-- Globals read once: each global lookup costs in the script's protected environment.
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local unpack_struct, pack_struct = struct.unpack, struct.pack
local tonumber, byte, argv = tonumber, string.byte, ARGV

-- Step 1. The time: the caller's, or the server's own clock (one timeline for every app server).
local t
if argv[1] == '' then
  local clock = redis.call('TIME')
  t = tonumber(clock[1]) * 1000 + floor(tonumber(clock[2]) / 1000)
else
  t = tonumber(argv[1])
end
local margin = tonumber(argv[2])
local lease_instance = tonumber(argv[3])
local lease_counter = tonumber(argv[4])

-- Step 2. Read the plan and each scope's state (one GET per distinct key). A fresh state has one
-- empty section per policy; each section also carries its policy's numbers (p1, p2, p3). Time
-- never goes backwards for a scope: a clock behind its latest decision counts as standing still.
local states = {}
local by_key = {}
local work = {}
local a = 5
for s = 1, #KEYS do
  local kind_string, active_string = argv[a], argv[a + 1]
  local np = #kind_string
  local key = KEYS[s]
  a = a + 2
  local state = by_key[key]
  local kinds = { byte(kind_string, 1, np) }
  for i = 1, np do kinds[i] = kinds[i] - 48 end
  if not state then
    state = decode(redis.call('GET', key), kinds)
    if not state then
      local sections = {}
      for i = 1, np do sections[i] = section(kinds[i], 0, 0, 0, 0) end
      state = { latest = 0, sections = sections, raw = '', key = false, dirty = false }
    end
    state.key = key
    by_key[key] = state
    states[#states + 1] = state
  end
  local sections, raw = state.sections, state.raw
  for i = 1, np do
    local sec = sections[i]
    sec.p1, sec.p2 = tonumber(argv[a]), tonumber(argv[a + 1])
    if kinds[i] == 3 then
      sec.p3 = tonumber(argv[a + 2])
      a = a + 3
    else
      a = a + 2
    end
    sec.added = 0
    sec.raw = raw
    sec.state = state
  end
  if state.latest > t then t = state.latest end
  -- The active positions of this scope, flattened into the work list in plan order.
  if active_string == '*' then
    for i = 1, np do work[#work + 1] = sections[i] end
  elseif byte(active_string, 1) == 44 then
    for p in string.gmatch(active_string, '%d+') do work[#work + 1] = sections[tonumber(p) + 1] end
  else
    for j = 1, #active_string do work[#work + 1] = sections[byte(active_string, j) - 47] end
  end
end

-- Stored entry j of a window section (an admission time).
local function stored_time(sec, j)
  return (unpack_struct('<d', sec.raw, sec.offset + (j - 1) * 8))
end

-- Index of the oldest stored admission still inside the window at t (binary search; n + 1 when none).
local function window_head(sec, raw)
  local cutoff = t - sec.p2
  -- Most often nothing has left the window: the oldest admission is still inside.
  if sec.n == 0 or unpack_struct('<d', raw, sec.offset) > cutoff then return 1 end
  local lo, hi = 2, sec.n + 1
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if unpack_struct('<d', raw, sec.offset + (mid - 1) * 8) <= cutoff then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- Stored leases of a concurrency section that have not expired at t, as entry indices.
local function live_leases(sec, raw)
  local live = {}
  for j = 1, sec.n do
    if unpack_struct('<d', raw, sec.offset + (j - 1) * 24) > t then live[#live + 1] = j end
  end
  return live
end

-- Step 3. Each active policy's own earliest admission time (blocks aside), as the memory store
-- computes it: a window's oldest admission that keeps it full leaving it, the rate policy's
-- allowance, or a free lease (else the policy's announced backoff). Step 4 on the way: refuse when
-- any policy is full or blocked; the one that frees up last names the refusal, on a tie the one
-- whose own limit frees up last (not a block), then the later one in plan order (the more
-- specific limit).
local earliest, refusing, refusing_own = t, 0, t
for k = 1, #work do
  local sec = work[k]
  local o
  if sec.kind == 1 then
    if not sec.head then sec.head = window_head(sec, sec.raw) end
    local excess = sec.n - sec.head + 1 - sec.p1
    if excess < 0 then o = t else o = stored_time(sec, sec.head + excess) + sec.p2 end
  elseif sec.kind == 2 then
    local allow_at = sec.a - (sec.p2 - 1) * (1000 / sec.p1)
    if allow_at - EPSILON <= t then o = t else o = allow_at end
  else
    if not sec.live then sec.live = live_leases(sec, sec.raw) end
    if #sec.live < sec.p1 then o = t else o = t + sec.p3 end
  end
  sec.own = o
  local at = max(o, sec.blocked)
  if at > t and (at > earliest or (at == earliest and o >= refusing_own)) then
    earliest = at
    refusing = k
    refusing_own = o
  end
end
-- Only a block refuses when the refusing policy itself has room.
local blocked_only = refusing_own <= t

-- A number for the reply: an integer reply when whole, else an exact decimal string.
local function num(x)
  if x % 1 == 0 and x < 9e15 then return x end
  return string.format('%.17g', x)
end

local reply
if refusing == 0 then
  -- Step 5a. Admitted: every active policy records the request; concurrency policies take a lease.
  for k = 1, #work do
    local sec = work[k]
    if sec.kind == 2 then
      sec.a = max(sec.a, t) + 1000 / sec.p1
    else
      sec.added = sec.added + 1
    end
    sec.state.dirty = true
  end
  reply = { 1, num(t), 0, 0, 0 }
else
  -- Step 5b. Refused: record nothing. The statuses are read before the blocks change.
  reply = { 0, num(t), blocked_only and 2 or 1, max(1, ceil((earliest - t - EPSILON) / 1000)), refusing }
end

-- Remaining and reset-after (ms) of every active policy, after the decision.
for k = 1, #work do
  local sec = work[k]
  local remaining, reset
  if sec.kind == 1 then
    local count = sec.n - sec.head + 1 + sec.added
    remaining = max(0, sec.p1 - count)
    if count == 0 then
      reset = 0
    else
      local newest
      if sec.added > 0 then newest = t else newest = stored_time(sec, sec.n) end
      reset = max(0, newest + sec.p2 - t)
    end
  elseif sec.kind == 2 then
    local interval = 1000 / sec.p1
    local backlog = max(sec.a, t) - t
    remaining = max(0, min(sec.p2, floor((sec.p2 * interval - backlog) / interval + EPSILON)))
    reset = max(0, sec.a - t)
  else
    remaining = max(0, sec.p1 - (#sec.live + sec.added))
    reset = 0
  end
  reply[4 + 2 * k] = num(remaining)
  reply[5 + 2 * k] = num(reset)
end

if refusing ~= 0 then
  -- Block every policy that has no room until the instant its refusal announces.
  for k = 1, #work do
    local sec = work[k]
    local o = sec.own
    if o > t then
      local untill = t + max(1, ceil((o - t - EPSILON) / 1000)) * 1000
      if untill > sec.blocked then
        sec.blocked = untill
        sec.state.dirty = true
      end
    end
  end
end

-- Step 6. Write back each changed scope with one SET, its expired entries dropped, expiring on its
-- own once every policy of the scope is fresh again (plus the margin); a scope already fresh
-- again is deleted. Writes come last, so a failure before them records nothing.
for s = 1, #states do
  local state = states[s]
  if state.dirty then
    local raw = state.raw
    local parts = { pack_struct(HEADER, t, #state.sections) }
    local horizon = 0
    for i = 1, #state.sections do
      local sec = state.sections[i]
      local added = sec.added
      horizon = max(horizon, sec.blocked)
      if sec.kind == 1 then
        local head = sec.head or window_head(sec, raw)
        local kept = sec.n - head + 1
        parts[#parts + 1] = pack_struct(SECTION, 1, sec.blocked, 0, kept + added)
        if kept > 0 then
          parts[#parts + 1] = string.sub(raw, sec.offset + (head - 1) * 8, sec.offset + sec.n * 8 - 1)
        end
        if added > 0 then
          local entry = pack_struct('<d', t)
          for _ = 1, added do parts[#parts + 1] = entry end
          horizon = max(horizon, t + sec.p2)
        elseif kept > 0 then
          horizon = max(horizon, stored_time(sec, sec.n) + sec.p2)
        end
      elseif sec.kind == 2 then
        parts[#parts + 1] = pack_struct(SECTION, 2, sec.blocked, sec.a, 0)
        horizon = max(horizon, sec.a)
      else
        local live = sec.live or live_leases(sec, raw)
        parts[#parts + 1] = pack_struct(SECTION, 3, sec.blocked, 0, #live + added)
        for j = 1, #live do
          local from = sec.offset + (live[j] - 1) * 24
          parts[#parts + 1] = string.sub(raw, from, from + 23)
          horizon = max(horizon, (unpack_struct('<d', raw, from)))
        end
        if added > 0 then
          local expiry = t + sec.p2
          local entry = pack_struct('<ddd', expiry, lease_instance, lease_counter)
          for _ = 1, added do parts[#parts + 1] = entry end
          horizon = max(horizon, expiry)
        end
      end
    end
    if horizon > t then
      local ttl = ceil(horizon - t) + margin
      redis.call('SET', state.key, table.concat(parts), 'PX', tostring(ttl))
    else
      redis.call('DEL', state.key)
    end
  end
end

return reply
`;
