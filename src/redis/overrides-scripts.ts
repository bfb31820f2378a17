/**
 * The overrides in Redis: one hash, `<prefix>overrides`, of one JSON entry per target plus a
 * `version` field that every change rewrites, and the three scripts that read and change it
 * (docs/redis.md, "Overrides across instances").
 * @module
 */
import type { OverrideEntry } from '../limits/overrides.js';
import { type Script, script } from './script-runner.js';

/** The hash field that changes with every set and delete; no target's field is this. */
export const VERSION_FIELD = 'version';

/** The key of the hash: store keys always have a `{` right after the prefix, this never does. */
export function overridesKey(prefix: string): string {
  return `${prefix}overrides`;
}

/** A target's field: the JSON array `[clientId]` or `[clientId, accountCode]`. */
export function overrideField(clientId: string, accountCode: string | undefined): string {
  return JSON.stringify(accountCode === undefined ? [clientId] : [clientId, accountCode]);
}

/** An entry's value: the override alone, `{"multiplier":2}` or `{"preset":"live","expiresAt":…}`. */
export function overrideValue(entry: OverrideEntry): string {
  const { preset, multiplier, expiresAt } = entry;
  return JSON.stringify({
    ...(preset === undefined ? { multiplier } : { preset }),
    ...(expiresAt === undefined ? {} : { expiresAt }),
  });
}

/**
 * The version when it is still `ARGV[1]`; otherwise the whole hash (`HGETALL`). A hash without a
 * version (written by hand, or empty) is always read whole.
 */
export const refreshScript: Script = script(`
local version = redis.call('HGET', KEYS[1], '${VERSION_FIELD}')
if version and version == ARGV[1] then return version end
return redis.call('HGETALL', KEYS[1])
`);

/**
 * Write `ARGV[2]` at field `ARGV[1]` and the version `ARGV[3]`, after removing the entries whose
 * expiry is at or before `ARGV[4]` (ms). Values that do not parse are left for their owner.
 */
export const setScript: Script = script(`
local now = tonumber(ARGV[4])
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local field = all[i]
  if field ~= '${VERSION_FIELD}' and field ~= ARGV[1] then
    local ok, entry = pcall(cjson.decode, all[i + 1])
    if ok and type(entry) == 'table' and type(entry.expiresAt) == 'number'
      and entry.expiresAt <= now then
      redis.call('HDEL', KEYS[1], field)
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], '${VERSION_FIELD}', ARGV[3])
return 1
`);

/** Remove field `ARGV[1]`; when there was one, write the version `ARGV[2]`. Replies 1 or 0. */
export const deleteScript: Script = script(`
local removed = redis.call('HDEL', KEYS[1], ARGV[1])
if removed == 1 then redis.call('HSET', KEYS[1], '${VERSION_FIELD}', ARGV[2]) end
return removed
`);
