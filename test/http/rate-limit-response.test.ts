/** The 429 builder, the RateLimit fields and the HTTP-date writer: properties for any decision, and the engine's own. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AdmittedDecision,
  admittedHeaders,
  concurrency,
  createLimiter,
  DEFAULT_TRACKING_ID_HEADER,
  FakeClock,
  formatHttpDate,
  isConfigurationError,
  type Policy,
  type PolicyStatus,
  parseHttpDate,
  type RefusedDecision,
  rate,
  rateLimitResponse,
  rateLimitResponseParts,
  window,
} from '../../src/index.js';
import { PROXY_TRAPS, revokedProxy, throwingGetters, throwingProxy } from '../support/hostile.js';
import { request } from '../support/limits.js';
import { thrown } from '../support/thrown.js';

const DELAY_SECONDS = /^[1-9][0-9]*$/;
const TRACKING_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const IMF_FIXDATE =
  /(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT/;
const SF_STRING = '"(?:[\\x20-\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\["\\\\])*"';
const POLICY_ITEM = new RegExp(
  `^${SF_STRING};q=[0-9]{1,15}(?:;w=[0-9]{1,15}|;qu="concurrent-requests")$`,
);
const STATE_ITEM = new RegExp(`^${SF_STRING};r=([0-9]{1,15});t=([0-9]{1,15})$`);

// Any number the engine or a broken caller could put in a decision.
const anyNumber = fc.oneof(
  fc.integer({ min: -10, max: 100_000 }),
  fc.double({ min: -1e6, max: 1e22 }),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, -0),
);

const policyName = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim().length > 0),
  fc.constantFrom('global: 3500 per 60 s', 'throttle: 20 concurrent', 'say "hi" \\ é'),
);

const anyPolicy: fc.Arbitrary<Policy> = fc.oneof(
  fc
    .tuple(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 7_200_000 }), policyName)
    .map(([limit, ms, name]) => window(limit, ms, { name })),
  fc
    .tuple(fc.double({ min: 0.01, max: 10_000, noNaN: true }), fc.integer({ min: 1, max: 500 }))
    .map(([perSecond, burst]) => rate(perSecond, burst)),
  fc.integer({ min: 1, max: 1_000 }).map((max) => concurrency(max, { name: `t${max}` })),
  // The extremes the factories accept: numbers past 15 digits, a rate that refills once in some
  // 270,000 years (an emission interval up to 8.64e15 ms, and a burst whose tolerance stays there).
  fc
    .tuple(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), policyName)
    .map(([limit, name]) => window(limit, Number.MAX_SAFE_INTEGER, { name })),
  fc
    .double({ min: 1.2e-13, max: 1e-3, noNaN: true })
    .chain((perSecond) =>
      fc
        .integer({ min: 1, max: 1 + Math.floor(8.64e12 * perSecond * (1 - 1e-9)) })
        .map((burst) => rate(perSecond, burst, { name: `r${perSecond} ${burst}` })),
    ),
  fc
    .integer({ min: 1, max: Number.MAX_SAFE_INTEGER })
    .map((max) => concurrency(max, { name: `c${max}` })),
);

const anyStatuses = fc
  .uniqueArray(anyPolicy, { maxLength: 5, selector: (p) => p.name })
  .chain((policies) =>
    fc.tuple(
      ...policies.map((policy) =>
        fc.record({ policy: fc.constant(policy), remaining: anyNumber, resetAfterMs: anyNumber }),
      ),
    ),
  );

const anyRefusal: fc.Arbitrary<RefusedDecision> = anyStatuses.chain((statuses: PolicyStatus[]) =>
  fc.record({
    allowed: fc.constant(false as const),
    retryAfterSeconds: anyNumber,
    retryAt: anyNumber,
    policy:
      statuses.length === 0
        ? fc.constant(undefined)
        : fc.constantFrom(undefined, ...statuses.map((s) => s.policy)),
    reason: fc.constantFrom(
      'limit' as const,
      'blocked' as const,
      'capacity' as const,
      'unavailable' as const,
    ),
    statuses: fc.constant(statuses),
    now: fc.oneof(fc.integer({ min: 0, max: 4_102_444_800_000 }), anyNumber),
  }),
);

/** The members of a Structured Field list, split at commas outside strings. */
function listItems(field: string): string[] {
  const items: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < field.length; i++) {
    const char = field[i] as string;
    if (quoted && char === '\\') {
      current += char + (field[++i] ?? '');
      continue;
    }
    if (char === '"') quoted = !quoted;
    if (!quoted && char === ',') {
      items.push(current.trim());
      current = '';
    } else current += char;
  }
  if (current.trim() !== '') items.push(current.trim());
  return items;
}

function refusedAt(clock: FakeClock, policies: readonly Policy[], times: number): RefusedDecision {
  const limiter = createLimiter({ policies, clock });
  for (let i = 0; i < times; i++) limiter.check(request);
  const decision = limiter.check(request);
  if (decision.allowed) throw new Error('expected a refusal');
  return decision;
}

describe('rate limit response (429)', () => {
  it('every header is present and well-formed for any refused decision; Retry-After is ^[1-9][0-9]*$', () => {
    fc.assert(
      fc.property(
        anyRefusal,
        fc.option(fc.string({ maxLength: 140 }), { nil: undefined }),
        fc.boolean(),
        (decision, incoming, fields) => {
          const parts = rateLimitResponseParts(decision, {
            trackingId: incoming,
            rateLimitHeaders: fields,
          });
          expect(parts.status).toBe(429);
          expect(parts.headers['content-type']).toBe('text/plain; charset=utf-8');
          expect(parts.headers['cache-control']).toBe('no-store');
          const retryAfter = parts.headers['retry-after'] as string;
          expect(retryAfter).toMatch(DELAY_SECONDS);
          const trackingId = parts.headers['service-tracking-id'] as string;
          expect(trackingId).toMatch(TRACKING_ID);
          if (incoming !== undefined && TRACKING_ID.test(incoming))
            expect(trackingId).toBe(incoming);
          // The body says when calls may resume, in seconds and as a date, and the tracking id.
          expect(parts.body).toContain(`Calls may resume in ${retryAfter} second`);
          expect(parts.body).toMatch(IMF_FIXDATE);
          expect(parts.body).toContain(`Tracking id: ${trackingId}`);
          const { policy } = decision;
          if (decision.reason === 'unavailable') {
            expect(parts.body).toContain('cannot check its limits right now');
          } else if (decision.reason !== 'capacity' && policy !== undefined) {
            expect(parts.body).toContain(`Limit hit: ${policy.name}.`);
          } else {
            expect(parts.body).toContain('tracking as many clients as it can');
          }
          // The RateLimit fields when asked for, each left out when it has no member (RFC 9651).
          const members = fields && decision.statuses.length > 0;
          expect(Object.keys(parts.headers).includes('ratelimit')).toBe(members);
          expect(Object.keys(parts.headers).includes('ratelimit-policy')).toBe(members);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('RateLimit fields name the refusing policy alone by default, with r=0 and t equal to Retry-After, or the nearest policy when the refusing one is not among the statuses', () => {
    fc.assert(
      fc.property(anyRefusal, (decision) => {
        const parts = rateLimitResponseParts(decision, { rateLimitHeaders: true });
        const retryAfter = Number(parts.headers['retry-after']);
        expect(parts.headers.ratelimit === undefined).toBe(decision.statuses.length === 0);
        if (decision.statuses.length === 0) return;
        const policies = listItems(parts.headers['ratelimit-policy'] ?? '');
        const states = listItems(parts.headers.ratelimit ?? '');
        expect(policies).toHaveLength(1);
        expect(states).toHaveLength(1);
        // The same policy in both fields.
        const nameOf = (item: string) => new RegExp(`^${SF_STRING}`).exec(item)?.[0];
        expect(nameOf(policies[0]!)).toBe(nameOf(states[0]!));
        const [, r, t] = STATE_ITEM.exec(states[0]!) ?? [];
        expect(Number(t)).toBeLessThanOrEqual(retryAfter);
        if (Number(r) === 0) expect(Number(t)).toBe(retryAfter);
        const refusing = decision.statuses.find((s) => s.policy === decision.policy);
        if (refusing !== undefined) {
          expect(r).toBe('0');
          const written = Array.from(refusing.policy.name, (c) => {
            if (c === '"' || c === '\\') return `\\${c}`;
            return /^[\x20-\x7e]$/.test(c) ? c : '?';
          }).join('');
          expect(nameOf(states[0]!)).toBe(`"${written}"`);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("RateLimit fields with 'all' are well-formed lists, one item per policy, and Retry-After is never earlier than any t", () => {
    fc.assert(
      fc.property(anyRefusal, (decision) => {
        const parts = rateLimitResponseParts(decision, { rateLimitHeaders: 'all' });
        const retryAfter = Number(parts.headers['retry-after']);
        // A list with no member is left out of the message, never sent empty (RFC 9651).
        expect(parts.headers.ratelimit === undefined).toBe(decision.statuses.length === 0);
        expect(parts.headers['ratelimit-policy'] === undefined).toBe(
          decision.statuses.length === 0,
        );
        const policies = listItems(parts.headers['ratelimit-policy'] ?? '');
        const states = listItems(parts.headers.ratelimit ?? '');
        expect(policies).toHaveLength(decision.statuses.length);
        expect(states).toHaveLength(decision.statuses.length);
        states.forEach((item, k) => {
          expect(policies[k]).toMatch(POLICY_ITEM);
          const [, r, t] = STATE_ITEM.exec(item) ?? [];
          expect(r).toBeDefined();
          expect(Number(t)).toBeLessThanOrEqual(retryAfter);
          // Nothing left: come back exactly when Retry-After says, as the refusing policy does.
          if (Number(r) === 0) expect(Number(t)).toBe(retryAfter);
          if (decision.statuses[k]?.policy === decision.policy) expect(r).toBe('0');
        });
      }),
      { numRuns: 500 },
    );
  });

  it('writes q and w as sf-integers of at most 15 digits for huge limits and tiny rates', () => {
    const decision = refusedAt(
      new FakeClock(0),
      [
        window(Number.MAX_SAFE_INTEGER, 1_000, { name: 'huge' }),
        rate(1.2e-13, 1, { name: 'slow' }),
      ],
      1,
    );
    const parts = rateLimitResponseParts(decision, { rateLimitHeaders: 'all' });
    expect(parts.headers['ratelimit-policy']).toBe(
      '"huge";q=999999999999999;w=1, "slow";q=1;w=8333333333334',
    );
  });

  it("answers the engine's decision truthfully: its Retry-After, its limit, the instant it announced", () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 21, 13, 0, 0, 250));
    const decision = refusedAt(clock, [window(3, '60s', { name: 'global: 3 per 60 s' })], 3);
    const parts = rateLimitResponseParts(decision, { trackingId: 'req-1' });
    expect(parts.headers['retry-after']).toBe('60');
    expect(parts.body).toBe(
      [
        'Too many requests.',
        'Limit hit: global: 3 per 60 s.',
        'Calls may resume in 60 seconds, at Sat, 21 Nov 2026 13:01:00 GMT (Retry-After: 60).',
        'A request sent before then is not processed and gets a new Retry-After.',
        'Tracking id: req-1',
        '',
      ].join('\n'),
    );
    expect(parseHttpDate('Sat, 21 Nov 2026 13:01:00 GMT')).toBe(
      Math.floor(decision.retryAt / 1000) * 1000,
    );
  });

  it('says so when the scope is blocked by an earlier refusal, when the store is full, and when a store that fails closed cannot decide', () => {
    const capacity: RefusedDecision = {
      allowed: false,
      retryAfterSeconds: 1,
      retryAt: 1000,
      policy: undefined,
      reason: 'capacity',
      statuses: [],
      now: 0,
    };
    expect(rateLimitResponseParts(capacity).body).toContain(
      'No limit of yours was reached: the service is tracking as many clients as it can',
    );
    const unavailable: RefusedDecision = { ...capacity, reason: 'unavailable' };
    expect(rateLimitResponseParts(unavailable).body).toContain(
      'No limit of yours was reached: the service cannot check its limits right now',
    );
    const earlier: RefusedDecision = {
      ...capacity,
      policy: window(1, '1s', { name: 'w' }),
      reason: 'blocked',
    };
    expect(rateLimitResponseParts(earlier).body).toContain(
      'Limit hit: w. An earlier request was refused under it',
    );
  });

  it('is the same response as a web Response', async () => {
    const decision = refusedAt(new FakeClock(0), [window(1, '1s', { name: 'w' })], 1);
    const options = { trackingId: 'abc', rateLimitHeaders: true };
    const parts = rateLimitResponseParts(decision, options);
    const response = rateLimitResponse(decision, options);
    expect(response.status).toBe(429);
    expect(Object.fromEntries(response.headers)).toEqual(parts.headers);
    expect(await response.text()).toBe(parts.body);
  });

  it('names the tracking id header as configured, and generates ids with the injected source', () => {
    const decision = refusedAt(new FakeClock(0), [window(1, '1s', { name: 'w' })], 1);
    const parts = rateLimitResponseParts(decision, {
      trackingIdHeader: 'X-Correlation-Id',
      trackingId: 'not ok!',
      trackingIds: () => 'made-1',
    });
    expect(parts.headers['x-correlation-id']).toBe('made-1');
    expect(parts.headers[DEFAULT_TRACKING_ID_HEADER.toLowerCase()]).toBeUndefined();
  });

  it('throws a ConfigurationError for a bad header name, one the 429 writes itself or that frames the message, or an id source that makes malformed ids', () => {
    const decision = refusedAt(new FakeClock(0), [window(1, '1s', { name: 'w' })], 1);
    const badHeader = thrown(() =>
      rateLimitResponseParts(decision, { trackingIdHeader: 'Bad Header' }),
    );
    expect(isConfigurationError(badHeader) && badHeader.code).toBe('invalid_header_name');
    for (const name of [
      'Retry-After',
      'content-type',
      'Content-Length',
      'RateLimit',
      'Set-Cookie',
    ]) {
      const reserved = thrown(() => rateLimitResponseParts(decision, { trackingIdHeader: name }));
      expect(isConfigurationError(reserved) && reserved.code, name).toBe('invalid_header_name');
      expect((reserved as Error).message).toBe(
        `trackingIdHeader must be a header name with no meaning of its own in HTTP, such as "X-Request-Id", got "${name}".`,
      );
    }
    expect(thrown(() => rateLimitResponseParts({ allowed: true } as never))).toMatchObject({
      code: 'invalid_option',
      message:
        'rateLimitResponseParts() decision must be a refused decision from the limiter (allowed: false), got an object.',
    });
    const badSource = thrown(() => rateLimitResponseParts(decision, { trackingIds: () => 'a b' }));
    expect(isConfigurationError(badSource) && badSource.code).toBe('invalid_tracking_id');
  });

  it('refuses, in any letter case, a tracking id header with a meaning of its own in HTTP, and accepts the usual request id names', () => {
    const decision = refusedAt(new FakeClock(0), [window(1, '1s', { name: 'w' })], 1);
    const meaningful = [
      // Written by node:http or read by caches: a tracking id there replaces or corrupts them.
      'Date',
      'Expires',
      'Last-Modified',
      'Age',
      'Content-Range',
      'Vary',
      'ETag',
      'Pragma',
      'Server',
      'Content-Location',
      'Content-Language',
      'Accept-Ranges',
      'Allow',
      'WWW-Authenticate',
      // Request fields: the request's value would be echoed back.
      'Host',
      'Authorization',
      'Cookie',
      'User-Agent',
      'Range',
      'If-None-Match',
      // Fields browsers act on, and whole families.
      'Strict-Transport-Security',
      'Content-Security-Policy',
      'Link',
      'Access-Control-Allow-Origin',
      'Proxy-Authorization',
      'Sec-Fetch-Site',
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...meaningful),
        fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
        (name, upper) => {
          const spelled = [...name]
            .map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase()))
            .join('');
          const refused = thrown(() =>
            rateLimitResponseParts(decision, { trackingIdHeader: spelled }),
          );
          expect(isConfigurationError(refused) && refused.code, spelled).toBe(
            'invalid_header_name',
          );
        },
      ),
    );
    for (const name of ['X-Request-Id', 'Request-Id', 'X-Correlation-Id', 'X-Trace-Id']) {
      const parts = rateLimitResponseParts(decision, { trackingIdHeader: name, trackingId: 'a1' });
      expect(parts.headers[name.toLowerCase()]).toBe('a1');
    }
  });

  it('throws a ConfigurationError, not a TypeError, for a decision or options of the wrong kind', () => {
    const decision = refusedAt(new FakeClock(0), [window(1, '1s', { name: 'w' })], 1);
    const admitted: AdmittedDecision = {
      allowed: true,
      statuses: [],
      now: 0,
      release: () => undefined,
    };
    const attempts: Array<() => unknown> = [
      () => rateLimitResponseParts(null as never),
      () => rateLimitResponseParts(undefined as never),
      () => rateLimitResponseParts(42 as never),
      () => rateLimitResponseParts(admitted as never),
      () => rateLimitResponseParts(decision, null as never),
      () => rateLimitResponseParts(decision, 'x' as never),
      () => rateLimitResponse(null as never),
      () => admittedHeaders(null as never),
      () => admittedHeaders(decision as never),
      () => admittedHeaders(admitted, null as never),
    ];
    for (const attempt of attempts) {
      const error = thrown(attempt);
      expect(isConfigurationError(error) && error.code, String(attempt)).toBe('invalid_option');
    }
  });

  it('answers its 429 with RateLimit fields for a decision whose statuses are missing, a Proxy or hold members that throw', () => {
    // Arrange: a refused decision as the limiter gives it, then made hostile one member at a time.
    const decision = refusedAt(new FakeClock(0), [window(1, '1s', { name: 'w' })], 1);
    const { statuses: _statuses, ...withoutStatuses } = decision;
    // Each with whether a status of it can still be read.
    const variants: Array<[unknown, boolean]> = [
      [withoutStatuses, false],
      [{ ...decision, statuses: throwingProxy([...PROXY_TRAPS], []) }, false],
      [{ ...decision, statuses: revokedProxy([]) }, false],
      [{ ...decision, statuses: [throwingGetters(['policy', 'remaining'])] }, false],
      // (The limiter's statuses are a getter of its decision's class: a spread copy names them.)
      [
        { ...decision, statuses: decision.statuses, policy: throwingGetters(['name', 'kind']) },
        true,
      ],
      [
        throwingGetters(['retryAfterSeconds', 'now', 'reason', 'then'], {
          ...decision,
          statuses: decision.statuses,
        }),
        true,
      ],
      // Sparse, of length 2^32 - 1: answered at once, from the statuses it holds.
      [
        { ...decision, statuses: Object.assign(new Array(2 ** 32 - 1), [decision.statuses[0]]) },
        true,
      ],
    ];
    for (const [variant, readable] of variants) {
      // Act
      const parts = rateLimitResponseParts(variant as RefusedDecision, { rateLimitHeaders: true });
      // Assert: the fields of the statuses it can read; a list with no member is left out
      // (RFC 9651), never sent empty.
      expect(parts.status).toBe(429);
      expect(parts.headers['retry-after']).toMatch(DELAY_SECONDS);
      if (readable) expect(String(parts.headers.ratelimit)).toMatch(/^"w";r=0;t=\d+$/);
      else {
        expect(parts.headers).not.toHaveProperty('ratelimit');
        expect(parts.headers).not.toHaveProperty('ratelimit-policy');
      }
    }
    // A decision whose `allowed` cannot be read is not a refusal: the documented typed error.
    const unreadable = thrown(() => rateLimitResponseParts(throwingProxy(['get'], {}) as never));
    expect(isConfigurationError(unreadable) && unreadable.code).toBe('invalid_option');
  });
});

describe('admitted headers', () => {
  it("report with 'all', for any statuses, each policy with what remains (r) and the seconds to a full reset (t)", () => {
    fc.assert(
      fc.property(anyStatuses, (statuses) => {
        const decision: AdmittedDecision = {
          allowed: true,
          statuses,
          now: 0,
          release: () => undefined,
        };
        const headers = admittedHeaders(decision, { rateLimitHeaders: 'all', trackingId: 'abc' });
        // A list with no member is left out of the message, never sent empty (RFC 9651).
        expect(headers.ratelimit === undefined).toBe(statuses.length === 0);
        expect(headers['ratelimit-policy'] === undefined).toBe(statuses.length === 0);
        const states = listItems(headers.ratelimit ?? '');
        expect(listItems(headers['ratelimit-policy'] ?? '')).toHaveLength(statuses.length);
        expect(states).toHaveLength(statuses.length);
        states.forEach((item, k) => {
          const { remaining, resetAfterMs } = statuses[k] as PolicyStatus;
          const [, r, t] = STATE_ITEM.exec(item) ?? [];
          const finite = (v: number) => (Number.isFinite(v) ? v : 0);
          expect(Number(r)).toBe(
            Math.min(Math.max(Math.floor(finite(remaining)), 0), 999_999_999_999_999),
          );
          expect(Number(t)).toBe(
            Math.min(Math.max(Math.ceil(finite(resetAfterMs) / 1000), 0), 999_999_999_999_999),
          );
        });
      }),
    );
  });

  it('carry the tracking id, and the RateLimit fields when enabled, with t the seconds to a full reset', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [window(10, '60s', { name: 'minute' }), concurrency(4, { name: 'throttle' })],
      clock,
    });
    const decision = limiter.check(request);
    if (!decision.allowed) throw new Error('expected admission');
    expect(admittedHeaders(decision, { trackingId: 'abc' })).toEqual({
      'service-tracking-id': 'abc',
    });
    // By default the policy nearest its limit: the throttle has slots left.
    expect(admittedHeaders(decision, { trackingId: 'abc', rateLimitHeaders: true })).toEqual({
      'service-tracking-id': 'abc',
      'ratelimit-policy': '"minute";q=10;w=60',
      ratelimit: '"minute";r=9;t=60',
    });
    expect(admittedHeaders(decision, { trackingId: 'abc', rateLimitHeaders: 'all' })).toEqual({
      'service-tracking-id': 'abc',
      'ratelimit-policy': '"minute";q=10;w=60, "throttle";q=4;qu="concurrent-requests"',
      ratelimit: `"minute";r=9;t=60, "throttle";r=3;t=${decision.statuses[1]!.resetAfterMs / 1000}`,
    });
    decision.release();
  });
});

describe('formatHttpDate', () => {
  it('writes an IMF-fixdate that parseHttpDate reads back to the same whole second', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 253_402_300_799_000 }), (ms) => {
        const text = formatHttpDate(ms);
        expect(text).toMatch(new RegExp(`^${IMF_FIXDATE.source}$`));
        expect(parseHttpDate(text)).toBe(Math.floor(ms / 1000) * 1000);
      }),
    );
  });

  it('clamps instants outside the four-digit years and non-numbers', () => {
    expect(formatHttpDate(-1)).toBe('Thu, 01 Jan 1970 00:00:00 GMT');
    expect(formatHttpDate(Number.NaN)).toBe('Thu, 01 Jan 1970 00:00:00 GMT');
    expect(formatHttpDate(1e20)).toBe('Fri, 31 Dec 9999 23:59:59 GMT');
  });
});
