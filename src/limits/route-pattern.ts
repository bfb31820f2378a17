/**
 * Route patterns as the specification writes them (`PATCH /booking/v* /bookings/{id}` without the
 * space): parsing, validation with errors that point at the offending character, and the canonical form.
 * @module
 */

import { ConfigurationError } from '../errors/index.js';
import { checkValue, INVALID, type Rule } from '../internal/options.js';
import { PathScanner, READ_DOTS, SEGMENT_STRIDE } from './canonical-path.js';

/** One segment of a {@link RoutePattern}. */
export type RouteSegment =
  | {
      /** A literal segment, matched without regard to ASCII case. */
      readonly kind: 'literal';
      /** Its canonical text with ASCII letters folded to lower case. */
      readonly text: string;
      /**
       * Its canonical text with case kept: the spelling a request must use for an exemption to
       * apply (see `RouteMatch.plain`).
       */
      readonly spelled: string;
    }
  | {
      /** `v*`: any version segment (see `VERSION_SEGMENT_PATTERN`). */
      readonly kind: 'version';
    }
  | {
      /** `{name}`: captures one segment. */
      readonly kind: 'param';
      /** The parameter's name. */
      readonly name: string;
    };

/** A parsed, validated route pattern. */
export interface RoutePattern {
  /** The pattern as written. */
  readonly source: string;
  /** The method in upper case, or `*` for any method. */
  readonly method: string;
  /** The path's segments; none for `/`. */
  readonly segments: readonly RouteSegment[];
  /** The names of the `{name}` segments, in order. */
  readonly params: readonly string[];
  /** Method and path in canonical spelling, e.g. `PATCH /booking/bookings/{id}`. */
  readonly canonical: string;
}

// Characters a literal segment may hold besides unreserved ones and %XX: the sub-delims other
// than `*` (kept for `v*`), `:` and `@` (RFC 3986 pchar).
const LITERAL_EXTRA = "!$&'()+,;=:@";
const NAME_START = /[A-Za-z_]/;
const NAME_PART = /[A-Za-z0-9_]/;
const UNRESERVED = /[A-Za-z0-9\-._~]/;
const HEX_DIGIT = /[0-9A-Fa-f]/;

/** Where and why a pattern is wrong, thrown by the parser and worded by {@link readRoutePattern}. */
class PatternProblem {
  constructor(
    readonly index: number,
    readonly reason: string,
  ) {}
}

function fail(index: number, reason: string): never {
  throw new PatternProblem(index, reason);
}

const aPatternString: Rule<string> = {
  expected: "a route pattern such as 'GET /booking/v*/offers'",
  code: 'invalid_route_pattern',
  read: (value) => (typeof value === 'string' ? value : INVALID),
};

/**
 * {@link parseRoutePattern} of an option, with messages naming it.
 * @param route - the pattern as given
 * @param name - the option, e.g. `rules[2].route`
 * @internal
 */
export function readRoutePattern(route: unknown, name: string): RoutePattern {
  const text = checkValue(aPatternString, route, name);
  try {
    return parse(text);
  } catch (problem) {
    if (!(problem instanceof PatternProblem)) throw problem;
    const { index, reason } = problem;
    // Control characters would break the caret's alignment, so they are shown as `?`.
    let shown = '';
    for (const ch of text) shown += ch < ' ' || ch === '\u007f' ? '?' : ch;
    throw new ConfigurationError(
      'invalid_route_pattern',
      `${name} must be a route pattern, got one wrong at column ${index + 1}: ${reason}.\n  ${shown}\n  ${' '.repeat(index)}^`,
    );
  }
}

function characterName(ch: string): string {
  const code = ch.charCodeAt(0);
  return code < 0x20 || code === 0x7f ? `U+${code.toString(16).padStart(4, '0')}` : `'${ch}'`;
}

/**
 * Parse and validate a route pattern: a method (letters, folded to upper case, or `*` for any
 * method), one space, and a path of segments, each a literal (unreserved characters, `!$&'()+,;=:@`
 * and `%XX`), `v*` (any version segment) or `{name}` (captures one segment; a name is
 * `[A-Za-z_][A-Za-z0-9_]*`, unique within the pattern). `/` alone is the root. A trailing slash,
 * an empty segment, a dot segment or a query string is an error, since no canonical path has one.
 * @param route - e.g. `PUT /rateplan/rate-plans/{id}/rates`, with `v*` segments where versions go
 * @returns the parsed pattern
 * @throws ConfigurationError `invalid_route_pattern`, whose message gives the column and a caret
 *   under the offending character
 * @example
 * ```ts
 * parseRoutePattern('patch /Booking/bookings/{id}').canonical; // 'PATCH /booking/bookings/{id}'
 * ```
 */
export function parseRoutePattern(route: string): RoutePattern {
  return readRoutePattern(route, 'parseRoutePattern(route)');
}

function parse(route: string): RoutePattern {
  let i = 0;
  const n = route.length;
  if (route[0] === '*') i = 1;
  else while (i < n && /[A-Za-z]/.test(route[i]!)) i++;
  if (i === 0) fail(0, 'expected a method such as GET or PATCH, or * for any method');
  const method = route.slice(0, i).toUpperCase();
  if (route[i] !== ' ') {
    fail(
      i,
      i >= n
        ? 'expected one space and a path after the method'
        : `a method is letters only (or * alone), followed by one space; found ${characterName(route[i]!)}`,
    );
  }
  i++;
  if (route[i] !== '/') fail(i, 'the path must start with /');
  const segments: RouteSegment[] = [];
  const params: string[] = [];
  if (i + 1 === n) return finish(route, method, segments, params);
  while (i < n) {
    // route[i] is the '/' before a segment.
    const start = i + 1;
    if (start >= n) fail(i, 'remove the trailing slash: canonical paths have none');
    if (route[start] === '/') fail(start, 'empty segment: canonical paths have no //');
    i = start;
    if (route[i] === '{') {
      i++;
      if (i >= n || !NAME_START.test(route[i]!)) {
        fail(i, 'a parameter name starts with a letter or _, as in {id}');
      }
      while (i < n && NAME_PART.test(route[i]!)) i++;
      if (route[i] !== '}') {
        fail(i, 'a parameter name holds letters, digits and _ only, and ends with }');
      }
      const name = route.slice(start + 1, i);
      if (name === '__proto__') fail(start + 1, 'the parameter name __proto__ is reserved');
      if (params.includes(name)) fail(start + 1, `the parameter {${name}} appears twice`);
      i++;
      if (i < n && route[i] !== '/') fail(i, 'a parameter takes a whole segment');
      params.push(name);
      segments.push({ kind: 'param', name });
      continue;
    }
    if ((route[i] === 'v' || route[i] === 'V') && route[i + 1] === '*') {
      if (i + 2 < n && route[i + 2] !== '/') {
        fail(i + 2, 'v* takes a whole segment');
      }
      i += 2;
      segments.push({ kind: 'version' });
      continue;
    }
    while (i < n && route[i] !== '/') {
      const ch = route[i]!;
      if (ch === '%') {
        if (!HEX_DIGIT.test(route[i + 1] ?? '') || !HEX_DIGIT.test(route[i + 2] ?? '')) {
          fail(i, "'%' must start a percent-encoding such as %2F");
        }
        i += 3;
        continue;
      }
      if (UNRESERVED.test(ch) || LITERAL_EXTRA.includes(ch)) {
        i++;
        continue;
      }
      fail(i, literalReason(ch));
    }
    const literal = canonicalLiteral(route.slice(start, i));
    if (literal === undefined) {
      fail(
        start,
        'this segment can never match: dot segments and control characters are removed or refused by canonicalisation',
      );
    }
    segments.push({ kind: 'literal', ...literal });
  }
  return finish(route, method, segments, params);
}

function literalReason(ch: string): string {
  switch (ch) {
    case '*':
      return "'*' is only allowed in the version segment v*";
    case '{':
    case '}':
      return 'a parameter takes a whole segment, as in /bookings/{id}';
    case '?':
    case '#':
      return 'a pattern has no query string or fragment';
    case ' ':
      return 'no spaces in the path (write %20)';
    default:
      return `${characterName(ch)} is not allowed in a literal segment; percent-encode it`;
  }
}

// The canonical text of a literal segment, folded and as spelled, or undefined when it is a dot
// segment (which a WHATWG URL parser drops, so no route can rely on it) or canonicalisation
// refuses it.
function canonicalLiteral(segment: string): { text: string; spelled: string } | undefined {
  const raw = `/${segment}`;
  // The limit is on the canonical length, which escaping makes up to nine times the raw one.
  const scanner = new PathScanner(raw.length * 9);
  if (scanner.scan(raw, READ_DOTS) !== 1) return undefined;
  return { text: scanner.text(raw, 0, true), spelled: scanner.text(raw, 0, false) };
}

function finish(
  source: string,
  method: string,
  segments: RouteSegment[],
  params: string[],
): RoutePattern {
  const path = segments
    .map((s) => (s.kind === 'literal' ? s.text : s.kind === 'version' ? 'v*' : `{${s.name}}`))
    .join('/');
  return { source, method, segments, params, canonical: `${method} /${path}` };
}

/**
 * The hash the route table files a literal segment under: the same hash a scan computes for a
 * path segment with the same folded canonical text.
 * @param text - a literal's canonical folded text
 * @internal
 */
export function literalHash(text: string): number {
  const scanner = new PathScanner(text.length + 1);
  scanner.scan(`/${text}`);
  return scanner.segments[SEGMENT_STRIDE - 2]!;
}
