/**
 * Overrides: per client (and optionally account), another preset or the default limits
 * multiplied, with an optional expiry, held by an {@link OverrideSource} that the limiter reads
 * on every decision (docs/limits.md, "Overrides").
 * @module
 */
import { aClock, type Clock, isClockTime, MAX_CLOCK_MS, systemClock } from '../clock.js';
import { InvalidRequestError } from '../errors/index.js';
import { describe, isArray } from '../internal/describe.js';
import {
  checkValue,
  conflictingKeys,
  INVALID,
  oneOf,
  type Rule,
  readOptions,
  refused,
  unreadable,
  worded,
} from '../internal/options.js';
import { checkedPreset } from './policy-selector.js';
import type { LimitPreset } from './presets.js';

/**
 * What an override does to a client's limits: `preset` names a preset of the source's `presets`
 * to use instead of the default one, or `multiplier` scales every limit of the default preset
 * (windows, rate and burst, throttle; never below 1). Exactly one of the two.
 */
export interface LimitOverride {
  /** A name among the source's `presets`. */
  readonly preset?: string | undefined;
  /** A number above 0, at most 1000: 2 doubles every limit, 0.5 halves it. */
  readonly multiplier?: number | undefined;
  /**
   * When the override ends, as a `Date` or milliseconds since the Unix epoch: from then on the
   * default limits apply again. Absent: until it is removed.
   */
  readonly expiresAt?: Date | number | undefined;
}

/** Whom an override is for: a client, with every account, or one account of theirs. */
export interface OverrideTarget {
  /** The client id, as requests carry it. */
  readonly clientId: string;
  /** One account of the client. Absent: every account, unless one has its own override. */
  readonly accountCode?: string | undefined;
}

/** An override as a source holds it: read, checked, with its expiry in milliseconds. */
export interface OverrideEntry {
  /** The client id. */
  readonly clientId: string;
  /** The account code; absent for every account of the client. */
  readonly accountCode?: string;
  /** The preset used instead of the default one; absent with a multiplier. */
  readonly preset?: string;
  /** The multiplier of the default limits; absent with a preset. */
  readonly multiplier?: number;
  /** When the override ends (ms since the Unix epoch); absent: never. */
  readonly expiresAt?: number;
}

/**
 * Where a limiter finds its overrides (the limiter's `overrides` option): a {@link MemoryOverrides}
 * for one process, or the Redis source for every instance of a service.
 */
export interface OverrideSource {
  /**
   * The override in force for a client and account at `now`: the account's own, else the
   * client's; undefined for none or an expired one. Synchronous and without I/O: it is asked on
   * every decision, from what this process holds.
   * @param clientId - a checked client id
   * @param accountCode - a checked account code
   * @param now - the limiter's clock reading (ms)
   */
  lookup(clientId: string, accountCode: string, now: number): OverrideEntry | undefined;
  /** The preset named `name`, for an override that names one; undefined when there is none. */
  preset(name: string): LimitPreset | undefined;
}

/** Longest client id and account code an override is set for, as the limiter's default. */
const MAX_ID_LENGTH = 256;

/** The largest multiplier: a thousand times the default limits. */
export const MAX_MULTIPLIER = 1000;

/**
 * Check an override and its target into the entry a source holds.
 * @param presets - the names an override may give
 * @param now - the source's clock reading: an expiry must be later
 * @throws InvalidRequestError `invalid_client_id` or `invalid_account_code` for an id a request
 *   could not have (empty, too long, not a string)
 * @throws ConfigurationError `invalid_override` for anything but exactly one of a preset name and a
 *   multiplier above 0 and at most 1000, or an expiry that is not a time after `now`;
 *   `unknown_preset` for a preset name the source does not have; `invalid_option` for an override
 *   that is not an object or has an unknown key
 * @internal
 */
export function overrideEntry(
  target: OverrideTarget,
  override: LimitOverride,
  presets: ReadonlyMap<string, LimitPreset>,
  now: number,
): OverrideEntry {
  const { clientId, accountCode } = overrideTarget(target);
  const read = readOptions(override, 'override', OVERRIDE_FIELDS, {
    required: true,
    example: '{ multiplier: 2 } or { preset: "live", expiresAt: new Date("2030-01-01") }',
  });
  const { preset, multiplier, expiresAt } = read;
  if ((preset === undefined) === (multiplier === undefined)) {
    throw conflictingKeys(
      'override',
      'exactly one of preset (a preset name) and multiplier (a number such as 2)',
      preset === undefined ? [] : ['preset', 'multiplier'],
      'invalid_override',
    );
  }
  if (preset !== undefined) checkValue(presetNameOf(presets), preset, 'preset');
  if (expiresAt !== undefined && expiresAt <= now) {
    throw refused(
      'expiresAt',
      `a time after now (${new Date(now).toISOString()}; leave it out for an override until removed)`,
      new Date(expiresAt).toISOString(),
      'invalid_override',
    );
  }
  return {
    clientId,
    ...(accountCode === undefined ? {} : { accountCode }),
    ...(preset === undefined ? { multiplier: multiplier! } : { preset }),
    ...(expiresAt === undefined ? {} : { expiresAt }),
  };
}

const OVERRIDE_FIELDS = {
  preset: {
    expected: 'a preset name (a non-empty string)',
    code: 'invalid_override',
    read: (value) => (typeof value === 'string' && value.length > 0 ? value : INVALID),
  } satisfies Rule<string>,
  multiplier: {
    expected: `a number above 0 and at most ${MAX_MULTIPLIER}, such as 2 or 0.5`,
    code: 'invalid_override',
    read: (value) =>
      typeof value === 'number' && value > 0 && value <= MAX_MULTIPLIER ? value : INVALID,
  } satisfies Rule<number>,
  expiresAt: {
    expected: `a Date or milliseconds since the Unix epoch, from 0 to ${MAX_CLOCK_MS}`,
    code: 'invalid_override',
    read(value) {
      const ms = typeof value === 'object' && value !== null ? timeOfDate(value) : value;
      return isClockTime(ms) ? ms : INVALID;
    },
  } satisfies Rule<number>,
};

/** The time a `Date` holds, read by `Date`'s own method; {@link INVALID} for any other object. */
function timeOfDate(value: object): number | typeof INVALID {
  try {
    return Date.prototype.getTime.call(value);
  } catch {
    return INVALID;
  }
}

/** The names of a source's presets, refused as `unknown_preset`. */
function presetNameOf(presets: ReadonlyMap<string, LimitPreset>): Rule<string> {
  const names = [...presets.keys()];
  return worded(
    oneOf(...names),
    names.length === 0
      ? 'the name of a preset of the source, which has none (give the source presets: { name: preset }, or override with a multiplier)'
      : `the name of a preset of the source, ${oneOf(...names).expected}`,
    'unknown_preset',
  );
}

/**
 * An override's target, checked as a request's ids are.
 * @throws InvalidRequestError `invalid_request`, `invalid_client_id` or `invalid_account_code`
 * @internal
 */
export function overrideTarget(target: OverrideTarget): {
  clientId: string;
  accountCode: string | undefined;
} {
  if (typeof target !== 'object' || target === null) {
    throw new InvalidRequestError(
      'invalid_request',
      `An override's target must be an object such as { clientId: "client-1" } or { clientId, accountCode }, got ${describe(target)}.`,
    );
  }
  let clientId: unknown;
  let accountCode: unknown;
  try {
    ({ clientId, accountCode } = target);
  } catch (cause) {
    throw new InvalidRequestError(
      'invalid_request',
      "Reading the override's target threw; pass plain values.",
      { cause },
    );
  }
  checkOverrideId(clientId, 'clientId', 'invalid_client_id');
  if (accountCode !== undefined)
    checkOverrideId(accountCode, 'accountCode', 'invalid_account_code');
  return { clientId: clientId as string, accountCode: accountCode as string | undefined };
}

function checkOverrideId(
  value: unknown,
  name: string,
  code: 'invalid_client_id' | 'invalid_account_code',
): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH) {
    throw new InvalidRequestError(
      code,
      `An override's ${name} must be a non-empty string of at most ${MAX_ID_LENGTH} characters, as requests carry it, got ${describe(value)}.`,
    );
  }
}

/**
 * The overrides a process holds, by client then account: what every source looks up from.
 * Expired entries are skipped, and dropped when met.
 * @internal
 */
export class OverrideTable {
  readonly #byClient = new Map<string, ClientOverrides>();
  #size = 0;

  /** Entries held, expired ones not yet met included. */
  get size(): number {
    return this.#size;
  }

  lookup(clientId: string, accountCode: string, now: number): OverrideEntry | undefined {
    const client = this.#byClient.get(clientId);
    if (client === undefined) return undefined;
    const own = client.accounts?.get(accountCode);
    if (own !== undefined) {
      if (own.expiresAt === undefined || own.expiresAt > now) return own;
      this.delete(clientId, accountCode);
    }
    const every = client.every;
    if (every === undefined) return undefined;
    if (every.expiresAt === undefined || every.expiresAt > now) return every;
    this.delete(clientId, undefined);
    return undefined;
  }

  get(clientId: string, accountCode: string | undefined): OverrideEntry | undefined {
    const client = this.#byClient.get(clientId);
    return accountCode === undefined ? client?.every : client?.accounts?.get(accountCode);
  }

  set(entry: OverrideEntry): void {
    let client = this.#byClient.get(entry.clientId);
    if (client === undefined) {
      client = {};
      this.#byClient.set(entry.clientId, client);
    }
    const { accountCode } = entry;
    if (accountCode === undefined) {
      if (client.every === undefined) this.#size++;
      client.every = entry;
      return;
    }
    client.accounts ??= new Map();
    if (!client.accounts.has(accountCode)) this.#size++;
    client.accounts.set(accountCode, entry);
  }

  /** Remove one override; true when there was one. */
  delete(clientId: string, accountCode: string | undefined): boolean {
    const client = this.#byClient.get(clientId);
    if (client === undefined) return false;
    let removed: boolean;
    if (accountCode === undefined) {
      removed = client.every !== undefined;
      client.every = undefined;
    } else {
      removed = client.accounts?.delete(accountCode) ?? false;
      if (client.accounts?.size === 0) client.accounts = undefined;
    }
    if (removed) this.#size--;
    if (client.every === undefined && client.accounts === undefined) {
      this.#byClient.delete(clientId);
    }
    return removed;
  }

  /** Every entry, the client's own before its accounts'. */
  *entries(): IterableIterator<OverrideEntry> {
    for (const client of this.#byClient.values()) {
      if (client.every !== undefined) yield client.every;
      if (client.accounts !== undefined) yield* client.accounts.values();
    }
  }

  clear(): void {
    this.#byClient.clear();
    this.#size = 0;
  }
}

interface ClientOverrides {
  every?: OverrideEntry | undefined;
  accounts?: Map<string, OverrideEntry> | undefined;
}

/** Options of {@link MemoryOverrides}. */
export interface MemoryOverridesOptions {
  /**
   * The presets an override may name, by name (e.g. `{ ...presets.byAccountType, partner }`).
   * @defaultValue none: only multipliers
   */
  presets?: Readonly<Record<string, LimitPreset>>;
  /** The time an expiry is checked against when set. @defaultValue {@link systemClock} */
  clock?: Clock;
}

const PRESETS_BY_NAME = 'an object of presets by name, such as { ...presets.byAccountType }';

/**
 * The `presets` option of a source: an object of presets by name, each checked as a limiter
 * checks a preset, read into a map.
 * @internal
 */
export const presetsByName: Rule<Map<string, LimitPreset>> = {
  expected: PRESETS_BY_NAME,
  read(value, name) {
    if (typeof value !== 'object' || value === null || isArray(value)) return INVALID;
    let entries: Array<[string, unknown]>;
    try {
      entries = Object.entries(value);
    } catch (cause) {
      throw unreadable(name, PRESETS_BY_NAME, value, cause);
    }
    const presets = new Map<string, LimitPreset>();
    for (const [key, preset] of entries) {
      const { label, policies, rules } = checkedPreset(preset, `${name}.${key}`);
      presets.set(key, Object.freeze({ name: label, policies, rules }) as LimitPreset);
    }
    return presets;
  },
};

/**
 * Overrides held in this process: set and removed at once, seen by every limiter given this
 * source. For several instances of a service, use the Redis source.
 * @example
 * ```ts
 * const overrides = new MemoryOverrides({ presets: presets.byAccountType });
 * const limiter = createLimiter({ preset: presets.byAccountType, overrides });
 * overrides.set({ clientId: 'client-1' }, { multiplier: 2, expiresAt: Date.now() + 86_400_000 });
 * overrides.set({ clientId: 'client-2', accountCode: 'ACME' }, { preset: 'live' });
 * overrides.delete({ clientId: 'client-1' });
 * ```
 */
export class MemoryOverrides implements OverrideSource {
  readonly #table = new OverrideTable();
  readonly #presets: ReadonlyMap<string, LimitPreset>;
  readonly #clock: Clock;

  /**
   * @param options - the presets an override may name, and the clock
   * @throws ConfigurationError `invalid_option` for options that are not an object, an unknown
   *   key, or presets that are not an object of presets
   */
  constructor(options: MemoryOverridesOptions = {}) {
    const read = readOptions(
      options,
      'MemoryOverrides',
      { presets: presetsByName, clock: aClock },
      { defaults: { clock: systemClock } },
    );
    this.#presets = read.presets ?? new Map();
    this.#clock = read.clock;
  }

  /**
   * Set the override of a client (every account) or of one account, replacing the one it had.
   * @param target - `{ clientId }` or `{ clientId, accountCode }`
   * @param override - `{ preset }` or `{ multiplier }`, and optionally `expiresAt`
   * @returns the override as held
   * @throws InvalidRequestError `invalid_client_id` / `invalid_account_code` for an empty or
   *   overlong id
   * @throws ConfigurationError `invalid_override` for an override without exactly one of a preset
   *   and a multiplier (above 0, at most 1000) or with an expiry that has passed; `unknown_preset`
   *   for a preset this source does not have
   */
  set(target: OverrideTarget, override: LimitOverride): OverrideEntry {
    const entry = overrideEntry(target, override, this.#presets, this.#clock.now());
    this.#table.set(entry);
    return entry;
  }

  /**
   * Remove the override of a client (its own, for every account) or of one account.
   * @returns whether there was one
   * @throws InvalidRequestError for a target whose ids a request could not have
   */
  delete(target: OverrideTarget): boolean {
    const { clientId, accountCode } = overrideTarget(target);
    return this.#table.delete(clientId, accountCode);
  }

  /**
   * The override set for exactly this target (an account's own, or the client's), expired or not.
   * @throws InvalidRequestError for a target whose ids a request could not have
   */
  get(target: OverrideTarget): OverrideEntry | undefined {
    const { clientId, accountCode } = overrideTarget(target);
    return this.#table.get(clientId, accountCode);
  }

  /** Every override held, expired ones not yet met included. */
  list(): OverrideEntry[] {
    return [...this.#table.entries()];
  }

  /** {@inheritDoc OverrideSource.lookup} */
  lookup(clientId: string, accountCode: string, now: number): OverrideEntry | undefined {
    return this.#table.lookup(clientId, accountCode, now);
  }

  /** {@inheritDoc OverrideSource.preset} */
  preset(name: string): LimitPreset | undefined {
    return this.#presets.get(name);
  }
}
