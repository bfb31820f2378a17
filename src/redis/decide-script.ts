/**
 * The decision script: one `EVALSHA` per request checks the blocks, every policy and the leases of
 * every scope of a plan, and records all or nothing, atomically (a Lua script runs alone on the
 * server). It follows the memory store step for step, so that both give identical decisions.
 *
 * KEYS: one per scope of the plan, all carrying the same hash tag (one Redis Cluster slot).
 * ARGV: the time in ms (`''` for the server's `TIME`), the expiry margin in ms, the lease id
 * (instance number and counter), then per scope: the number of policies, four numbers per policy
 * (kind 1 window: limit, windowMs, 0; kind 2 rate: perSecond, burst, 0; kind 3 concurrency: max,
 * leaseTtlMs, retryAfterMs), the number of active positions and the positions (from 0).
 *
 * Reply: one string of comma-separated numbers (`%.17g`, so every double comes back exact):
 * admitted (1 or 0), the decision time, the reason (0 none, 1 limit, 2 blocked), Retry-After in
 * seconds, the refusing policy's place among the active ones (from 1; 0 none), then remaining and
 * reset-after (ms) of each active policy in plan order.
 * @module
 */
import { STATE_CODEC_LUA } from './state-codec.js';

/** Lua source of the decision script. */
export const DECIDE_SCRIPT = `${STATE_CODEC_LUA}
-- The float tolerance of the rate policy and of Retry-After rounding (store.ts RETRY_TOLERANCE_MS).
local EPSILON = 1e-6
local function retry_after_seconds(ms)
  return math.max(1, math.ceil((ms - EPSILON) / 1000))
end

-- Step 1. The time: the caller's, or the server's own clock (one timeline for every app server).
local t
if ARGV[1] == '' then
  local clock = redis.call('TIME')
  t = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
else
  t = tonumber(ARGV[1])
end
local margin = tonumber(ARGV[2])
local lease_instance = tonumber(ARGV[3])
local lease_counter = tonumber(ARGV[4])

-- Step 2. Read the plan and each scope's state (one GET per distinct key). A fresh state has one
-- empty section per policy. Time never goes backwards for a scope: a clock behind the latest
-- decision on it counts as standing still.
local states = {}
local by_key = {}
local work = {}
local a = 5
for s = 1, #KEYS do
  local np = tonumber(ARGV[a])
  a = a + 1
  local specs, kinds = {}, {}
  for i = 1, np do
    local kind = tonumber(ARGV[a])
    specs[i] = { kind = kind, p1 = tonumber(ARGV[a + 1]), p2 = tonumber(ARGV[a + 2]), p3 = tonumber(ARGV[a + 3]) }
    kinds[i] = kind
    a = a + 4
  end
  local key = KEYS[s]
  local state = by_key[key]
  if not state then
    state = decode(redis.call('GET', key), kinds)
    if not state then
      local sections = {}
      for i = 1, np do sections[i] = { kind = kinds[i], blocked = 0, a = 0, n = 0, offset = 0 } end
      state = { latest = 0, sections = sections, raw = '' }
    end
    state.key = key
    state.specs = specs
    by_key[key] = state
    states[#states + 1] = state
  end
  if state.latest > t then t = state.latest end
  -- The active positions of this scope, flattened into the work list in plan order.
  local na = tonumber(ARGV[a])
  a = a + 1
  for j = 1, na do
    local i = tonumber(ARGV[a]) + 1
    a = a + 1
    work[#work + 1] = { sec = state.sections[i], spec = state.specs[i], state = state }
  end
end

-- Stored entry j of a window section (an admission time).
local function stored_time(raw, sec, j)
  return (struct.unpack('<d', raw, sec.offset + (j - 1) * 8))
end

-- Index of the oldest stored admission still inside the window at t (binary search; n + 1 when none).
local function window_head(raw, sec, window_ms)
  local cutoff = t - window_ms
  local lo, hi = 1, sec.n + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if stored_time(raw, sec, mid) <= cutoff then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- Stored leases of a concurrency section that have not expired at t, as entry indices.
local function live_leases(raw, sec)
  local live = {}
  for j = 1, sec.n do
    local expiry = struct.unpack('<d', raw, sec.offset + (j - 1) * 24)
    if expiry > t then live[#live + 1] = j end
  end
  return live
end

-- Step 3. Each active policy's own earliest admission time (blocks aside), as the memory store
-- computes it: a window's oldest admission that keeps it full leaving it, the rate policy's
-- allowance, or a free lease (else the policy's announced backoff).
for k = 1, #work do
  local w = work[k]
  local sec, spec, raw = w.sec, w.spec, w.state.raw
  sec.added = sec.added or {}
  if sec.kind == 1 then
    sec.head = sec.head or window_head(raw, sec, spec.p2)
    local count = sec.n - sec.head + 1
    local excess = count - spec.p1
    if excess < 0 then w.own = t else w.own = stored_time(raw, sec, sec.head + excess) + spec.p2 end
  elseif sec.kind == 2 then
    local allow_at = sec.a - (spec.p2 - 1) * (1000 / spec.p1)
    if allow_at - EPSILON <= t then w.own = t else w.own = allow_at end
  else
    sec.live = sec.live or live_leases(raw, sec)
    if #sec.live < spec.p1 then w.own = t else w.own = t + spec.p3 end
  end
end

-- Step 4. Refuse when any policy is full or blocked: the one that frees up last names the refusal
-- (ties go to the later policy: the more specific limit).
local earliest, refusing, blocked_only = t, 0, true
for k = 1, #work do
  local w = work[k]
  local at = math.max(w.own, w.sec.blocked)
  if at > t and at >= earliest then
    earliest = at
    refusing = k
    blocked_only = w.own <= t
  end
end

-- Remaining and reset-after (ms) of one active policy, after the decision.
local function status(w)
  local sec, spec = w.sec, w.spec
  if sec.kind == 1 then
    local count = sec.n - sec.head + 1 + #sec.added
    if count == 0 then return math.max(0, spec.p1 - count), 0 end
    local newest = sec.added[#sec.added] or stored_time(w.state.raw, sec, sec.n)
    return math.max(0, spec.p1 - count), math.max(0, newest + spec.p2 - t)
  elseif sec.kind == 2 then
    local interval = 1000 / spec.p1
    local backlog = math.max(sec.a, t) - t
    local remaining = math.floor((spec.p2 * interval - backlog) / interval + EPSILON)
    return math.max(0, math.min(spec.p2, remaining)), math.max(0, sec.a - t)
  else
    return math.max(0, spec.p1 - (#sec.live + #sec.added)), 0
  end
end

local reply = {}
if refusing == 0 then
  -- Step 5a. Admitted: every active policy records the request; concurrency policies take a lease.
  for k = 1, #work do
    local w = work[k]
    local sec, spec = w.sec, w.spec
    if sec.kind == 1 then
      sec.added[#sec.added + 1] = t
    elseif sec.kind == 2 then
      sec.a = math.max(sec.a, t) + 1000 / spec.p1
    else
      sec.added[#sec.added + 1] = struct.pack('<ddd', t + spec.p2, lease_instance, lease_counter)
    end
    w.state.dirty = true
  end
  reply[1] = '1'
  reply[2] = string.format('%.17g', t)
  reply[3] = '0'
  reply[4] = '0'
  reply[5] = '0'
else
  -- Step 5b. Refused: record nothing. The statuses are read before the blocks change.
  reply[1] = '0'
  reply[2] = string.format('%.17g', t)
  reply[3] = blocked_only and '2' or '1'
  reply[4] = string.format('%.17g', retry_after_seconds(earliest - t))
  reply[5] = tostring(refusing)
end
for k = 1, #work do
  local remaining, reset = status(work[k])
  reply[#reply + 1] = string.format('%.17g', remaining)
  reply[#reply + 1] = string.format('%.17g', reset)
end
if refusing ~= 0 then
  -- Block every policy that has no room until the instant its refusal announces.
  for k = 1, #work do
    local w = work[k]
    if w.own > t then
      local untill = t + retry_after_seconds(w.own - t) * 1000
      if untill > w.sec.blocked then
        w.sec.blocked = untill
        w.state.dirty = true
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
    local parts = { struct.pack(HEADER, t, #state.sections) }
    local horizon = 0
    for i = 1, #state.sections do
      local sec, spec = state.sections[i], state.specs[i]
      local added = sec.added or {}
      horizon = math.max(horizon, sec.blocked)
      if sec.kind == 1 then
        local head = sec.head or window_head(raw, sec, spec.p2)
        local kept = sec.n - head + 1
        parts[#parts + 1] = struct.pack(SECTION, 1, sec.blocked, 0, kept + #added)
        if kept > 0 then
          parts[#parts + 1] = string.sub(raw, sec.offset + (head - 1) * 8, sec.offset + sec.n * 8 - 1)
        end
        for j = 1, #added do parts[#parts + 1] = struct.pack('<d', added[j]) end
        local newest = added[#added] or (kept > 0 and stored_time(raw, sec, sec.n)) or nil
        if newest then horizon = math.max(horizon, newest + spec.p2) end
      elseif sec.kind == 2 then
        parts[#parts + 1] = struct.pack(SECTION, 2, sec.blocked, sec.a, 0)
        horizon = math.max(horizon, sec.a)
      else
        local live = sec.live or live_leases(raw, sec)
        parts[#parts + 1] = struct.pack(SECTION, 3, sec.blocked, 0, #live + #added)
        for j = 1, #live do
          local from = sec.offset + (live[j] - 1) * 24
          parts[#parts + 1] = string.sub(raw, from, from + 23)
          horizon = math.max(horizon, (struct.unpack('<d', raw, from)))
        end
        for j = 1, #added do
          parts[#parts + 1] = added[j]
          horizon = math.max(horizon, (struct.unpack('<d', added[j])))
        end
      end
    end
    if horizon > t then
      local ttl = math.ceil(horizon - t) + margin
      redis.call('SET', state.key, table.concat(parts), 'PX', string.format('%d', ttl))
    else
      redis.call('DEL', state.key)
    end
  end
end

return table.concat(reply, ',')
`;
