/**
 * The compiled route table: one segment trie per method, so a match costs the same with five rules
 * or five thousand.
 * @module
 */

import {
  aBoolean,
  anything,
  checkValue,
  invalidValue,
  listOf,
  refused,
  withFields,
  worded,
} from '../internal/options.js';
import {
  HAS_AUTHORITY,
  HAS_BACKSLASH,
  HAS_DOT_SEGMENT,
  HAS_EMPTY_SEGMENT,
  HAS_SEMICOLON,
  PathScanner,
  READ_BACKSLASH,
  readMaxPathLength,
  SEGMENT_PLAIN_FOLDED,
  SEGMENT_STRIDE,
  SEGMENT_VERSION,
  TOO_LONG,
} from './canonical-path.js';
import { literalHash, type RoutePattern, readRoutePattern } from './route-pattern.js';

/** What a rule must carry: its route pattern; the rest is the caller's, handed back with each match. */
export interface RouteRule {
  /** A route pattern, e.g. `PATCH /booking/v*` followed by `/bookings/{id}`. */
  readonly route: string;
  /**
   * Fold the ASCII case of captured ids (otherwise `ABC` and `abc` are two resources).
   * @defaultValue false
   */
  readonly caseInsensitiveIds?: boolean;
}

/** One rule that applies to a request. */
export interface RouteMatch<R extends RouteRule> {
  /** The rule, as given to {@link compileRoutes}. */
  readonly rule: R;
  /** Its parsed pattern. */
  readonly pattern: RoutePattern;
  /** Captured ids by parameter name, in canonical form (case kept unless the rule folds it). */
  readonly params: Readonly<Record<string, string>>;
  /**
   * The canonical resource key: the pattern, then ` name=id` per parameter (` name~id` when
   * folded). Distinct ids never share one, since a canonical id holds no space.
   */
  readonly key: string;
  /**
   * True when every supported router reads the path alike and routes it to this rule's handler
   * (see `docs/routes.md`). Only a plain match grants an exemption.
   */
  readonly plain: boolean;
}

/** Options of {@link compileRoutes}. */
export interface RouteTableOptions {
  /**
   * The longest request path considered, in canonical characters; longer matches nothing.
   * @defaultValue 2048
   */
  readonly maxPathLength?: number;
}

/** Rules compiled by {@link compileRoutes}. */
export interface RouteTable<R extends RouteRule> {
  /** The rules, in the order given. */
  readonly rules: readonly R[];
  /** The longest request path considered. */
  readonly maxPathLength: number;
  /**
   * Every rule that applies to a request, in the order given. Never throws: a malformed path or a
   * method that is not a string matches nothing.
   * @param method - the request method; ASCII case is folded
   * @param path - the raw request target, e.g. `req.url`
   * @returns the matches; a shared empty array when none applies
   */
  match(method: unknown, path: unknown): readonly RouteMatch<R>[];
}

interface Terminal<R extends RouteRule> {
  readonly order: number;
  readonly rule: R;
  readonly pattern: RoutePattern;
  readonly fold: boolean;
  // Segment index of each parameter, in the order of pattern.params.
  readonly paramAt: readonly number[];
}

interface LiteralEdge<R extends RouteRule> {
  readonly text: string;
  readonly node: TrieNode<R>;
}

class TrieNode<R extends RouteRule> {
  literals: Map<number, LiteralEdge<R>[]> | null = null;
  version: TrieNode<R> | null = null;
  param: TrieNode<R> | null = null;
  terminals: Terminal<R>[] | null = null;
}

const NO_MATCHES: readonly never[] = Object.freeze([]);
const NOT_PLAIN =
  HAS_EMPTY_SEGMENT | HAS_AUTHORITY | HAS_DOT_SEGMENT | HAS_BACKSLASH | HAS_SEMICOLON;
const LOWER_CASE = /[a-z]/;

function byOrder(a: { order: number }, b: { order: number }): number {
  return a.order - b.order;
}

/**
 * Compile rules into one {@link RouteTable}. Each pattern is parsed and validated here, so a bad
 * one fails at start-up rather than on a request.
 * @param rules - rules with a `route`; several may share one route (all apply)
 * @param options - the maximum path length
 * @returns the compiled table
 * @throws ConfigurationError `invalid_route_rule` for a rule that is not an object with a string
 *   `route`, or whose route can never match because every path it matches is longer than
 *   `maxPathLength`; `invalid_route_pattern` for a bad pattern (column and caret in the message);
 *   `invalid_option` for a bad `maxPathLength`
 * @example
 * ```ts
 * const table = compileRoutes([{ route: 'PATCH /booking/bookings/{id}', limit: 20 }]);
 * table.match('PATCH', '/booking//Bookings/%41bc/?x=1')[0]?.key;
 * // 'PATCH /booking/bookings/{id} id=Abc'
 * ```
 */
export function compileRoutes<R extends RouteRule>(
  rules: readonly R[],
  options?: RouteTableOptions,
): RouteTable<R> {
  const maxPathLength = readMaxPathLength(options, 'compileRoutes');
  const list = checkValue(ruleList, rules, 'rules') as R[];
  const byMethod = new Map<string, TrieNode<R>>();
  let anyMethod: TrieNode<R> | null = null;
  let depth = 0;
  list.forEach((rule, order) => {
    const { pattern, fold } = parseRule(rule, order, maxPathLength);
    let node: TrieNode<R>;
    if (pattern.method === '*') {
      anyMethod ??= new TrieNode<R>();
      node = anyMethod;
    } else {
      node = byMethod.get(pattern.method) ?? new TrieNode<R>();
      byMethod.set(pattern.method, node);
    }
    const paramAt: number[] = [];
    pattern.segments.forEach((segment, index) => {
      if (segment.kind === 'version') node = node.version ??= new TrieNode<R>();
      else if (segment.kind === 'param') {
        paramAt.push(index);
        node = node.param ??= new TrieNode<R>();
      } else node = literalChild(node, segment.text);
    });
    depth = Math.max(depth, pattern.segments.length);
    const terminal = { order, rule, pattern, fold, paramAt };
    node.terminals ??= [];
    node.terminals.push(terminal);
  });
  return new CompiledRouteTable(Object.freeze(list), maxPathLength, byMethod, anyMethod, depth);
}

const SHORTEST_VERSION = 2;
const SHORTEST_PARAM = 1;

/** The root alone counts 0 here, as in the scanner. */
function shortestMatch(pattern: RoutePattern): number {
  let length = 0;
  for (const segment of pattern.segments) {
    length +=
      1 +
      (segment.kind === 'literal'
        ? segment.text.length
        : segment.kind === 'version'
          ? SHORTEST_VERSION
          : SHORTEST_PARAM);
  }
  return length;
}

const RULE_SHAPE = "an object with a string route such as 'GET /booking/v*/offers'";

const routeFields = withFields(['route', 'caseInsensitiveIds'], RULE_SHAPE, 'invalid_route_rule');

const ruleList = worded(
  listOf(worded(anything(), RULE_SHAPE, 'invalid_route_rule')),
  'an array of { route } objects',
);

const aFlag = worded(aBoolean, aBoolean.expected, 'invalid_route_rule');

function parseRule(
  rule: RouteRule,
  order: number,
  maxPathLength: number,
): { pattern: RoutePattern; fold: boolean } {
  const name = `rules[${order}]`;
  const { route, caseInsensitiveIds } = checkValue(routeFields, rule, name);
  if (typeof route !== 'string') throw invalidValue(routeFields, rule, name);
  const fold = checkValue(aFlag, caseInsensitiveIds ?? false, `${name}.caseInsensitiveIds`);
  const pattern = readRoutePattern(route, `${name}.route`);
  const shortest = shortestMatch(pattern);
  if (shortest > maxPathLength) {
    throw refused(
      `${name}.route`,
      `a route that some path of at most maxPathLength (${maxPathLength}) characters matches once canonical (every path this one matches has at least ${shortest}: shorten the route or raise maxPathLength)`,
      route,
      'invalid_route_rule',
    );
  }
  return { pattern, fold };
}

function literalChild<R extends RouteRule>(node: TrieNode<R>, text: string): TrieNode<R> {
  const hash = literalHash(text);
  node.literals ??= new Map();
  const bucket = node.literals.get(hash) ?? [];
  node.literals.set(hash, bucket);
  const found = bucket.find((edge) => edge.text === text);
  if (found !== undefined) return found.node;
  const child = new TrieNode<R>();
  bucket.push({ text, node: child });
  return child;
}

class CompiledRouteTable<R extends RouteRule> implements RouteTable<R> {
  private readonly scanner: PathScanner;
  // Terminals found by the walk in progress; created on the first hit only.
  private found: Terminal<R>[] | null = null;
  private raw = '';
  private count = 0;

  constructor(
    readonly rules: readonly R[],
    readonly maxPathLength: number,
    private readonly byMethod: Map<string, TrieNode<R>>,
    private readonly anyMethod: TrieNode<R> | null,
    private readonly depth: number,
  ) {
    this.scanner = new PathScanner(maxPathLength);
  }

  match(method: unknown, path: unknown): readonly RouteMatch<R>[] {
    if (typeof method !== 'string') return NO_MATCHES;
    // Methods are compared without regard to case: some routers (Express) do the same, so a
    // lower-case `patch` must not dodge the rule for PATCH.
    const root =
      this.byMethod.get(method) ??
      (LOWER_CASE.test(method) ? this.byMethod.get(method.toUpperCase()) : undefined) ??
      null;
    if (root === null && this.anyMethod === null) return NO_MATCHES;
    const count = this.scanner.scan(path, 0);
    const features = this.scanner.features;
    // Too long in the literal reading may still be short enough in one that splits at `\`.
    if (count < 0 && (features & TOO_LONG) === 0) return NO_MATCHES;
    const raw = path as string;
    const others = otherReadings(raw, features);
    if (others === NO_READINGS) {
      // The common case: no allocation on a miss.
      if (count < 0) return NO_MATCHES;
      const found = this.find(root, raw, count);
      if (found === null) return NO_MATCHES;
      if (found.length > 1) found.sort(byOrder);
      // Express and Fastify route an empty segment, an absolute-form target, a dot segment, a
      // `\` or a `;` (find-my-way's useSemicolonDelimiter) differently from one another.
      const plain = (features & NOT_PLAIN) === 0;
      const matches: RouteMatch<R>[] = [];
      for (const terminal of found) matches.push(this.result(terminal, plain));
      return matches;
    }
    // Routers read this path in different ways: count it under every rule and resource that any
    // reading gives, and grant no exemption (no match is plain).
    const all: Array<{ order: number; match: RouteMatch<R> }> = [];
    const seen = new Set<string>();
    const collect = (n: number): void => {
      const found = this.find(root, raw, n);
      if (found === null) return;
      for (const terminal of found) {
        const match = this.result(terminal, false);
        const id = `${terminal.order} ${match.key}`;
        if (seen.has(id)) continue;
        seen.add(id);
        all.push({ order: terminal.order, match });
      }
    };
    if (count >= 0) collect(count);
    for (const reading of others) {
      const n = this.scanner.scan(raw, reading);
      if (n >= 0) collect(n);
    }
    if (all.length === 0) return NO_MATCHES;
    // Stable: one rule's keys keep the order of the readings.
    all.sort(byOrder);
    return all.map((entry) => entry.match);
  }

  // The terminals of the last scan's `count` segments, or null.
  private find(root: TrieNode<R> | null, raw: string, count: number): Terminal<R>[] | null {
    if (count > this.depth) return null;
    this.raw = raw;
    this.count = count;
    this.found = null;
    if (root !== null) this.walk(root, 0);
    if (this.anyMethod !== null) this.walk(this.anyMethod, 0);
    const found = this.found as Terminal<R>[] | null;
    this.found = null;
    return found;
  }

  // Depth-first over the three kinds of edge; the work is bounded by the trie's shape along the
  // path, never by how many rules it holds.
  private walk(node: TrieNode<R>, index: number): void {
    if (index === this.count) {
      if (node.terminals !== null) {
        this.found ??= [];
        for (const terminal of node.terminals) this.found.push(terminal);
      }
      return;
    }
    const segments = this.scanner.segments;
    const at = index * SEGMENT_STRIDE;
    if (node.literals !== null) {
      const bucket = node.literals.get(segments[at + 2]!);
      if (bucket !== undefined) {
        for (const edge of bucket) {
          if (this.scanner.equalsFolded(this.raw, index, edge.text))
            this.walk(edge.node, index + 1);
        }
      }
    }
    if (node.version !== null && (segments[at + 3]! & SEGMENT_VERSION) !== 0) {
      this.walk(node.version, index + 1);
    }
    if (node.param !== null) this.walk(node.param, index + 1);
  }

  private result(terminal: Terminal<R>, plainPath: boolean): RouteMatch<R> {
    // A plain object is safe here: the pattern parser refuses the parameter name `__proto__`.
    const params: Record<string, string> = {};
    const names = terminal.pattern.params;
    let key = terminal.pattern.canonical;
    const separator = terminal.fold ? '~' : '=';
    for (let k = 0; k < names.length; k++) {
      const name = names[k]!;
      const id = this.scanner.text(this.raw, terminal.paramAt[k]!, terminal.fold);
      params[name] = id;
      key += ` ${name}${separator}${id}`;
    }
    const plain = plainPath && this.spelledAsWritten(terminal.pattern);
    return { rule: terminal.rule, pattern: terminal.pattern, params, key, plain };
  }

  // True when the last scan's literal segments are spelled exactly as the pattern writes them and
  // its version segments are lower case without escapes: Fastify (by default) and Hono match
  // literals with case, Express and Koa match them before decoding escapes.
  private spelledAsWritten(pattern: RoutePattern): boolean {
    const segments = this.scanner.segments;
    const raw = this.raw;
    for (let k = 0; k < pattern.segments.length; k++) {
      const segment = pattern.segments[k]!;
      const at = k * SEGMENT_STRIDE;
      if (segment.kind === 'version') {
        if ((segments[at + 3]! & SEGMENT_PLAIN_FOLDED) === 0) return false;
      } else if (segment.kind === 'literal') {
        const start = segments[at]!;
        const spelled = segment.spelled;
        if (segments[at + 1]! - start !== spelled.length || !raw.startsWith(spelled, start)) {
          return false;
        }
      }
    }
    return true;
  }
}

const NO_READINGS: readonly number[] = Object.freeze([]);
const LEGACY_READING: readonly number[] = Object.freeze([READ_BACKSLASH]);
const SLASH = 0x2f;

// Characters that make `parseurl` (Express, Koa) hand an origin-form target to legacy `url.parse`.
const LEGACY_PARSE = /[#\t\n\f\r \u00a0\ufeff]/;

/**
 * Readings besides the literal one: only legacy `url.parse`'s `\` as `/`. Hono's node server
 * refuses `\` and resolves dot segments itself, so it needs none.
 */
function otherReadings(raw: string, features: number): readonly number[] {
  if ((features & HAS_BACKSLASH) === 0) return NO_READINGS;
  return (features & HAS_AUTHORITY) !== 0 || raw.charCodeAt(0) !== SLASH || LEGACY_PARSE.test(raw)
    ? LEGACY_READING
    : NO_READINGS;
}
