/** Tests of the compiled route table: keys (invariant 7), the reference matcher, malformed paths. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalPath,
  compileRoutes,
  isConfigurationError,
  liveResourceLimits,
  liveThrottleExemptRoutes,
  type RouteRule,
  VERSION_SEGMENT_PATTERN,
} from '../../src/index.js';
import { describe as describeValue } from '../../src/internal/describe.js';
import { literalHash } from '../../src/limits/route-pattern.js';
import {
  canonicalPattern,
  canonicalSegment,
  foldCanonical,
  hostileNoiseArb,
  logicalSegmentArb,
  type PatternPart,
  pathNoiseArb,
  patternPartsArb,
  rawPathArb,
  referenceCanonicalPath,
  referenceKey,
  referencePlainPath,
  referenceReadings,
  referenceRule,
  type SpellingChoice,
  spellingArb,
  spellPattern,
  spellSegment,
  versionArb,
  withNoise,
} from '../support/routes.js';
import { thrown } from '../support/thrown.js';

function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

// The logical values a request supplies for a pattern: one per version and param segment.
const fillingArb = fc.record({
  versions: fc.array(versionArb, { minLength: 6, maxLength: 6 }),
  ids: fc.array(logicalSegmentArb, { minLength: 6, maxLength: 6 }),
});

interface Filling {
  readonly versions: readonly string[];
  readonly ids: readonly (readonly string[])[];
}

// A raw request path for a pattern: literal and version segments in any case and any encoding
// of unreserved characters, ids spelled with their case kept, noise around them.
function requestPath(
  parts: readonly PatternPart[],
  filling: Filling,
  choices: readonly SpellingChoice[],
  noise: Parameters<typeof withNoise>[1],
): string {
  const segments = parts.map((part, k) => {
    if (part.kind === 'literal') return spellSegment(part.chars, choices, true);
    if (part.kind === 'version') return spellSegment([...filling.versions[k]!], choices, true);
    return spellSegment(filling.ids[k]!, choices, false);
  });
  return withNoise(segments, noise);
}

function expectedKey(
  method: string,
  parts: readonly PatternPart[],
  filling: Filling,
  fold: boolean,
): string {
  let key = canonicalPattern(method, parts);
  parts.forEach((part, k) => {
    if (part.kind !== 'param') return;
    const id = canonicalSegment(filling.ids[k]!);
    key += fold ? ` p${k}~${foldCanonical(id)}` : ` p${k}=${id}`;
  });
  return key;
}

function requestMethod(method: string): string {
  return method === '*' ? 'OPTIONS' : method;
}

describe('compileRoutes', () => {
  it('invariant 7: equivalent spellings of one route and id always produce the same key', () => {
    fc.assert(
      fc.property(
        patternPartsArb,
        spellingArb,
        fc.boolean(),
        fillingArb,
        fc.tuple(fc.array(versionArb, { minLength: 6, maxLength: 6 }), spellingArb, pathNoiseArb),
        fc.tuple(fc.array(versionArb, { minLength: 6, maxLength: 6 }), spellingArb, pathNoiseArb),
        ({ method, parts }, patternSpelling, fold, filling, first, second) => {
          // Arrange: one rule, two requests for the same ids through any version segments.
          const table = compileRoutes([
            { route: spellPattern(method, parts, patternSpelling), caseInsensitiveIds: fold },
          ]);
          const paths = [first, second].map(([versions, choices, noise]) =>
            requestPath(parts, { versions, ids: filling.ids }, choices, noise),
          );
          // Act
          const [a, b] = paths.map((path) => table.match(requestMethod(method), path));
          // Assert
          expect(a).toHaveLength(1);
          expect(b).toHaveLength(1);
          expect(a![0]!.key).toBe(b![0]!.key);
          expect(a![0]!.key).toBe(expectedKey(method, parts, filling, fold));
        },
      ),
    );
  });

  it('invariant 7: distinct ids never share a key', () => {
    fc.assert(
      fc.property(
        patternPartsArb,
        fc.boolean(),
        fillingArb,
        fillingArb,
        spellingArb,
        pathNoiseArb,
        ({ method, parts }, fold, one, other, choices, noise) => {
          const canonicalIds = (filling: Filling) =>
            parts.flatMap((part, k) =>
              part.kind === 'param'
                ? [canonicalSegment(filling.ids[k]!)].map((id) => (fold ? foldCanonical(id) : id))
                : [],
            );
          fc.pre(canonicalIds(one).join('/') !== canonicalIds(other).join('/'));
          const table = compileRoutes([
            { route: canonicalPattern(method, parts), caseInsensitiveIds: fold },
          ]);
          const keyOf = (filling: Filling) =>
            table.match(requestMethod(method), requestPath(parts, filling, choices, noise))[0]?.key;
          expect(keyOf(one)).toBeDefined();
          expect(keyOf(one)).not.toBe(keyOf(other));
        },
      ),
    );
  });

  // A small alphabet, so that generated rules and paths meet often.
  const smallLiteral = fc.constantFrom('a', 'b', 'v1', 'booking', 'a%2Fb');
  const smallPart = fc.oneof(smallLiteral, fc.constant('v*'), fc.constant('{x}'));
  const smallRule = fc.record({
    method: fc.constantFrom('GET', 'PATCH', '*'),
    segments: fc.array(smallPart, { maxLength: 4 }),
    caseInsensitiveIds: fc.boolean(),
  });
  const smallSegment = fc.constantFrom(
    'a',
    'A',
    'b',
    'v1',
    'V1',
    'v2-x',
    '%61',
    'booking',
    'a%2fb',
    'x',
  );
  const smallPath = fc.tuple(fc.array(smallSegment, { maxLength: 4 }), pathNoiseArb);
  const hostileSegment = fc.oneof(
    smallSegment,
    fc.constantFrom('.', '..', '%2e', '%2E%2e', 'a\\b', 'a\\..', 'x;y', ';', 'a%5Cb', '%E2%84%AA'),
  );
  const hostilePath = fc.tuple(fc.array(hostileSegment, { maxLength: 5 }), hostileNoiseArb);

  it('matches a path exactly when the reference matcher does in any of its readings, with the same keys, in rule order, and is plain only for a plain path', () => {
    fc.assert(
      fc.property(
        fc.array(smallRule, { maxLength: 12 }),
        fc.constantFrom('GET', 'get', 'PATCH', 'POST'),
        fc.oneof(smallPath, hostilePath),
        (specs, method, [segments, noise]) => {
          // Arrange: rules with unique param names, and the reference reading of each.
          const rules = specs.map((spec) => ({
            route: `${spec.method} /${spec.segments.map((s, k) => (s === '{x}' ? `{x${k}}` : s)).join('/')}`,
            caseInsensitiveIds: spec.caseInsensitiveIds,
          }));
          const raw = withNoise(segments, noise);
          const readings = referenceReadings(raw);
          const seen = new Set<string>();
          const expected: Array<{ rule: (typeof rules)[number]; key: string; order: number }> = [];
          for (const reading of readings) {
            const canonical = referenceCanonicalPath(raw, 2048, reading);
            if (canonical === undefined) continue;
            rules.forEach((rule, order) => {
              const key = referenceKey(
                referenceRule(rule.route, rule.caseInsensitiveIds),
                method,
                canonical,
              );
              if (key === undefined || seen.has(`${order} ${key}`)) return;
              seen.add(`${order} ${key}`);
              expected.push({ rule, key, order });
            });
          }
          expected.sort((a, b) => a.order - b.order);
          // Act
          const actual = compileRoutes(rules).match(method, raw);
          // Assert
          expect(actual.map(({ rule, key }) => ({ rule, key }))).toEqual(
            expected.map(({ rule, key }) => ({ rule, key })),
          );
          // Where routers could read the path in different ways, no match is plain.
          if (!referencePlainPath(raw)) expect(actual.every((match) => !match.plain)).toBe(true);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('invariant 7: no key stands for two different routes or id lists, across rules', () => {
    fc.assert(
      fc.property(
        fc.array(smallRule, { minLength: 1, maxLength: 12 }),
        fc.array(smallPath, { minLength: 2, maxLength: 20 }),
        (specs, paths) => {
          const table = compileRoutes(
            specs.map((spec) => ({
              route: `${spec.method} /${spec.segments.map((s, k) => (s === '{x}' ? `{x${k}}` : s)).join('/')}`,
              caseInsensitiveIds: spec.caseInsensitiveIds,
            })),
          );
          const meaning = new Map<string, string>();
          for (const [segments, noise] of paths) {
            for (const match of table.match('PATCH', withNoise(segments, noise))) {
              // Case folding of ids is part of what a key means only where there are ids.
              const ids = Object.entries(match.params);
              const fold = ids.length > 0 && match.rule.caseInsensitiveIds;
              const what = JSON.stringify([match.pattern.canonical, fold, ids]);
              expect(meaning.get(match.key) ?? what).toBe(what);
              meaning.set(match.key, what);
            }
          }
        },
      ),
    );
  });

  it('never throws on a malformed path and never matches it, even with catch-all rules', () => {
    // Rules that match every well-formed path up to eight segments deep.
    const catchAll = Array.from({ length: 9 }, (_, depth) => ({
      route: `* /${Array.from({ length: depth }, (_, k) => `{p${k}}`).join('/')}`,
    }));
    const table = compileRoutes(catchAll);
    fc.assert(
      fc.property(rawPathArb, (raw) => {
        // One match per reading that is well formed and at most eight segments deep, less
        // readings that give the same key.
        const keys = new Set(
          referenceReadings(raw).flatMap((reading) => {
            const canonical = referenceCanonicalPath(raw, 2048, reading);
            if (canonical === undefined || canonical.split('/').length > 9) return [];
            return [canonical];
          }),
        );
        const matches = table.match('GET', raw);
        expect(matches).toHaveLength(keys.size);
        expect(new Set(matches.map((m) => `/${Object.values(m.params).join('/')}`))).toEqual(keys);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (method, path) => {
        fc.pre(typeof path !== 'string');
        expect(table.match(method, path)).toEqual([]);
      }),
    );
  });

  it('v* matches exactly the segments VERSION_SEGMENT_PATTERN describes, in any spelling', () => {
    const table = compileRoutes([{ route: 'GET /v*' }]);
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...'vV0189azAZ-._~%', '%76', '%56', '%31', '%2D', '%2F'), {
          minLength: 1,
          maxLength: 6,
        }),
        (pieces) => {
          const raw = `/${pieces.join('')}`;
          const canonical = canonicalPath(raw);
          const expected =
            canonical !== undefined &&
            canonical.lastIndexOf('/') === 0 &&
            VERSION_SEGMENT_PATTERN.test(canonical.slice(1));
          expect(table.match('GET', raw).length === 1).toBe(expected);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('refuses a path over the table’s maximum length', () => {
    const table = compileRoutes([{ route: 'GET /{id}' }], { maxPathLength: 8 });
    expect(table.maxPathLength).toBe(8);
    expect(table.match('GET', '/1234567')).toHaveLength(1);
    expect(table.match('GET', '/12345678')).toEqual([]);
  });

  it('answers one shared empty array on every miss', () => {
    const table = compileRoutes([{ route: 'PATCH /booking/v*/bookings/{id}' }]);
    const miss = table.match('PATCH', '/booking/v1/offers');
    expect(miss).toEqual([]);
    expect(table.match('GET', '/anything')).toBe(miss);
    expect(table.match('PATCH', '/%zz')).toBe(miss);
    expect(table.match('PATCH', '/a/b/c/d/e')).toBe(miss);
  });

  it('files literals whose hashes collide apart, and matches each only by its own text', () => {
    // Arrange: find two literals with one hash (a birthday search over 30-bit hashes).
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let k = 0; pair === undefined; k++) {
      const text = `s${k.toString(36)}`;
      const hash = literalHash(text);
      const earlier = seen.get(hash);
      if (earlier !== undefined) pair = [earlier, text];
      seen.set(hash, text);
    }
    const [one, two] = pair;
    const table = compileRoutes([
      { route: `GET /${one}`, n: 1 },
      { route: `GET /${two}`, n: 2 },
    ]);
    // Act and assert: same hash, distinct rules.
    expect(literalHash(one)).toBe(literalHash(two));
    expect(table.match('GET', `/${one}`).map((m) => m.rule.n)).toEqual([1]);
    expect(table.match('GET', `/${two.toUpperCase()}`).map((m) => m.rule.n)).toEqual([2]);
  });

  it('never matches a segment whose hash equals a literal of another length', () => {
    // Arrange: a literal of four characters and a segment of five with one hash.
    const short = new Map<number, string>();
    for (let k = 0; k < 36 ** 3; k++) {
      const text = `s${k.toString(36).padStart(3, '0')}`;
      short.set(literalHash(text), text);
    }
    let pair: [string, string] | undefined;
    for (let k = 0; pair === undefined; k++) {
      const text = `t${k.toString(36).padStart(4, '0')}`;
      const literal = short.get(literalHash(text));
      if (literal !== undefined) pair = [literal, text];
    }
    const [literal, other] = pair;
    const table = compileRoutes([{ route: `GET /${literal}` }]);
    // Act and assert
    expect(literalHash(other)).toBe(literalHash(literal));
    expect(table.match('GET', `/${other}`)).toEqual([]);
    expect(table.match('GET', `/${literal}`)).toHaveLength(1);
  });

  it('applies every rule on one route: 150 per 60 min and 50 per 20 min', () => {
    const table = compileRoutes(liveResourceLimits);
    const matches = table.match('PUT', '/rateplan/v1/rate-plans/RP-1/rates');
    expect(matches.map((m) => [m.rule.limit, m.rule.periodMs])).toEqual([
      [150, 3_600_000],
      [50, 1_200_000],
    ]);
    expect(matches.map((m) => m.key)).toEqual([
      'PUT /rateplan/v*/rate-plans/{id}/rates id=RP-1',
      'PUT /rateplan/v*/rate-plans/{id}/rates id=RP-1',
    ]);
    expect(matches[0]!.params).toEqual({ id: 'RP-1' });
  });

  it('shares one key across v1 and a non-numeric version, and separates bookings 1 and 2', () => {
    const table = compileRoutes(liveResourceLimits);
    const key = (path: string) => table.match('PATCH', path)[0]?.key;
    expect(key('/booking/v1/bookings/1')).toBe('PATCH /booking/v*/bookings/{id} id=1');
    expect(key('/booking/v0-nsfh/bookings/1')).toBe(key('/booking/v1/bookings/1'));
    expect(key('/Booking/V2//bookings/%31/?x')).toBe(key('/booking/v1/bookings/1'));
    // Dot segments and backslashes stay: Express and Fastify route these to other ids.
    expect(key('/booking/v1/bookings/1\\')).toBe('PATCH /booking/v*/bookings/{id} id=1%5C');
    expect(key('/booking/v1/bookings/Z\\..\\1')).toBe(
      'PATCH /booking/v*/bookings/{id} id=Z%5C..%5C1',
    );
    expect(key('/booking/v1/bookings/./1')).toBeUndefined();
    // The Kelvin sign is a k in a literal, as find-my-way's caseSensitive: false reads it.
    expect(key('/booking/v1/boo%E2%84%AAings/1')).toBe(key('/booking/v1/bookings/1'));
    expect(key('/booking/v1/boo\u212Aings/1')).toBe(key('/booking/v1/bookings/1'));
    expect(key('/booking/v1/bookings/2')).not.toBe(key('/booking/v1/bookings/1'));
    expect(key('/booking/vouchers/bookings/1')).toBeUndefined();
  });

  it('matches the five Live offers GETs and not a reservations GET', () => {
    const table = compileRoutes(liveThrottleExemptRoutes.map((route) => ({ route })));
    for (const path of [
      '/booking/v1/offers',
      '/booking/v1/rate-plan-offers',
      '/booking/v0-nsfh/service-offers',
      '/booking/v1/reservations/R1/offers',
      '/booking/v2/reservations/R1/service-offers',
    ]) {
      expect(table.match('GET', path)).toHaveLength(1);
    }
    expect(table.match('GET', '/booking/v1/reservations/R1')).toEqual([]);
    // Plain spellings only: an escape, a change of case, a doubled or trailing slash, a dot
    // segment, a backslash, a `;` or an absolute-form target make a match that exempts nothing.
    expect(table.match('GET', '/booking/v1/offers?x=1')[0]?.plain).toBe(true);
    expect(table.match('GET', '/booking/v1/reservations/R%31/offers')[0]?.plain).toBe(true);
    for (const path of [
      '/booking/v1/%6Fffers',
      '/booking/V1/offers',
      '/Booking/v1/offers',
      '/booking//v1/offers',
      '/booking/v1/offers/',
      '/booking/v1/reservations/../offers',
      '/booking/v1/reservations/R1;x/offers',
      '/booking/v1/reservations/R\\1/offers',
      'http://h/booking/v1/offers',
    ]) {
      const [match] = table.match('GET', path);
      expect(match?.plain, path).toBe(false);
    }
    expect(table.match('GET', '/booking/v1/reservations')).toEqual([]);
    expect(table.match('POST', '/booking/v1/offers')).toEqual([]);
  });

  it('folds the request method, and * in a pattern matches any method', () => {
    const table = compileRoutes([{ route: 'PATCH /a' }, { route: '* /a' }]);
    expect(table.match('patch', '/a').map((m) => m.rule.route)).toEqual(['PATCH /a', '* /a']);
    expect(table.match('BREW', '/a').map((m) => m.key)).toEqual(['* /a']);
    expect(table.match(undefined, '/a')).toEqual([]);
  });

  it('keeps id case unless the rule says ids are case-insensitive', () => {
    const table = compileRoutes<RouteRule & { name: string }>([
      { route: 'GET /r/{id}', name: 'kept' },
      { route: 'GET /r/{id}', name: 'folded', caseInsensitiveIds: true },
    ]);
    expect(table.match('GET', '/r/AbC%2f').map((m) => [m.rule.name, m.params.id, m.key])).toEqual([
      ['kept', 'AbC%2F', 'GET /r/{id} id=AbC%2F'],
      ['folded', 'abc%2F', 'GET /r/{id} id~abc%2F'],
    ]);
  });

  it('captures into own properties, whatever the parameter is called', () => {
    const [match] = compileRoutes([{ route: 'GET /{constructor}/{toString}' }]).match(
      'GET',
      '/a/b',
    );
    expect(match?.params).toEqual({ constructor: 'a', toString: 'b' });
    expect(Object.keys(match?.params ?? {})).toEqual(['constructor', 'toString']);
  });

  it('refuses bad rules and bad options at compile time', () => {
    const codeOf = (action: () => unknown): string | undefined => {
      try {
        action();
      } catch (error) {
        return isConfigurationError(error) ? error.code : 'not a configuration error';
      }
      return undefined;
    };
    expect(codeOf(() => compileRoutes('GET /a' as never))).toBe('invalid_route_rule');
    expect(codeOf(() => compileRoutes([null as never]))).toBe('invalid_route_rule');
    expect(codeOf(() => compileRoutes([{ route: 1 } as never]))).toBe('invalid_route_rule');
    expect(
      codeOf(() => compileRoutes([{ route: 'GET /a', caseInsensitiveIds: 'yes' } as never])),
    ).toBe('invalid_route_rule');
    expect(codeOf(() => compileRoutes([], { maxPathLength: 0 }))).toBe('invalid_option');
    expect(codeOf(() => compileRoutes([{ route: 'GET /a' }, { route: 'GET /a/' }]))).toBe(
      'invalid_route_pattern',
    );
    expect(thrown(() => compileRoutes([{ route: 'GET /a' }, { route: 'GET /a/' }]))).toMatchObject({
      code: 'invalid_route_pattern',
      message:
        'rules[1].route must be a route pattern, got one wrong at column 7: remove the trailing slash: canonical paths have none.\n  GET /a/\n        ^',
    });
  });
  it('accepts a rule exactly when some path within maxPathLength matches it: the shortest path its pattern matches', () => {
    fc.assert(
      fc.property(
        patternPartsArb,
        spellingArb,
        fc.integer({ min: 1, max: 48 }),
        ({ method, parts }, choices, maxPathLength) => {
          // Arrange: the shortest canonical path the pattern matches: each literal as it is,
          // `v1` for a version, one character for an id.
          const route = spellPattern(method, parts, choices);
          const segments = parts.map((part) =>
            part.kind === 'literal'
              ? canonicalSegment(part.chars)
              : part.kind === 'version'
                ? 'v1'
                : 'x',
          );
          const shortest = `/${segments.join('/')}`;
          // The root counts as 0 characters, as the scanner counts it.
          const length = segments.length === 0 ? 0 : shortest.length;
          // Act
          let table: ReturnType<typeof compileRoutes> | undefined;
          const caught = thrown(() => {
            table = compileRoutes([{ route }], { maxPathLength });
          });
          // Assert
          if (length <= maxPathLength) {
            expect(caught).toBeUndefined();
            expect(table!.match(method === '*' ? 'GET' : method, shortest)).toHaveLength(1);
          } else {
            expect(isConfigurationError(caught) && caught.code).toBe('invalid_route_rule');
            expect((caught as Error).message).toBe(
              `rules[0].route must be a route that some path of at most maxPathLength (${maxPathLength}) characters matches once canonical (every path this one matches has at least ${length}: shorten the route or raise maxPathLength), got ${describeValue(route)}.`,
            );
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('refuses a literal route longer than the default maxPathLength of 2048', () => {
    expect(() => compileRoutes([{ route: `GET /${'a'.repeat(2047)}` }])).not.toThrow();
    const caught = thrown(() => compileRoutes([{ route: `GET /${'a'.repeat(2048)}` }]));
    expect(isConfigurationError(caught) && caught.code).toBe('invalid_route_rule');
  });

  it.each<[string, () => unknown, string]>([
    [
      'rules that are a revoked proxy',
      () => compileRoutes(revokedProxy() as never),
      'invalid_route_rule',
    ],
    [
      'a rule that is a revoked proxy',
      () => compileRoutes([revokedProxy() as never]),
      'invalid_route_rule',
    ],
    [
      'a rule whose route getter throws',
      () =>
        compileRoutes([
          {
            get route(): string {
              throw new Error('boom');
            },
          },
        ]),
      'invalid_route_rule',
    ],
    [
      'options that are a revoked proxy',
      () => compileRoutes([], revokedProxy() as never),
      'invalid_option',
    ],
    ['options that are null', () => compileRoutes([], null as never), 'invalid_option'],
    [
      'a maxPathLength that is a revoked proxy',
      () => compileRoutes([], { maxPathLength: revokedProxy() as never }),
      'invalid_option',
    ],
  ])('%s is a ConfigurationError, not what the read threw', (_, make, code) => {
    const caught = thrown(make);
    expect(isConfigurationError(caught) && caught.code).toBe(code);
  });

  it('reads a rule’s route and case flag once each', () => {
    let reads = 0;
    const rule = {
      get route(): string {
        reads++;
        return reads === 1 ? 'GET /a/{id}' : 'GET /b/{id}';
      },
    };
    const table = compileRoutes([rule]);
    expect(reads).toBe(1);
    expect(table.match('GET', '/a/1')).toHaveLength(1);
  });
});
