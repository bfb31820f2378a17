import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AccountType,
  createLimiter,
  type Decision,
  developmentResourceLimits,
  exemptionRules,
  FakeClock,
  isConfigurationError,
  type LimitPreset,
  type LimitRequest,
  livePreset,
  liveResourceLimits,
  liveThrottleExemptRoutes,
  presets,
  resourceRules,
  window,
} from '../../src/index.js';
import {
  type CompiledRules,
  compileLimitRules,
  ROUTE_EFFECT_CACHE_SIZE,
} from '../../src/limits/limit-rule.js';
import { ExactOracle, maxInAnyWindow } from '../support/oracle.js';
import { thrown } from '../support/thrown.js';

function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

const base = { clientId: 'client-1', accountCode: 'ACME', accountType: 'live' } as const;
const patch = (path: string): LimitRequest<AccountType> => ({ ...base, method: 'PATCH', path });
const get = (path: string): LimitRequest<AccountType> => ({ ...base, method: 'GET', path });
const MINUTE = 60_000;

/** Admitted requests end at once, so that the throttle stays out of the way. */
const done = (decision: Decision): boolean => {
  if (decision.allowed) decision.release();
  return decision.allowed;
};

describe('route rules: the specification scenarios', () => {
  it('20 PATCHes of booking 1 and 20 of booking 2 in 5 minutes are admitted on Live; the 21st of booking 1 is refused with a truthful Retry-After while booking 2 has room', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.byAccountType, clock });
    for (let i = 0; i < 20; i++) {
      clock.set(i * 7_000);
      expect(done(limiter.check(patch('/booking/v1/bookings/B1')))).toBe(true);
      expect(done(limiter.check(patch('/booking/v1/bookings/B2')))).toBe(true);
    }
    clock.set(200_000);
    const refused = limiter.check(patch('/booking/v1/bookings/B1'));
    expect(refused).toMatchObject({ allowed: false, reason: 'limit', retryAfterSeconds: 100 });
    expect(refused.allowed ? undefined : refused.policy?.name).toBe(
      'resource PATCH /booking/v*/bookings/{id}: 20 per 5 min',
    );
    // The global limits are untouched by the refusal: other resources and endpoints still pass.
    expect(done(limiter.check(get('/booking/v1/reservations')))).toBe(true);
    // Booking 2 has no room either (20 in the window), but booking 3 has its own counter.
    expect(done(limiter.check(patch('/booking/v1/bookings/B3')))).toBe(true);
    // The announced retry is admitted: the first patch of booking 1 (t = 0) has left the window.
    clock.set(300_000);
    expect(done(limiter.check(patch('/booking/v1/bookings/B1')))).toBe(true);
  });

  it('booking 2 still has room when booking 1 is exhausted', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.live, clock });
    for (let i = 0; i < 20; i++) done(limiter.check(patch('/booking/v1/bookings/B1')));
    expect(done(limiter.check(patch('/booking/v1/bookings/B1')))).toBe(false);
    for (let i = 0; i < 20; i++)
      expect(done(limiter.check(patch('/booking/v1/bookings/B2')))).toBe(true);
  });

  it('v1 and a non-numeric version segment share one counter', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.live, clock });
    for (let i = 0; i < 10; i++) {
      expect(done(limiter.check(patch('/booking/v1/reservations/R1')))).toBe(true);
      expect(done(limiter.check(patch('/booking/v0-nsfh/reservations/R1')))).toBe(true);
    }
    expect(done(limiter.check(patch('/booking/V2/reservations/R1')))).toBe(false);
  });

  it('both limits of one endpoint apply: each counts every request, and a refusal names the one that frees up last', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.live, clock });
    const put = (): LimitRequest => ({
      ...base,
      method: 'PUT',
      path: '/rateplan/v1/rate-plans/RP1/rates',
    });
    const remaining = () => {
      const d = limiter.check({ ...put(), path: '/rateplan/v1/rate-plans/OTHER/rates' });
      done(d);
      return d;
    };
    for (const start of [0, 20, 40]) {
      clock.set(start * MINUTE);
      for (let i = 0; i < 50; i++) expect(done(limiter.check(put()))).toBe(true);
      const refused = limiter.check(put());
      expect(refused).toMatchObject({
        allowed: false,
        reason: 'limit',
        retryAfterSeconds: 20 * 60,
      });
      // 50 per 20 min frees up at start + 20 min; 150 per 60 min no later (it is full only at 40).
      expect(refused.allowed ? undefined : refused.policy?.name).toBe(
        'resource PUT /rateplan/v*/rate-plans/{id}/rates: 50 per 20 min',
      );
      const statuses = limiter.check(put()).statuses.slice(-2);
      expect(statuses.map((s) => s.remaining)).toEqual([150 - 50 * (start / 20 + 1), 0]);
    }
    expect(
      remaining()
        .statuses.slice(-2)
        .map((s) => s.remaining),
    ).toEqual([149, 49]);
    clock.set(60 * MINUTE);
    expect(done(limiter.check(put()))).toBe(true);
  });

  it('on Live, an offers GET passes a saturated throttle while a reservations GET is refused', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: livePreset({ concurrency: 2 }), clock });
    expect(limiter.check(get('/booking/v1/reservations')).allowed).toBe(true);
    expect(limiter.check(get('/booking/v1/reservations')).allowed).toBe(true);
    for (const route of [
      '/booking/v1/offers',
      '/booking/v1/rate-plan-offers',
      '/booking/v1/service-offers',
      '/booking/v1/reservations/R1/offers',
      '/booking/v1/reservations/R1/service-offers',
    ]) {
      const d = limiter.check(get(route));
      expect(d.allowed).toBe(true);
      // An exempt request takes no lease.
      expect(d.statuses.map((s) => s.policy.kind)).not.toContain('concurrency');
    }
    const refused = limiter.check(get('/booking/v1/reservations'));
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    expect(refused.allowed ? undefined : refused.policy?.name).toBe('throttle: 2 concurrent');
    // The throttle's block does not reach the exempt calls either.
    expect(limiter.check(get('/booking/v1/offers')).allowed).toBe(true);
  });

  it('on Development nothing passes a saturated throttle, offers included', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.development, clock });
    for (let i = 0; i < 5; i++) {
      clock.set(i * 1_000);
      expect(limiter.check(get(`/booking/v1/reservations/R${i}`)).allowed).toBe(true);
    }
    clock.set(5_000);
    const refused = limiter.check(get('/booking/v1/offers'));
    expect(refused.allowed ? undefined : refused.policy?.name).toBe('throttle: 5 concurrent');
  });

  it('a malformed path never throws: it matches no rule and still counts towards the global limits', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.development, clock });
    const bad = [
      '/booking/v1/bookings/%zz',
      '/booking/v1/bookings/a\u0000b',
      `/${'x'.repeat(5_000)}`,
      '',
    ];
    for (const path of bad) expect(limiter.check(patch(path)).statuses.length).toBe(3);
    limiter.check(patch('/x'));
    expect(limiter.check(patch('/booking/v1/bookings/%zz'))).toMatchObject({
      allowed: false,
      reason: 'limit',
    });
  });
});

describe('route rules: invariants', () => {
  const spellings = (id: string) =>
    fc.constantFrom(
      `/booking/v1/bookings/${id}`,
      `/booking/V7/bookings/${id}/`,
      `//booking/v0-nsfh//bookings/${id}?x=1`,
      `/booking/v2/./bookings/${id}`,
      `/booking/v2/x/../bookings/${id}`,
      `/%62ooking/v1/Bookings/${id}#frag`,
    );

  it('equivalent spellings share one resource counter and distinct ids never do (invariant 7), and no resource window over-admits (invariant 1)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.constantFrom('B1', 'B2', 'b1', 'B%2F1'),
            fc.nat(5),
            fc.integer({ min: 0, max: 20_000 }),
          ),
          { maxLength: 120 },
        ),
        (steps) => {
          const clock = new FakeClock(0);
          const limiter = createLimiter({ preset: livePreset({ concurrency: 1_000 }), clock });
          const oracle = new ExactOracle();
          const [rule] = resourceRules(liveResourceLimits).filter(
            (r) => r.route === 'PATCH /booking/v*/bookings/{id}',
          );
          const policy = rule!.policies![0]!;
          const admitted = new Map<string, number[]>();
          for (const [id, spelling, gap] of steps) {
            clock.advance(gap);
            const path = fc.sample(spellings(id), { seed: spelling, numRuns: 1 })[0]!;
            const decision = limiter.check(patch(path));
            // The reference counts by the id alone: spellings are irrelevant, ids are case-sensitive.
            const expected = oracle.decideEntries(clock.now(), [
              { id: `global:${presets.live.policies[0]!.name}`, policy: presets.live.policies[0]! },
              { id: `global:${presets.live.policies[1]!.name}`, policy: presets.live.policies[1]! },
              { id: `global:${presets.live.policies[2]!.name}`, policy: presets.live.policies[2]! },
              { id: `booking:${id}`, policy },
            ]);
            expect(decision.allowed).toBe(expected.allowed);
            if (decision.allowed) {
              decision.release();
              admitted.set(id, [...(admitted.get(id) ?? []), clock.now()]);
            } else {
              expect(decision.retryAfterSeconds).toBe(expected.retryAfterSeconds);
            }
          }
          for (const times of admitted.values())
            expect(
              maxInAnyWindow(times, policy.kind === 'window' ? policy.windowMs : 0),
            ).toBeLessThanOrEqual(20);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('route rules: presets and configuration', () => {
  it('the presets carry the specification tables and exemptions, row by row', () => {
    const rows = (preset: LimitPreset) =>
      (preset.rules ?? []).flatMap((rule) =>
        (rule.policies ?? []).map((p) =>
          p.kind === 'window' ? [rule.route, p.limit, p.windowMs] : [],
        ),
      );
    expect(rows(presets.live)).toEqual(
      liveResourceLimits.map((r) => [r.route, r.limit, r.periodMs]),
    );
    expect(rows(presets.development)).toEqual(
      developmentResourceLimits.map((r) => [r.route, r.limit, r.periodMs]),
    );
    expect(rows(presets.trial)).toEqual(rows(presets.development));
    const exempt = (preset: LimitPreset) =>
      (preset.rules ?? []).filter((r) => r.exempt !== undefined);
    expect(exempt(presets.live).map((r) => [r.route, r.exempt])).toEqual(
      liveThrottleExemptRoutes.map((route) => [route, ['throttle: 20 concurrent']]),
    );
    expect(exempt(presets.development)).toEqual([]);
  });

  it('rules can be added, replaced or dropped, and numbers changed', () => {
    const clock = new FakeClock(0);
    const custom: LimitPreset = {
      ...presets.live,
      rules: [
        ...(presets.live.rules ?? []).filter((r) => r.route !== 'PATCH /booking/v*/bookings/{id}'),
        {
          route: 'PATCH /booking/v*/bookings/{id}',
          policies: [window(2, '1 min', { name: 'bookings: 2 per min' })],
        },
        {
          route: 'DELETE /booking/v*/bookings/{id}',
          policies: [window(1, '1h', { name: 'delete: 1 per h' })],
        },
      ],
    };
    const limiter = createLimiter({ preset: custom, clock });
    expect(done(limiter.check(patch('/booking/v1/bookings/B1')))).toBe(true);
    expect(done(limiter.check(patch('/booking/v1/bookings/B1')))).toBe(true);
    expect(done(limiter.check(patch('/booking/v1/bookings/B1')))).toBe(false);
    expect(
      done(limiter.check({ ...base, method: 'DELETE', path: '/booking/v1/bookings/B1' })),
    ).toBe(true);
    expect(
      done(limiter.check({ ...base, method: 'DELETE', path: '/booking/v1/bookings/B1' })),
    ).toBe(false);
    const none = createLimiter({
      preset: livePreset({ resourceLimits: [], throttleExemptRoutes: [] }),
      clock,
    });
    for (let i = 0; i < 30; i++)
      expect(done(none.check(patch('/booking/v1/bookings/B9')))).toBe(true);
  });

  it.each<[string, LimitPreset, RegExp | string]>([
    [
      'an exemption of an unknown policy',
      {
        name: 'x',
        policies: [window(1, 1, { name: 'a' })],
        rules: exemptionRules(['GET /a'], ['nope']),
      },
      'preset x: rules[0].exempt[0] must be the name of a policy of the preset, one of "a", got "nope".',
    ],
    [
      'two rules with policies on one route',
      {
        name: 'x',
        policies: [window(1, 1, { name: 'a' })],
        rules: [
          { route: 'GET /a/{id}', policies: [window(1, 1, { name: 'b' })] },
          { route: 'get /A/{id}', policies: [window(1, 1, { name: 'c' })] },
        ],
      },
      'preset x: rules[1].route must be a route no earlier rule with policies counts (rules[0] counts GET /a/{id}: put all its policies in one rule), got "get /A/{id}".',
    ],
    [
      'a rule with nothing to do',
      { name: 'x', policies: [window(1, 1, { name: 'a' })], rules: [{ route: 'GET /a' }] },
      'preset x: rules[0] must be an object with a non-empty policies, a non-empty exempt or both, got one with neither.',
    ],
    [
      'a bad route pattern',
      {
        name: 'x',
        policies: [window(1, 1, { name: 'a' })],
        rules: [{ route: 'GET /a/b{id}', policies: [window(1, 1, { name: 'b' })] }],
      },
      'rules[0].route must be a route pattern, got one wrong at column 9: a parameter takes a whole segment, as in /bookings/{id}.\n  GET /a/b{id}\n          ^',
    ],
    [
      'rules that are not an array',
      { name: 'x', policies: [window(1, 1, { name: 'a' })], rules: 'GET /a' as never },
      /^preset x: rules must be an array, got "GET \/a"\.$/,
    ],
    [
      'one rule given where a list of rules belongs',
      {
        name: 'x',
        policies: [window(1, 1, { name: 'a' })],
        rules: { route: 'GET /a', policies: [window(1, 1, { name: 'b' })] } as never,
      },
      /^preset x: rules must be an array, got an object\.$/,
    ],
    [
      'rules that are null',
      { name: 'x', policies: [window(1, 1, { name: 'a' })], rules: null as never },
      /^preset x: rules must be an array, got null\.$/,
    ],
    [
      'a rule that is not an object',
      { name: 'x', policies: [window(1, 1, { name: 'a' })], rules: ['GET /a' as never] },
      /^preset x: rules\[0\] must be an object with a route, got "GET \/a"\.$/,
    ],
    [
      'an exemption that is not a list of names',
      {
        name: 'x',
        policies: [window(1, 1, { name: 'a' })],
        rules: [{ route: 'GET /a', exempt: 'a' as never }],
      },
      /^preset x: rules\[0\]\.exempt must be an array of policy names, got "a"\.$/,
    ],
    [
      'a rule whose policies getter throws',
      {
        name: 'x',
        policies: [window(1, 1, { name: 'a' })],
        rules: [
          {
            route: 'GET /a',
            get policies(): never {
              throw new Error('boom');
            },
          },
        ],
      },
      'preset x: rules[0] must be an object with a route, got an object that threw when read.',
    ],
    [
      'a rule whose policy has a field that cannot be read',
      {
        name: 'x',
        policies: [window(1, 1, { name: 'a' })],
        rules: [{ route: 'GET /a', policies: [revokedProxy() as never] }],
      },
      'preset x: rules[0].policies[0] must be a policy made with window(), rate() or concurrency(), got an object that threw when read.',
    ],
    [
      'a rule that can never match: longer than the longest path considered',
      {
        name: 'x',
        policies: [window(1, 1, { name: 'a' })],
        rules: [{ route: `GET /${'a'.repeat(5000)}`, policies: [window(1, 1, { name: 'b' })] }],
      },
      `rules[0].route must be a route that some path of at most maxPathLength (2048) characters matches once canonical (every path this one matches has at least 5001: shorten the route or raise maxPathLength), got "GET /${'a'.repeat(59)}…".`,
    ],
  ])('%s is a ConfigurationError at start-up', (_, preset, message) => {
    const caught = thrown(() => createLimiter({ preset }));
    expect(isConfigurationError(caught)).toBe(true);
    if (typeof message === 'string') expect((caught as Error).message).toBe(message);
    else expect((caught as Error).message).toMatch(message);
  });

  it('no rules, or an empty list of them, compile to no route table and no lookup', () => {
    for (const rules of [undefined, []]) {
      expect(compileLimitRules(rules, presets.live.policies, 'preset live')).toEqual({
        table: undefined,
        effectOf: undefined,
        ruleNames: [],
      });
    }
  });
});

describe('route rules: exemptions from counting policies', () => {
  it('an exemption from one window of a scope keeps every window exact, against the oracle', () => {
    const a = window(3, '1s', { name: 'a' });
    const b = window(5, '10s', { name: 'b' });
    const preset: LimitPreset = {
      name: 'x',
      policies: [a, b],
      rules: exemptionRules(['GET /free'], ['a']),
    };
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 1_500 })), { maxLength: 80 }),
        (steps) => {
          const clock = new FakeClock(0);
          const limiter = createLimiter({ preset, clock });
          const oracle = new ExactOracle();
          for (const [free, gap] of steps) {
            clock.advance(gap);
            const decision = limiter.check(get(free ? '/free' : '/paid'));
            const expected = oracle.decideEntries(
              clock.now(),
              free
                ? [{ id: 'b', policy: b }]
                : [
                    { id: 'a', policy: a },
                    { id: 'b', policy: b },
                  ],
            );
            expect(decision.allowed).toBe(expected.allowed);
            expect(decision.allowed ? undefined : decision.retryAfterSeconds).toBe(
              expected.retryAfterSeconds,
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('the remembered rule effects', () => {
  // The effect of the rules on a request, worked out afresh from the route table every time.
  const reference = (compiled: CompiledRules, method: string, path: string) => {
    let active = presets.live.policies.map((_, i) => i);
    const resources: Array<{ key: string; policies: readonly unknown[]; positions: number[] }> = [];
    for (const { rule, key, plain } of compiled.table!.match(method, path)) {
      // Only a plain match exempts (see RouteMatch.plain).
      if (plain) active = active.filter((i) => !rule.exemptPositions.includes(i));
      if (rule.ownPolicies.length > 0) {
        resources.push({ key, policies: rule.ownPolicies, positions: [...rule.allPositions] });
      }
    }
    return { active, resources };
  };
  // The preset's own routes, spelled in many ways, and paths near them that match nothing.
  const api = fc.constantFrom('booking', 'rateplan', 'Booking', 'other');
  const version = fc.constantFrom('v1', 'V0-nsfh', 'v2', 'x1');
  const id = fc.constantFrom('BK-1', 'bk-1', '%42K-1', 'RP-9', '');
  const rest = fc.constantFrom(
    'bookings/:id',
    'reservations/:id',
    'reservations/:id/offers',
    'reservations/:id/service-offers',
    'rate-plans/:id/rates',
    'rates',
    'offers',
    'rate-plan-offers',
    'service-offers',
    'bookings/:id/../:id',
    'bookings//:id/',
    'bookings/:id\\',
    'reservations/x\\..\\..\\offers',
  );
  const pathArb = fc
    .tuple(api, version, rest, id, fc.constantFrom('', '?a=1', '?a=2', '#f', '?q#f', '#f?q', '? #'))
    .map(([a, v, r, i, tail]) => `/${a}/${v}/${r.replaceAll(':id', i)}${tail}`);
  // Some paths too long to be remembered (an id of 600 characters), which must still match.
  const anyPath = fc.oneof(
    { arbitrary: pathArb, weight: 9 },
    { arbitrary: pathArb.map((p) => p.replace('BK-1', `BK-${'1'.repeat(600)}`)), weight: 1 },
  );
  const methodArb = fc.constantFrom('GET', 'PATCH', 'PUT', 'patch', 'DELETE', 'get');

  it('equal the rules worked out afresh, for any method and path, query and fragment included, also after the memory was emptied', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(methodArb, anyPath), { minLength: 1, maxLength: 60 }),
        fc.nat({ max: 2 * ROUTE_EFFECT_CACHE_SIZE }),
        (requests, filler) => {
          const compiled = compileLimitRules(presets.live.rules, presets.live.policies, 'live');
          // Paths seen once each, some of them enough to fill the memory and empty it.
          for (let i = 0; i < filler; i++) compiled.effectOf!('GET', `/filler/${i}`);
          // Each request twice: worked out, then remembered.
          for (const [method, path] of [...requests, ...requests]) {
            const effect = compiled.effectOf!(method, path);
            expect({ active: [...effect.active], resources: [...effect.resources] }).toEqual(
              reference(compiled, method, path),
            );
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('route rules: factories refuse what they cannot use', () => {
  it.each<[string, () => unknown, string, RegExp]>([
    [
      'rows that are null',
      () => resourceRules(null as never),
      'invalid_route_rule',
      /^resourceRules rows must be an array of \{ route, limit, periodMs \} rows, got null\.$/,
    ],
    [
      'a row that is null',
      () => resourceRules([null as never]),
      'invalid_route_rule',
      /^resourceRules rows\[0\] must be a \{ route, limit, periodMs \} row, got null\.$/,
    ],
    [
      'a period that is a BigInt',
      () => resourceRules([{ route: 'GET /a', limit: 1, periodMs: 1000n as never }]),
      'invalid_duration',
      /^resourceRules rows\[0\]\.periodMs must be a whole number of milliseconds/,
    ],
    [
      'a limit that is a symbol',
      () => resourceRules([{ route: 'GET /a', limit: Symbol('n') as never, periodMs: 1000 }]),
      'invalid_limit',
      /^resourceRules rows\[0\]\.limit must be a whole number from 1 to 9007199254740991 \(Number\.MAX_SAFE_INTEGER\), got a symbol\.$/,
    ],
    [
      'a route that is not a string',
      () => resourceRules([{ route: 5 as never, limit: 1, periodMs: 1000 }]),
      'invalid_route_rule',
      /^resourceRules rows\[0\]\.route must be a route pattern/,
    ],
    [
      'a row whose getter throws',
      () =>
        resourceRules([
          {
            route: 'GET /a',
            limit: 1,
            get periodMs(): number {
              throw new Error('boom');
            },
          },
        ]),
      'invalid_route_rule',
      /^resourceRules rows\[0\] must be a \{ route, limit, periodMs \} row, got an object that threw when read\.$/,
    ],
    [
      'rows that are a revoked proxy',
      () => resourceRules(revokedProxy() as never),
      'invalid_route_rule',
      /^resourceRules rows must be an array of \{ route, limit, periodMs \} rows, got an object\.$/,
    ],
    [
      'options that are null',
      () => resourceRules([], null as never),
      'invalid_option',
      /^resourceRules options must be an object/,
    ],
    [
      'a name prefix that is not a string',
      () => resourceRules([], { namePrefix: 5 as never }),
      'invalid_option',
      /^namePrefix must be a string, got 5\.$/,
    ],
    [
      'routes that are one string',
      () => exemptionRules('GET /a' as never, ['x']),
      'invalid_route_rule',
      /^exemptionRules routes must be an array of route patterns/,
    ],
    [
      'policy names that are a number',
      () => exemptionRules(['GET /a'], 5 as never),
      'invalid_route_rule',
      /^exemptionRules policyNames must be an array of policy names, got 5\.$/,
    ],
    [
      'a route that is not a string',
      () => exemptionRules([5 as never], ['x']),
      'invalid_route_rule',
      /^exemptionRules routes\[0\] must be a string/,
    ],
    [
      'policy names that are a revoked proxy',
      () => exemptionRules(['GET /a'], revokedProxy() as never),
      'invalid_route_rule',
      /^exemptionRules policyNames must be an array of policy names, got an object\.$/,
    ],
  ])('%s is a ConfigurationError that names it', (_, make, code, message) => {
    const caught = thrown(make);
    expect(isConfigurationError(caught) && caught.code).toBe(code);
    expect((caught as Error).message).toMatch(message);
  });

  it('rows are read once each: a row whose getters answer differently each time gives the first answers', () => {
    let reads = 0;
    const row = {
      get route(): string {
        reads++;
        return 'GET /a';
      },
      limit: 5,
      periodMs: 60_000,
    };
    const [rule] = resourceRules([row]);
    expect(reads).toBe(1);
    expect(rule?.policies?.[0]).toEqual(window(5, 60_000, { name: 'resource GET /a: 5 per 60 s' }));
  });
});
