/**
 * Path canonicalisation: one pass over a raw request target yields its canonical segments, so every
 * spelling of a resource maps to one counter. Rules and reasons: `docs/routes.md`.
 * @module
 */
import { readOptions, wholeNumber } from '../internal/options.js';

/** The longest canonical path (before `?` or `#`) accepted; longer is malformed. */
export const DEFAULT_MAX_PATH_LENGTH = 2048;

/**
 * How many times longer than the longest canonical path the raw path may be (32 KiB at the
 * default); longer is malformed, so that a scan's work stays bounded.
 */
export const RAW_PER_CANONICAL = 16;

/**
 * A canonical version segment (`v1`, `v0-nsfh`, `v1beta`), ASCII case ignored; `vouchers` is not
 * one, so `v*` never swallows a literal.
 */
export const VERSION_SEGMENT_PATTERN: RegExp = /^v[0-9][0-9a-z-]*$/i;

/** Options of {@link canonicalPath}. */
export interface CanonicalPathOptions {
  /**
   * The longest path accepted, in characters of its canonical form, so that padding cannot dodge a
   * rule; the raw path may be up to {@link RAW_PER_CANONICAL} times this long.
   * @defaultValue {@link DEFAULT_MAX_PATH_LENGTH}
   */
  readonly maxPathLength?: number;
}

/** The raw text of the segment already is its canonical text with case kept. @internal */
export const SEGMENT_PLAIN = 1;
/** The raw text of the segment already is its canonical text with ASCII case folded. @internal */
export const SEGMENT_PLAIN_FOLDED = 2;
/** The canonical segment is a version segment. @internal */
export const SEGMENT_VERSION = 4;

/** Numbers stored per segment in {@link PathScanner.segments}: start, end, hash, flags. @internal */
export const SEGMENT_STRIDE = 4;

// Readings of a path: the literal one (no bit) is Express 5's, Koa's and Fastify 5's; each bit
// adds what some other router does.
/** `\` separates segments (Node's legacy `url.parse`, a WHATWG URL parser). @internal */
export const READ_BACKSLASH = 1;
/** `.` and `..` segments resolved (a WHATWG URL parser); used to refuse them in patterns. @internal */
export const READ_DOTS = 2;

/** A `\` before the query. @internal */
export const HAS_BACKSLASH = 1;
/** A `.` or `..` segment, raw or escaped. @internal */
export const HAS_DOT_SEGMENT = 2;
/** A `;` before the query. @internal */
export const HAS_SEMICOLON = 4;
/** An empty segment: a doubled or a trailing slash. @internal */
export const HAS_EMPTY_SEGMENT = 8;
/** An absolute-form target (`http://host/path`). @internal */
export const HAS_AUTHORITY = 16;
/** The canonical path is longer than the maximum (the scan answered -1 for that alone). @internal */
export const TOO_LONG = 32;

const SLASH = 0x2f;
const BACKSLASH = 0x5c;
const SEMICOLON = 0x3b;
// The Kelvin sign: the one non-ASCII character `toLowerCase()` makes ASCII (`k`), as find-my-way's
// `caseSensitive: false` does to the decoded path.
const KELVIN = 0x212a;
const K_LOWER = 0x6b;
const KELVIN_UTF8 = '%E2%84%AA';
const QUESTION = 0x3f;
const HASH = 0x23;
const PERCENT = 0x25;
const DOT = 0x2e;
const HEX = '0123456789ABCDEF';

const CONTROL = 0; // never allowed: the path is malformed
const UNRESERVED = 1; // kept as is (RFC 3986 section 2.3)
const ENCODE = 2; // written as upper-case %XX
const PCT = 3;
const CLASS = new Uint8Array(128).fill(ENCODE);
for (let c = 0; c < 0x20; c++) CLASS[c] = CONTROL;
CLASS[0x7f] = CONTROL;
for (const ch of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~') {
  CLASS[ch.charCodeAt(0)] = UNRESERVED;
}
CLASS[PERCENT] = PCT;

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x57;
  return -1;
}

// Version segment recogniser: v, digit, then [0-9a-z-]*.
const V_START = 0;
const V_AFTER_V = 1;
const V_ACCEPT = 2;
const V_DEAD = 3;

// FNV-1a of the folded canonical text, masked to a small integer so a Map keyed by it never boxes.
const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 16777619;
const HASH_MASK = 0x3fffffff;

/**
 * Reads raw targets into canonical segments (bounds, hash, flags) in a reused `Int32Array`,
 * building strings only on request: a lookup that matches nothing allocates nothing. Not reentrant.
 * @internal
 */
export class PathScanner {
  /** Longest accepted path. */
  readonly maxLength: number;
  /** `SEGMENT_STRIDE` numbers per segment of the last scan; may be replaced by a scan, so read it after. */
  segments: Int32Array;
  // The canonical length of each segment of the last scan, so that `..` can give it back.
  private lengths: Int32Array;

  /** What the last scan saw: `HAS_*` bits and `TOO_LONG`. */
  features = 0;

  private hash = 0;
  private length = 0;
  private dots = true;
  private version = V_START;
  private flags = 0;
  private out: string | null = null;
  private foldOut = false;

  /** @param maxLength - longest accepted path */
  constructor(maxLength: number) {
    this.maxLength = maxLength;
    // A segment takes at least one character and one separator.
    this.segments = new Int32Array(SEGMENT_STRIDE * (Math.floor(maxLength / 2) + 2));
    this.lengths = new Int32Array(Math.floor(maxLength / 2) + 2);
  }

  /**
   * Canonicalise `raw` into {@link PathScanner.segments}, in one reading.
   * @param raw - the request target as received (origin-form or absolute-form)
   * @param reading - `READ_*` bits; 0 for the literal reading
   * @returns the number of canonical segments, or -1 when the path is malformed (with `TOO_LONG`
   *   in {@link PathScanner.features} when only its length makes it so)
   */
  scan(raw: unknown, reading = 0): number {
    this.features = 0;
    if (typeof raw !== 'string') return -1;
    const total = raw.length;
    let i = pathStart(raw);
    if (i < 0) return -1;
    if (i > 0) this.features = HAS_AUTHORITY;
    const rawLimit = this.maxLength * RAW_PER_CANONICAL;
    if (i > rawLimit) return -1;
    const backslash = (reading & READ_BACKSLASH) !== 0 ? BACKSLASH : SLASH;
    const resolve = (reading & READ_DOTS) !== 0;
    let features = this.features;
    let count = 0;
    // The limit applies to the canonical length, so `//` padding cannot dodge a rule.
    let canonical = 0;
    let separated = false;
    while (i < total) {
      const c = raw.charCodeAt(i);
      if (c === QUESTION || c === HASH) break;
      if (i >= rawLimit) return -1;
      if (c === SLASH || c === backslash) {
        if (separated) features |= HAS_EMPTY_SEGMENT;
        separated = true;
        i++;
        continue;
      }
      separated = false;
      const start = i;
      this.begin();
      while (i < total) {
        const d = raw.charCodeAt(i);
        if (d === SLASH || d === backslash || d === QUESTION || d === HASH) break;
        if (d === BACKSLASH) features |= HAS_BACKSLASH;
        else if (d === SEMICOLON) features |= HAS_SEMICOLON;
        if (i >= rawLimit) return -1;
        i = this.step(raw, i, total);
        if (i < 0) return -1;
      }
      if (this.dots && this.length <= 2) {
        features |= HAS_DOT_SEGMENT;
        if (resolve) {
          // Never above the root (RFC 3986 section 5.2.4).
          if (this.length === 2 && count > 0) {
            count--;
            canonical -= 1 + (this.lengths[count] as number);
          }
          continue;
        }
      }
      if (count === this.lengths.length) this.grow();
      const segments = this.segments;
      this.lengths[count] = this.length;
      canonical += 1 + this.length;
      const at = count * SEGMENT_STRIDE;
      segments[at] = start;
      segments[at + 1] = i;
      segments[at + 2] = this.hash & HASH_MASK;
      segments[at + 3] = this.flags | (this.version === V_ACCEPT ? SEGMENT_VERSION : 0);
      count++;
    }
    // A trailing slash after a segment is an empty segment too (the root `/` alone is not).
    if (separated && count > 0) features |= HAS_EMPTY_SEGMENT;
    if (canonical > this.maxLength) {
      this.features = features | TOO_LONG;
      return -1;
    }
    this.features = features;
    return count;
  }

  // Only a path climbing back with `..` needs it; the raw limit bounds how often.
  private grow(): void {
    const lengths = new Int32Array(this.lengths.length * 2);
    lengths.set(this.lengths);
    this.lengths = lengths;
    const segments = new Int32Array(this.segments.length * 2);
    segments.set(this.segments);
    this.segments = segments;
  }

  /**
   * The canonical text of segment `index` of the last scan of `raw`.
   * @param raw - the same string that was scanned
   * @param index - which segment
   * @param fold - fold ASCII letters to lower case (never the hex digits of `%XX`)
   */
  text(raw: string, index: number, fold: boolean): string {
    const at = index * SEGMENT_STRIDE;
    const start = this.segments[at]!;
    const end = this.segments[at + 1]!;
    const flags = this.segments[at + 3]!;
    if ((flags & (fold ? SEGMENT_PLAIN_FOLDED : SEGMENT_PLAIN)) !== 0) return raw.slice(start, end);
    this.begin();
    this.out = '';
    this.foldOut = fold;
    let i = start;
    while (i < end) i = this.step(raw, i, end);
    const text = this.out;
    this.out = null;
    return text;
  }

  /**
   * True when segment `index` of the last scan of `raw`, folded, equals `folded`.
   * @param raw - the same string that was scanned
   * @param index - which segment
   * @param folded - canonical text with ASCII case folded
   */
  equalsFolded(raw: string, index: number, folded: string): boolean {
    const at = index * SEGMENT_STRIDE;
    if ((this.segments[at + 3]! & SEGMENT_PLAIN_FOLDED) === 0) {
      return this.text(raw, index, true) === folded;
    }
    const start = this.segments[at]!;
    const length = this.segments[at + 1]! - start;
    if (length !== folded.length) return false;
    for (let k = 0; k < length; k++) {
      if (raw.charCodeAt(start + k) !== folded.charCodeAt(k)) return false;
    }
    return true;
  }

  private begin(): void {
    this.hash = FNV_OFFSET;
    this.length = 0;
    this.dots = true;
    this.version = V_START;
    this.flags = SEGMENT_PLAIN | SEGMENT_PLAIN_FOLDED;
  }

  // Reads the character at i; returns the index after it, or -1 when it makes the path malformed.
  private step(raw: string, i: number, end: number): number {
    const c = raw.charCodeAt(i);
    if (c < 0x80) {
      const kind = CLASS[c];
      if (kind === UNRESERVED) {
        this.character(c);
        return i + 1;
      }
      if (kind === PCT) {
        if (i + 2 >= end) return -1;
        const hi = hexValue(raw.charCodeAt(i + 1));
        const lo = hexValue(raw.charCodeAt(i + 2));
        if (hi < 0 || lo < 0) return -1;
        const octet = hi * 16 + lo;
        // An encoded NUL or control character is as malformed as a raw one.
        if (octet < 0x20 || octet === 0x7f) return -1;
        this.flags = 0;
        if (octet === 0xe2 && isEscapedKelvin(raw, i, end)) {
          this.kelvin();
          return i + 9;
        }
        if (octet < 0x80 && CLASS[octet] === UNRESERVED) this.character(octet);
        else this.octet(octet);
        return i + 3;
      }
      if (kind === CONTROL) return -1;
      this.flags = 0;
      this.octet(c);
      return i + 1;
    }
    // Non-ASCII: written as the percent-encoded UTF-8 octets, as a WHATWG URL parser would.
    this.flags = 0;
    if (c === KELVIN) {
      this.kelvin();
      return i + 1;
    }
    if (c < 0x800) {
      this.octet(0xc0 | (c >> 6));
      this.octet(0x80 | (c & 0x3f));
      return i + 1;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      if (c >= 0xdc00 || i + 1 >= end) return -1;
      const d = raw.charCodeAt(i + 1);
      if (d < 0xdc00 || d > 0xdfff) return -1;
      const point = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
      this.octet(0xf0 | (point >> 18));
      this.octet(0x80 | ((point >> 12) & 0x3f));
      this.octet(0x80 | ((point >> 6) & 0x3f));
      this.octet(0x80 | (point & 0x3f));
      return i + 2;
    }
    this.octet(0xe0 | (c >> 12));
    this.octet(0x80 | ((c >> 6) & 0x3f));
    this.octet(0x80 | (c & 0x3f));
    return i + 1;
  }

  private character(c: number): void {
    const upper = c >= 0x41 && c <= 0x5a;
    const folded = upper ? c | 0x20 : c;
    if (upper) this.flags &= ~SEGMENT_PLAIN_FOLDED;
    this.hash = Math.imul(this.hash ^ folded, FNV_PRIME);
    this.length++;
    if (c !== DOT) this.dots = false;
    const v = this.version;
    if (v === V_START) this.version = folded === 0x76 ? V_AFTER_V : V_DEAD;
    else if (v === V_AFTER_V) this.version = folded >= 0x30 && folded <= 0x39 ? V_ACCEPT : V_DEAD;
    else if (v === V_ACCEPT) {
      const ok =
        (folded >= 0x30 && folded <= 0x39) || (folded >= 0x61 && folded <= 0x7a) || c === 0x2d;
      if (!ok) this.version = V_DEAD;
    }
    if (this.out !== null) this.out += String.fromCharCode(this.foldOut ? folded : c);
  }

  // Written as its escapes but folded as `k`, so `boo\u212Aings` cannot dodge the rule for
  // `bookings` under find-my-way's `caseSensitive: false`.
  private kelvin(): void {
    this.hash = Math.imul(this.hash ^ K_LOWER, FNV_PRIME);
    this.length += KELVIN_UTF8.length;
    this.dots = false;
    const v = this.version;
    if (v === V_START || v === V_AFTER_V) this.version = V_DEAD;
    if (this.out !== null) this.out += this.foldOut ? 'k' : KELVIN_UTF8;
  }

  private octet(b: number): void {
    const hi = HEX.charCodeAt(b >> 4);
    const lo = HEX.charCodeAt(b & 0xf);
    this.hash = Math.imul(
      Math.imul(Math.imul(this.hash ^ PERCENT, FNV_PRIME) ^ hi, FNV_PRIME) ^ lo,
      FNV_PRIME,
    );
    this.length += 3;
    this.dots = false;
    this.version = V_DEAD;
    if (this.out !== null) this.out += `%${HEX[b >> 4]}${HEX[b & 0xf]}`;
  }
}

// True when raw[i..] (a `%E2` already read) is the escaped Kelvin sign `%E2%84%AA`, any hex case.
function isEscapedKelvin(raw: string, i: number, end: number): boolean {
  if (i + 8 >= end) return false;
  return (
    raw.charCodeAt(i + 3) === PERCENT &&
    hexValue(raw.charCodeAt(i + 4)) === 8 &&
    hexValue(raw.charCodeAt(i + 5)) === 4 &&
    raw.charCodeAt(i + 6) === PERCENT &&
    hexValue(raw.charCodeAt(i + 7)) === 10 &&
    hexValue(raw.charCodeAt(i + 8)) === 10
  );
}

// 0 for origin-form; after the authority for absolute-form (Node accepts it and routers resolve it
// to the same handler); -1 otherwise.
function pathStart(raw: string): number {
  const total = raw.length;
  if (total === 0) return -1;
  const first = raw.charCodeAt(0);
  if (first === SLASH || first === BACKSLASH) return 0;
  let i = 0;
  while (i < total) {
    const c = raw.charCodeAt(i);
    const letter = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
    const other = i > 0 && ((c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e);
    if (!letter && !other) break;
    i++;
  }
  if (i === 0 || !raw.startsWith('://', i)) return -1;
  i += 3;
  while (i < total) {
    const c = raw.charCodeAt(i);
    if (c === SLASH || c === BACKSLASH || c === QUESTION || c === HASH) return i;
    if (c < 0x20 || c === 0x7f) return -1;
    i++;
  }
  return i;
}

/** The options of {@link canonicalPath} and `compileRoutes`. @internal */
export const PATH_LENGTH_OPTIONS = { maxPathLength: wholeNumber(1, 1_048_576) };

/** The `maxPathLength` of such options, or its default. @internal */
export function readMaxPathLength(options: unknown, owner: string): number {
  return readOptions(options, owner, PATH_LENGTH_OPTIONS, {
    defaults: { maxPathLength: DEFAULT_MAX_PATH_LENGTH },
  }).maxPathLength;
}

const defaultScanner = new PathScanner(DEFAULT_MAX_PATH_LENGTH);

/**
 * The canonical form of a raw request path as Express 5, Koa and Fastify 5 read it, or `undefined`
 * when it is malformed: query and fragment dropped, escapes of unreserved characters decoded, other
 * characters as upper-case `%XX`, empty segments dropped, dot segments and case kept. See
 * `docs/routes.md`.
 * @param raw - the request target as received, e.g. `req.url`
 * @param options - the maximum path length
 * @returns `/a/b` (or `/` for the root), or `undefined` for a malformed path; never throws for
 *   any request input (only bad options, such as a bad `maxPathLength`, throw a
 *   `ConfigurationError`)
 * @example
 * ```ts
 * canonicalPath('//booking/V1/bookings/%41bc/?x=1'); // '/booking/V1/bookings/Abc'
 * canonicalPath('/bookings/x\\..\\B1'); // '/bookings/x%5C..%5CB1'
 * canonicalPath('/bookings/%zz'); // undefined
 * ```
 */
export function canonicalPath(raw: unknown, options?: CanonicalPathOptions): string | undefined {
  const max =
    options === undefined ? DEFAULT_MAX_PATH_LENGTH : readMaxPathLength(options, 'canonicalPath');
  const scanner = max === DEFAULT_MAX_PATH_LENGTH ? defaultScanner : new PathScanner(max);
  const count = scanner.scan(raw);
  if (count < 0) return undefined;
  let path = '';
  for (let k = 0; k < count; k++) path += `/${scanner.text(raw as string, k, false)}`;
  return path === '' ? '/' : path;
}
