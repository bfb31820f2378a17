/**
 * Shared arbitraries and reference implementations for the route tests: logical paths and their
 * many spellings, a straightforward reference canonicaliser and a segment-by-segment reference
 * matcher to hold the fast implementations against.
 */
import fc from 'fast-check';

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const VERSION = /^v[0-9][0-9a-z-]*$/i;

/** Upper-case `%XX` of each UTF-8 octet of one character. */
export function percentEncode(ch: string): string {
  return [...new TextEncoder().encode(ch)]
    .map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`)
    .join('');
}

/** How a router takes a path apart besides the literal reading (see docs/routes.md). */
export interface Reading {
  /** `\` separates segments (a WHATWG URL parser, Node's legacy `url.parse`). */
  readonly backslash?: boolean;
  /** `.` segments are dropped and `..` removes the one before (a WHATWG URL parser). */
  readonly dots?: boolean;
  /** The path ends at its first `;` (find-my-way's `useSemicolonDelimiter`). */
  readonly semicolon?: boolean;
}

/**
 * Reference canonicaliser, written for clarity rather than speed: split, decode, resolve. The
 * literal reading by default: `\` is an ordinary character and dot segments stay, as Express,
 * Koa and Fastify read a path; `reading` adds what other parsers do.
 * @returns the canonical path with case kept, or undefined when malformed
 */
export function referenceCanonicalPath(
  raw: unknown,
  maxPathLength = 2048,
  reading: Reading = {},
): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const target = raw.split(/[?#]/)[0]!;
  // The raw target (host included) is bounded at 16 times the maximum (RAW_PER_CANONICAL).
  if (target.length > maxPathLength * 16) return undefined;
  let path = target;
  const absolute = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/\\]*/.exec(target);
  if (absolute !== null) path = target.slice(absolute[0].length);
  else if (!/^[/\\]/.test(target)) return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are the point
  if (/[\u0000-\u001f\u007f]/.test(target)) return undefined;
  if (/%(?![0-9A-Fa-f]{2})/.test(path)) return undefined;
  if (/%(?:[01][0-9A-Fa-f]|7[Ff])/.test(path)) return undefined;
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(path)) {
    return undefined;
  }
  if (reading.semicolon) path = path.split(';')[0]!;
  const stack: string[] = [];
  for (const segment of path.split(reading.backslash ? /[/\\]/ : '/')) {
    if (segment === '') continue;
    const canonical = segment.replace(/%[0-9A-Fa-f]{2}|[\s\S]/gu, (piece) => {
      if (piece.startsWith('%') && piece.length === 3) {
        const ch = String.fromCharCode(Number.parseInt(piece.slice(1), 16));
        return UNRESERVED.test(ch) ? ch : piece.toUpperCase();
      }
      return UNRESERVED.test(piece) ? piece : percentEncode(piece);
    });
    if (reading.dots && canonical === '.') continue;
    if (reading.dots && canonical === '..') stack.pop();
    else stack.push(canonical);
  }
  // The maximum length applies to the canonical path, however long the raw one.
  const canonical = `/${stack.join('/')}`;
  return canonical.length > maxPathLength ? undefined : canonical;
}

/**
 * The readings a path gets, written from docs/routes.md: the literal one, and Node's legacy
 * `url.parse` (a `\` is `/`) where there is a `\` before the query and the target does not start
 * with `/` or holds one of `#`, whitespace, U+00A0, U+FEFF.
 */
export function referenceReadings(raw: string): Reading[] {
  const target = raw.split(/[?#]/)[0]!;
  const readings: Reading[] = [{}];
  if (target.includes('\\') && (!raw.startsWith('/') || /[#\t\n\f\r \u00a0\ufeff]/.test(raw))) {
    readings.push({ backslash: true });
  }
  return readings;
}

/**
 * Whether an exemption may apply to a raw path, written from docs/routes.md: origin-form, no `\`,
 * no `;`, no empty segment (doubled or trailing slash), no dot segment in any spelling.
 */
export function referencePlainPath(raw: string): boolean {
  const target = raw.split(/[?#]/)[0]!;
  if (!target.startsWith('/') || /[\\;]/.test(target)) return false;
  if (target === '/') return true;
  return target
    .slice(1)
    .split('/')
    .every((segment) => segment !== '' && !/^(?:\.|%2e){1,2}$/i.test(segment));
}

/**
 * ASCII letters to lower case, except the hex digits of `%XX`; the Kelvin sign (`%E2%84%AA`),
 * which Unicode lower-casing makes a `k`, to `k`.
 */
export function foldCanonical(segment: string): string {
  return segment.replace(/%E2%84%AA|%[0-9A-F]{2}|[A-Z]/g, (piece) =>
    piece === '%E2%84%AA' ? 'k' : piece.length === 1 ? piece.toLowerCase() : piece,
  );
}

/** A rule for the reference matcher: the pattern's parts, spelled canonically. */
export interface ReferenceRule {
  readonly method: string;
  readonly segments: readonly string[];
  readonly caseInsensitiveIds: boolean;
}

/** Reference rule of a canonical pattern such as `PATCH /booking/v*` + `/bookings/{id}`. */
export function referenceRule(route: string, caseInsensitiveIds = false): ReferenceRule {
  const [method, path] = route.split(' ') as [string, string];
  return { method, segments: path === '/' ? [] : path.slice(1).split('/'), caseInsensitiveIds };
}

/**
 * Reference matcher on a canonical path: segment by segment, literal (case folded), `v*`
 * (by the documented regex) or `{name}`.
 * @returns the key the rule gives the path, or undefined when it does not apply
 */
export function referenceKey(
  rule: ReferenceRule,
  method: string,
  canonical: string,
): string | undefined {
  if (rule.method !== '*' && rule.method !== method.toUpperCase()) return undefined;
  const segments = canonical === '/' ? [] : canonical.slice(1).split('/');
  if (segments.length !== rule.segments.length) return undefined;
  let ids = '';
  for (const [k, part] of rule.segments.entries()) {
    const segment = segments[k]!;
    if (part === 'v*') {
      if (!VERSION.test(segment)) return undefined;
    } else if (part.startsWith('{')) {
      const id = rule.caseInsensitiveIds ? foldCanonical(segment) : segment;
      ids += ` ${part.slice(1, -1)}${rule.caseInsensitiveIds ? '~' : '='}${id}`;
    } else if (foldCanonical(segment) !== part) return undefined;
  }
  const path = rule.segments.length === 0 ? '/' : `/${rule.segments.join('/')}`;
  return `${rule.method} ${path}${ids}`;
}

// Characters of logical (decoded) segments: unreserved ones, reserved and unsafe ASCII, non-ASCII.
const LOGICAL_CHARS = [
  ...'abcXYZ019-._~',
  ...":@!$&'()*+,;=",
  ...' "<>[]^`{|}%/\\?#',
  'é',
  '€',
  '😀',
];

/** A logical segment: decoded characters, never `.` or `..` (those are dot segments). */
export const logicalSegmentArb: fc.Arbitrary<string[]> = fc
  .array(fc.constantFrom(...LOGICAL_CHARS), { minLength: 1, maxLength: 8 })
  .filter((chars) => chars.join('') !== '.' && chars.join('') !== '..');

/** The canonical spelling of a logical segment, case kept. */
export function canonicalSegment(chars: readonly string[]): string {
  return chars.map((ch) => (UNRESERVED.test(ch) ? ch : percentEncode(ch))).join('');
}

/** How to spell one segment: per character, raw or encoded, hex case, letter case. */
export interface SpellingChoice {
  readonly encode: boolean;
  readonly lowerHex: boolean;
  readonly flipCase: boolean;
}

/** Spelling choices for every character of a segment (reused cyclically). */
export const spellingArb: fc.Arbitrary<SpellingChoice[]> = fc.array(
  fc.record({ encode: fc.boolean(), lowerHex: fc.boolean(), flipCase: fc.boolean() }),
  { minLength: 1, maxLength: 8 },
);

/**
 * One spelling of a logical segment. Characters that may not appear raw (`%`, `/`, `\`, `?`,
 * `#`, `;`) are always encoded; the others follow the choices. `foldable` says whether letter case may
 * change (true for literal and version segments, false for ids).
 */
export function spellSegment(
  chars: readonly string[],
  choices: readonly SpellingChoice[],
  foldable: boolean,
): string {
  return chars
    .map((ch, k) => {
      const choice = choices[k % choices.length]!;
      // A raw `;` gets a second reading (find-my-way's useSemicolonDelimiter), so it is not an
      // equivalent spelling of `%3B`: the reference-matcher test covers it.
      const mustEncode = '%/\\?#;'.includes(ch);
      const letter = /^[A-Za-z]$/.test(ch);
      const cased =
        foldable && letter && choice.flipCase
          ? ch === ch.toLowerCase()
            ? ch.toUpperCase()
            : ch.toLowerCase()
          : ch;
      if (!mustEncode && !choice.encode) return cased;
      const encoded = percentEncode(cased);
      return choice.lowerHex ? encoded.toLowerCase() : encoded;
    })
    .join('');
}

/** The noise around a path that canonicalisation removes. */
export interface PathNoise {
  /** Extra separators before each segment (0 = one `/`). */
  readonly slashes: readonly number[];
  /** Use `\` instead of `/` for some separators. */
  readonly backslash: boolean;
  /** Insert `./` before a segment, and `junk/../` before another. */
  readonly dot: number;
  readonly dotDot: number;
  readonly trailingSlash: boolean;
  readonly query: string | null;
  readonly fragment: string | null;
}

/**
 * Arbitrary {@link PathNoise} that every router reads alike: doubled and trailing slashes, query
 * and fragment. Backslashes and dot segments are read differently by different routers (see
 * {@link hostileNoiseArb}).
 */
export const pathNoiseArb: fc.Arbitrary<PathNoise> = fc.record({
  slashes: fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 8 }),
  backslash: fc.constant(false),
  dot: fc.constant(-1),
  dotDot: fc.constant(-1),
  trailingSlash: fc.boolean(),
  query: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
  fragment: fc.option(fc.string({ maxLength: 6 }), { nil: null }),
});

/** Arbitrary {@link PathNoise} with backslashes and dot segments too. */
export const hostileNoiseArb: fc.Arbitrary<PathNoise> = fc.record({
  slashes: fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 8 }),
  backslash: fc.boolean(),
  dot: fc.integer({ min: -1, max: 7 }),
  dotDot: fc.integer({ min: -1, max: 7 }),
  trailingSlash: fc.boolean(),
  query: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
  fragment: fc.option(fc.string({ maxLength: 6 }), { nil: null }),
});

/** Join spelled segments into a raw path with the given noise. */
export function withNoise(segments: readonly string[], noise: PathNoise): string {
  let path = '';
  segments.forEach((segment, k) => {
    const extra = noise.slashes[k] ?? 0;
    const separator = noise.backslash && k % 2 === 1 ? '\\' : '/';
    path += separator.repeat(1 + extra);
    if (noise.dot === k) path += './';
    if (noise.dotDot === k) path += 'junk/../';
    path += segment;
  });
  if (path === '' || noise.trailingSlash) path += '/';
  if (noise.query !== null) path += `?${noise.query}`;
  if (noise.fragment !== null) path += `#${noise.fragment}`;
  return path;
}

/** A version segment: `v`, a digit, then digits, letters and hyphens, in any ASCII case. */
export const versionArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('v', 'V'),
    fc.constantFrom(...'0123456789'),
    fc.array(fc.constantFrom(...'0123456789abcxyzNSFH-'), { maxLength: 6 }),
  )
  .map(([v, digit, rest]) => v + digit + rest.join(''));

/** Raw pieces of one segment: letters, dots, good and bad escapes, control and non-ASCII. */
export const RAW_PIECES = [
  '.',
  '..',
  '%',
  'a',
  'B',
  'v1',
  'V2-x',
  'e',
  ' ',
  '~',
  'é',
  '😀',
  '\u0000',
  '\u001f',
  '\ud800',
  '%2e',
  '%2E',
  '%41',
  '%2f',
  '%5C',
  '%zz',
  '%0',
  '%00',
  '%7f',
  '%7e',
  'http://h',
];

// A whole segment: usually one or two pieces, often a dot segment in some spelling.
const rawSegmentArb = fc.oneof(
  fc.array(fc.constantFrom(...RAW_PIECES), { minLength: 0, maxLength: 3 }).map((p) => p.join('')),
  fc.constantFrom('.', '..', '%2e', '%2E%2e', '.%2E'),
);

/** Hostile raw request targets: a head, separators, segments of raw pieces, query and fragment. */
export const rawPathArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('', '/', '\\', 'http://host', 'HTTPS://h:1', 'x', 'h\u0010://x'),
    fc.array(fc.tuple(fc.constantFrom('/', '\\', '//', '/\\'), rawSegmentArb), { maxLength: 8 }),
    fc.constantFrom('', '/', '?', '?a/../%zz', '#', '#x?y'),
  )
  .map(([head, parts, tail]) => head + parts.map(([sep, seg]) => sep + seg).join('') + tail);

/** One segment of a generated pattern. */
export type PatternPart =
  | { readonly kind: 'literal'; readonly chars: readonly string[] }
  | { readonly kind: 'version' }
  | { readonly kind: 'param' };

// Characters a literal may be made of (decoded); the ones a pattern may not hold raw are encoded
// when it is spelled.
const LITERAL_CHARS = [...'abcXYZ019-_~', ...":@!$&'()+,;=", ...' *%/{}é'];

const literalArb: fc.Arbitrary<PatternPart> = fc
  .array(fc.constantFrom(...LITERAL_CHARS), { minLength: 1, maxLength: 6 })
  .filter((chars) => !/^\.{1,2}$/.test(chars.join('')))
  .map((chars) => ({ kind: 'literal' as const, chars }));

/** Arbitrary pattern shapes: method and up to six segments. */
export const patternPartsArb: fc.Arbitrary<{ method: string; parts: PatternPart[] }> = fc.record({
  method: fc.constantFrom('GET', 'PATCH', 'PUT', 'POST', 'DELETE', '*'),
  parts: fc.array(
    fc.oneof(
      { weight: 3, arbitrary: literalArb },
      { weight: 1, arbitrary: fc.constant<PatternPart>({ kind: 'version' }) },
      { weight: 2, arbitrary: fc.constant<PatternPart>({ kind: 'param' }) },
    ),
    { maxLength: 6 },
  ),
});

/** Spell a pattern: method and literals in the given case, raw or encoded where allowed. */
export function spellPattern(
  method: string,
  parts: readonly PatternPart[],
  choices: readonly SpellingChoice[],
): string {
  const path = parts.map((part, k) => {
    if (part.kind === 'version') return choices[k % choices.length]!.flipCase ? 'V*' : 'v*';
    if (part.kind === 'param') return `{p${k}}`;
    return part.chars
      .map((ch, j) => {
        const choice = choices[(k + j) % choices.length]!;
        const raw = /^[A-Za-z0-9\-_~:@!$&'()+,;=]$/.test(ch);
        const cased = choice.flipCase && /^[a-z]$/.test(ch) ? ch.toUpperCase() : ch;
        if (raw && !choice.encode) return cased;
        const encoded = percentEncode(cased);
        return choice.lowerHex ? encoded.toLowerCase() : encoded;
      })
      .join('');
  });
  const spelledMethod = choices[0]?.flipCase && method !== '*' ? method.toLowerCase() : method;
  return `${spelledMethod} /${path.join('/')}`;
}

/** The canonical spelling of a generated pattern. */
export function canonicalPattern(method: string, parts: readonly PatternPart[]): string {
  const path = parts.map((part, k) =>
    part.kind === 'version'
      ? 'v*'
      : part.kind === 'param'
        ? `{p${k}}`
        : foldCanonical(canonicalSegment(part.chars)),
  );
  return `${method} /${path.join('/')}`;
}
