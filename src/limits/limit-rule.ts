/**
 * Route rules of a preset: per-resource limits and exemptions (the specification's "Per-resource
 * limits" and "Throttling").
 * @module
 */
import {
  checkValue,
  conflictingKeys,
  INVALID,
  listOf,
  oneOf,
  type Rule,
  readOptions,
  refused,
  withFields,
  worded,
} from '../internal/options.js';
import { type Duration, formatDuration, toMilliseconds } from './duration.js';
import { copyPolicies, limitCount, type Policy, window } from './policy.js';
import type { ResourceLimitRow } from './resource-tables.js';
import { parseRoutePattern } from './route-pattern.js';
import { compileRoutes, type RouteMatch, type RouteTable } from './route-table.js';

/** A rule about a route. */
export interface LimitRule {
  /** The route pattern, e.g. `PATCH /booking/v*` + `/bookings/{id}`. */
  readonly route: string;
  /** Policies counted per client, account and resource of each matching request. */
  readonly policies?: readonly Policy[];
  /** Names of the preset's own policies that matching requests are exempt from. */
  readonly exempt?: readonly string[];
  /** Fold the ASCII case of captured ids (so `ABC` and `abc` are one resource). @defaultValue false */
  readonly caseInsensitiveIds?: boolean;
}

/** Options of {@link resourceRules}. */
export interface ResourceRulesOptions {
  /** Prefix of each policy's name. @defaultValue `'resource'` */
  namePrefix?: string;
}

/**
 * Turn per-resource table rows into rules: rows on the same route become one rule with one
 * window policy per row, since all of them apply (150 per 60 min AND 50 per 20 min).
 * @param rows - `{ route, limit, periodMs }` rows, such as `liveResourceLimits`
 * @param options - the name prefix
 * @throws ConfigurationError `invalid_route_rule` for rows that are not an array of objects with
 *   a string route, `invalid_limit` or `invalid_duration` for a row's numbers, `invalid_option`
 *   for bad options
 * @example
 * ```ts
 * resourceRules([{ route: 'PATCH /booking/v*' + '/bookings/{id}', limit: 20, periodMs: 300_000 }]);
 * // [{ route, policies: [window(20, 300_000, { name: 'resource PATCH /booking/v*' + '/bookings/{id}: 20 per 5 min' })] }]
 * ```
 */
export function resourceRules(
  rows: readonly ResourceLimitRow[],
  options: ResourceRulesOptions = {},
): LimitRule[] {
  const { namePrefix } = readOptions(options, 'resourceRules', RESOURCE_RULES_OPTIONS, {
    defaults: { namePrefix: 'resource' },
  });
  return rulesOfRows(rows, namePrefix, 'resourceRules rows');
}

const anyString: Rule<string> = {
  expected: 'a string',
  read: (value) => (typeof value === 'string' ? value : INVALID),
};

const RESOURCE_RULES_OPTIONS = { namePrefix: anyString };

const aRoute: Rule<string> = {
  expected: "a route pattern such as 'PATCH /booking/v*/bookings/{id}'",
  code: 'invalid_route_rule',
  read: (value) => (typeof value === 'string' ? value : INVALID),
};

const rowList = listOf(
  withFields(
    ['route', 'limit', 'periodMs'],
    'a { route, limit, periodMs } row',
    'invalid_route_rule',
  ),
);

/**
 * {@link resourceRules}, with messages naming `what`, e.g. `livePreset option resourceLimits`.
 * @internal
 */
export function rulesOfRows(rows: unknown, prefix: string, what: string): LimitRule[] {
  const byRoute = new Map<string, Policy[]>();
  checkValue(rowList, rows, what).forEach((row, index) => {
    const at = `${what}[${index}]`;
    const route = checkValue(aRoute, row.route, `${at}.route`);
    const limit = checkValue(limitCount, row.limit, `${at}.limit`);
    const ms = toMilliseconds(row.periodMs as Duration, `${at}.periodMs`);
    const policies = byRoute.get(route) ?? [];
    policies.push(
      window(limit, ms, { name: `${prefix} ${route}: ${limit} per ${formatDuration(ms)}` }),
    );
    byRoute.set(route, policies);
  });
  return [...byRoute].map(([route, policies]) =>
    Object.freeze({ route, policies: Object.freeze(policies) }),
  );
}

/**
 * Rules that exempt the given routes from the named policies (the throttle, for the Live
 * business-critical offers calls).
 * @param routes - route patterns, such as `liveThrottleExemptRoutes`
 * @param policyNames - names of preset policies the routes skip
 * @throws ConfigurationError `invalid_route_rule` when either is not an array of strings
 */
export function exemptionRules(
  routes: readonly string[],
  policyNames: readonly string[],
): LimitRule[] {
  return rulesOfExemptions(
    routes,
    policyNames,
    'exemptionRules routes',
    'exemptionRules policyNames',
  );
}

/**
 * {@link exemptionRules}, with messages that name where the routes come from.
 * @param routes - the routes as given
 * @param policyNames - the names as given
 * @param routesWhat - where the routes come from, e.g. `livePreset option throttleExemptRoutes`
 * @param namesWhat - where the names come from
 * @internal
 */
export function rulesOfExemptions(
  routes: unknown,
  policyNames: unknown,
  routesWhat: string,
  namesWhat: string,
): LimitRule[] {
  const patterns = checkValue(routeList, routes, routesWhat);
  const names = Object.freeze(checkValue(nameList, policyNames, namesWhat));
  return patterns.map((route) => Object.freeze({ route, exempt: names }));
}

const aString = worded(anyString, anyString.expected, 'invalid_route_rule');

const routeList = worded(
  listOf(aString),
  "an array of route patterns such as 'GET /booking/v*/offers'",
);

const nameList = worded(listOf(aString), 'an array of policy names');

/** A rule checked and resolved against its preset's policies. */
export interface CompiledRule extends LimitRule {
  /** Positions of the preset's policies this rule exempts from. */
  readonly exemptPositions: readonly number[];
  /** The rule's policies (empty when it only exempts). */
  readonly ownPolicies: readonly Policy[];
  /** Positions `0..ownPolicies.length - 1`: every policy of a resource scope applies. */
  readonly allPositions: readonly number[];
}

/** A resource scope that a request's rules open: its canonical key and its policies. */
export interface ResourceScope {
  /** The canonical resource key (see {@link RouteMatch.key}). */
  readonly key: string;
  /** The rule's policies. */
  readonly policies: readonly Policy[];
  /** Their positions: all of them apply. */
  readonly positions: readonly number[];
}

/** What a preset's rules make of one request. */
export interface RuleEffect {
  /** Positions of the preset's own policies that still apply (the exempt ones removed). */
  readonly active: readonly number[];
  /** The resource scopes it is counted in, besides the client and account. */
  readonly resources: readonly ResourceScope[];
}

/** The rules of one preset, compiled into one route table. */
export interface CompiledRules {
  /** The route table, or undefined when the preset has no rules (no lookup at all). */
  readonly table: RouteTable<CompiledRule> | undefined;
  /**
   * The rules' effect on a request, remembered for the most recent paths (see
   * {@link ROUTE_EFFECT_CACHE_SIZE}); undefined when the preset has no rules.
   */
  readonly effectOf: ((method: string, path: string) => RuleEffect) | undefined;
  /** The names of the rules' own policies (those of resource limits). */
  readonly ruleNames: readonly string[];
}

/**
 * Method and path pairs whose rule effect one preset remembers. A lookup canonicalises the path
 * and walks the rule trie (about half a microsecond); a remembered one is two map reads. Past this
 * many the memory is emptied and starts again, so that paths that never repeat (ids, or an
 * attacker's) cost a lookup each and hold a bounded amount of memory. Paths longer than 512
 * characters before their query are not remembered.
 */
export const ROUTE_EFFECT_CACHE_SIZE = 4_096;

// The longest path (before its query) remembered; about 1 KB of text, so 4 MB at most in all.
const REMEMBERED_PATH_LENGTH = 512;

/**
 * Check a preset's rules and compile them into one route table.
 * @param rules - the preset's rules
 * @param presetPolicies - the preset's own policies, which exemptions name
 * @param where - where the rules come from, for messages (e.g. `preset live`)
 * @throws ConfigurationError `invalid_route_rule` for a malformed rule, an unknown exemption, or
 *   two rules with policies on one route; `invalid_route_pattern` for a bad pattern
 */
export function compileLimitRules(
  rules: readonly LimitRule[] | undefined,
  presetPolicies: readonly Policy[],
  where: string,
): CompiledRules {
  return compileRuleList(readLimitRules(rules, where), presetPolicies, where);
}

/**
 * A preset's rules read once into a list of their own; none when left out, but `null` or a lone
 * rule object is refused, never read as "no rules".
 * @internal
 */
export function readLimitRules(rules: unknown, where: string): readonly RuleFields[] {
  if (rules === undefined) return [];
  return checkValue(ruleList, rules, `${where}: rules`);
}

/** A rule's fields, read once each. @internal */
export type RuleFields = Readonly<
  Record<'route' | 'policies' | 'exempt' | 'caseInsensitiveIds', unknown>
>;

const ruleList: Rule<RuleFields[]> = worded(
  listOf(
    withFields(
      ['route', 'policies', 'exempt', 'caseInsensitiveIds'],
      'an object with a route',
      'invalid_route_rule',
    ),
  ),
  'an array',
);

/** The names a rule's `exempt` may give: those of the preset's own policies. */
function exemptNames(presetPolicies: readonly Policy[]): Rule<string[]> {
  const names = presetPolicies.map((p) => p.name);
  const expected =
    names.length === 0
      ? 'the name of a policy of the preset, which has none'
      : `the name of a policy of the preset, ${oneOf(...names).expected}`;
  return worded(
    listOf(worded(oneOf(...names), expected, 'invalid_route_rule')),
    'an array of policy names',
  );
}

/** {@link compileLimitRules} of a list read by {@link readLimitRules}. @internal */
export function compileRuleList(
  list: readonly RuleFields[],
  presetPolicies: readonly Policy[],
  where: string,
): CompiledRules {
  if (list.length === 0) return { table: undefined, effectOf: undefined, ruleNames: [] };
  const compiled = list.map((rule, index) =>
    compileRule(rule, presetPolicies, `${where}: rules[${index}]`),
  );
  const table = compileRoutes(compiled);
  checkOneCountPerRoute(table, where);
  return {
    ruleNames: compiled.flatMap((rule) => rule.ownPolicies.map((policy) => policy.name)),
    table,
    effectOf: effectCache(
      table,
      presetPolicies.map((_, i) => i),
    ),
  };
}

// The compiled rule is plain data of its own, never the object given; compileRoutes checks the
// route and caseInsensitiveIds.
function compileRule(
  rule: RuleFields,
  presetPolicies: readonly Policy[],
  at: string,
): CompiledRule {
  const { route, policies, exempt, caseInsensitiveIds } = rule;
  const ownPolicies = policies === undefined ? [] : copyPolicies(policies, `${at}.policies`);
  const names =
    exempt === undefined ? [] : checkValue(exemptNames(presetPolicies), exempt, `${at}.exempt`);
  const exemptPositions = names.map((name) => presetPolicies.findIndex((p) => p.name === name));
  if (ownPolicies.length === 0 && exemptPositions.length === 0) {
    throw conflictingKeys(
      at,
      'a non-empty policies, a non-empty exempt or both',
      [],
      'invalid_route_rule',
    );
  }
  return {
    route: route as string,
    ...(caseInsensitiveIds === undefined
      ? {}
      : { caseInsensitiveIds: caseInsensitiveIds as boolean }),
    policies: ownPolicies,
    exempt: names as string[],
    exemptPositions,
    ownPolicies,
    allPositions: ownPolicies.map((_, i) => i),
  };
}

// Two rules with policies on one route would count one resource under two policy lists.
function checkOneCountPerRoute(table: RouteTable<CompiledRule>, where: string): void {
  const seen = new Map<string, number>();
  table.rules.forEach((rule, index) => {
    if (rule.ownPolicies.length === 0) return;
    const canonical = parseRoutePattern(rule.route).canonical;
    const earlier = seen.get(canonical);
    if (earlier !== undefined) {
      throw refused(
        `${where}: rules[${index}].route`,
        `a route no earlier rule with policies counts (rules[${earlier}] counts ${canonical}: put all its policies in one rule)`,
        rule.route,
        'invalid_route_rule',
      );
    }
    seen.set(canonical, index);
  });
}

/** The rules' effect on a request, through a bounded memory of recent method and path pairs. */
function effectCache(
  table: RouteTable<CompiledRule>,
  all: readonly number[],
): (method: string, path: string) => RuleEffect {
  const none: RuleEffect = { active: all, resources: [] };
  const byMethod = new Map<string, Map<string, RuleEffect>>();
  let size = 0;
  return (method, path) => {
    // The rules read the path up to its query or fragment: the rest is not part of the key.
    const q = path.indexOf('?');
    const h = path.indexOf('#');
    const end = q === -1 ? h : h === -1 ? q : Math.min(q, h);
    const key = end === -1 ? path : path.slice(0, end);
    let paths = byMethod.get(method);
    const known = paths?.get(key);
    if (known !== undefined) return known;
    let active = all;
    const resources: ResourceScope[] = [];
    for (const { rule, key: resource, plain } of table.match(method, path)) {
      // An exemption only where every router routes the path to the exempt handler: a spelling
      // some router reads otherwise (a backslash, a dot segment, an escape, a change of case) is
      // limited like any other request.
      if (rule.exemptPositions.length > 0 && plain)
        active = active.filter((i) => !rule.exemptPositions.includes(i));
      if (rule.ownPolicies.length > 0) {
        resources.push({ key: resource, policies: rule.ownPolicies, positions: rule.allPositions });
      }
    }
    const effect = active === all && resources.length === 0 ? none : { active, resources };
    // A long path is looked up each time: remembered, a few thousand of them would hold megabytes.
    // So is one with a backslash, whose readings depend on what follows its query (see
    // RouteMatch.plain), which the memory's key leaves out.
    if (key.length > REMEMBERED_PATH_LENGTH || key.includes('\\')) return effect;
    if (size >= ROUTE_EFFECT_CACHE_SIZE) {
      byMethod.clear();
      size = 0;
      paths = undefined;
    }
    if (paths === undefined) {
      paths = new Map();
      byMethod.set(method, paths);
    }
    paths.set(key, effect);
    size++;
    return effect;
  };
}
