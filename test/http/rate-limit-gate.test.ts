/** The gate behind every adapter: sync and async paths, failing open or closed, bad options. */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  type AsyncLimitStore,
  type CheckingLimiter,
  concurrency,
  createLimiter,
  createRateLimitGate,
  FakeClock,
  type GateVerdict,
  isConfigurationError,
  isInvalidRequestError,
  type LimitStore,
  type RateLimitErrorEvent,
  window,
} from '../../src/index.js';
import {
  AsyncMemoryStore,
  storeWhoseReleaseThrows,
  UnreachableStore,
} from '../support/async-store.js';
import { request } from '../support/limits.js';
import { hostilePromise, thrown } from '../support/thrown.js';

interface Req {
  client: unknown;
  /** The tracking id header, for the reader tests. */
  id?: string;
}

const limiterOf = (limit = 1) =>
  createLimiter({ policies: [window(limit, '1s', { name: 'w' })], clock: new FakeClock(0) });
const identify = (req: Req) => ({ clientId: req.client as string, accountCode: 'ACME' });

describe('rate limit gate', () => {
  it('decides synchronously with the memory store: admitted with a lease, then the 429', () => {
    const gate = createRateLimitGate({
      limiter: limiterOf(1),
      identify,
      trackingIdOnAdmitted: true,
    });
    const first = gate.check({ client: 'c1' }, 'GET', '/x', 'req-1') as GateVerdict;
    expect(first).not.toBeInstanceOf(Promise);
    expect(first).toMatchObject({
      response: undefined,
      holdsLease: true,
      trackingId: 'req-1',
      headers: { 'service-tracking-id': 'req-1' },
    });
    const second = gate.check({ client: 'c1' }, 'GET', '/x', undefined) as GateVerdict;
    expect(second.response?.status).toBe(429);
    expect(second.holdsLease).toBe(false);
    first.release();
    first.release();
  });

  it('by default lets requests through without the tracking id, and sends it on 429 and 503', async () => {
    const events: string[] = [];
    const gate = createRateLimitGate({
      limiter: limiterOf(1),
      identify,
      skip: (req: Req) => req.client === 'health',
    });
    const admitted = gate.check({ client: 'c1' }, 'GET', '/x', 'req-1') as GateVerdict;
    expect(admitted).toMatchObject({ response: undefined, holdsLease: true, trackingId: 'req-1' });
    expect(admitted.headers).toEqual({});
    const skipped = gate.check({ client: 'health' }, 'GET', '/x', 'req-2') as GateVerdict;
    expect(skipped.headers).toEqual({});
    const refused = gate.check({ client: 'c1' }, 'GET', '/x', 'req-3') as GateVerdict;
    expect(refused.response?.status).toBe(429);
    expect(refused.response?.headers['service-tracking-id']).toBe('req-3');
    // The RateLimit fields are not the tracking id: they stay when asked for.
    const withFields = createRateLimitGate({
      limiter: limiterOf(1),
      identify,
      rateLimitHeaders: true,
    });
    const fields = (withFields.check({ client: 'c1' }, 'GET', '/x', 'req-4') as GateVerdict)
      .headers;
    expect(Object.keys(fields).sort()).toEqual(['ratelimit', 'ratelimit-policy']);
    // Failing open lets the request through without the header; failing closed answers with it.
    const unreachable = createLimiter({
      policies: [window(1, '1s')],
      store: new UnreachableStore(),
    });
    const open = createRateLimitGate<Req>({
      limiter: unreachable,
      identify,
      onError: (event) => void events.push(event.trackingId),
    });
    const passed = await open.check({ client: 'c' }, 'GET', '/', 'req-5');
    expect(passed).toMatchObject({ response: undefined, headers: {} });
    const closed = createRateLimitGate<Req>({
      limiter: unreachable,
      identify,
      failure: 'closed',
      onError: (event) => void events.push(event.trackingId),
    });
    const unavailable = await closed.check({ client: 'c' }, 'GET', '/', 'req-6');
    expect(unavailable.response?.status).toBe(503);
    expect(unavailable.response?.headers['service-tracking-id']).toBe('req-6');
    expect(events).toEqual(['req-5', 'req-6']);
    // Asked for, the tracking id goes on admitted, skipped and failed-open verdicts too.
    const stamping = createRateLimitGate<Req>({
      limiter: limiterOf(1),
      identify,
      skip: (req) => req.client === 'health',
      trackingIdOnAdmitted: true,
    });
    for (const client of ['c1', 'health']) {
      const verdict = stamping.check({ client }, 'GET', '/x', 'req-7') as GateVerdict;
      expect(verdict.headers).toEqual({ 'service-tracking-id': 'req-7' });
    }
    const openStamping = createRateLimitGate<Req>({
      limiter: unreachable,
      identify,
      trackingIdOnAdmitted: true,
      onError: () => undefined,
    });
    const stamped = await openStamping.check({ client: 'c' }, 'GET', '/', 'req-8');
    expect(stamped).toMatchObject({
      response: undefined,
      headers: { 'service-tracking-id': 'req-8' },
    });
  });

  it('makes a tracking id only when something needs it: a 429, a report, a read, or trackingIdOnAdmitted', () => {
    let made = 0;
    const trackingIds = () => `made-${++made}`;
    const gate = createRateLimitGate({ limiter: limiterOf(1), identify, trackingIds });
    const admitted = gate.check({ client: 'c1' }, 'GET', '/x', undefined) as GateVerdict;
    expect(admitted.response).toBeUndefined();
    expect(made).toBe(0);
    const refused = gate.check({ client: 'c1' }, 'GET', '/x', undefined) as GateVerdict;
    expect(refused.response?.headers['service-tracking-id']).toBe('made-1');
    expect(refused.trackingId).toBe('made-1');
    expect(admitted.trackingId).toBe('made-2');
    expect(admitted.trackingId).toBe('made-2');
    expect(made).toBe(2);
    const stamping = createRateLimitGate({
      limiter: limiterOf(1),
      identify,
      trackingIds,
      trackingIdOnAdmitted: true,
    });
    const stamped = stamping.check({ client: 'c1' }, 'GET', '/x', undefined) as GateVerdict;
    expect(stamped.headers).toEqual({ 'service-tracking-id': 'made-3' });
    expect(stamped.trackingId).toBe('made-3');
  });

  it('reads the incoming tracking id through a reader only when it needs the id, at most once per request', () => {
    const reads: string[] = [];
    const header = (req: Req) => {
      reads.push(req.client as string);
      return req.id;
    };
    let made = 0;
    const trackingIds = () => `made-${++made}`;
    const gate = createRateLimitGate({ limiter: limiterOf(1), identify, trackingIds });
    const admitted = gate.check({ client: 'c1', id: 'req-1' }, 'GET', '/x', header);
    expect((admitted as GateVerdict).response).toBeUndefined();
    expect(reads).toEqual([]);
    // A 429 quotes the request's own id, read once.
    const refused = gate.check({ client: 'c1', id: 'req-2' }, 'GET', '/x', header) as GateVerdict;
    expect(refused.response?.headers['service-tracking-id']).toBe('req-2');
    expect(refused.trackingId).toBe('req-2');
    expect(reads).toEqual(['c1']);
    // Read on the admitted verdict's first read, once; a malformed id is replaced by a made one.
    expect((admitted as GateVerdict).trackingId).toBe('req-1');
    expect((admitted as GateVerdict).trackingId).toBe('req-1');
    const malformed = gate.check({ client: 'c1', id: 'bad id' }, 'GET', '/x', header);
    expect((malformed as GateVerdict).trackingId).toBe('made-1');
    expect(reads).toEqual(['c1', 'c1', 'c1']);
    // With the id on every admitted response, it is read at once.
    const stamping = createRateLimitGate({
      limiter: limiterOf(1),
      identify,
      trackingIds,
      trackingIdOnAdmitted: true,
    });
    const stamped = stamping.check({ client: 'c2', id: 'req-3' }, 'GET', '/x', header);
    expect((stamped as GateVerdict).headers).toEqual({ 'service-tracking-id': 'req-3' });
    expect(reads).toEqual(['c1', 'c1', 'c1', 'c2']);
  });

  it('a reader that throws is reported in the tracking-id phase and replaced by a made id', () => {
    const events: RateLimitErrorEvent<Req>[] = [];
    const gate = createRateLimitGate<Req>({
      limiter: limiterOf(1),
      identify,
      trackingIds: () => 'made-1',
      onError: (e) => events.push(e),
    });
    const broken = () => {
      throw new Error('no headers');
    };
    expect(
      (gate.check({ client: 'c' }, 'GET', '/', broken) as GateVerdict).response,
    ).toBeUndefined();
    const refused = gate.check({ client: 'c' }, 'GET', '/', broken) as GateVerdict;
    expect(refused.response?.status).toBe(429);
    expect(refused.response?.headers['service-tracking-id']).toBe('made-1');
    expect(events.map((e) => [e.phase, e.trackingId, (e.error as Error).message])).toEqual([
      ['tracking-id', 'made-1', 'no headers'],
    ]);
  });

  it('asks the limiter for statuses only when it sends the RateLimit fields, which then count them', () => {
    for (const rateLimitHeaders of [false, true]) {
      const limiter = limiterOf(2);
      const asked: Array<boolean | undefined> = [];
      const gate = createRateLimitGate({
        limiter: {
          check: (request, options) => {
            asked.push(options?.statuses);
            return limiter.check(request, options);
          },
        },
        identify,
        rateLimitHeaders,
      });
      const verdict = gate.check({ client: 'c1' }, 'GET', '/x', undefined) as GateVerdict;
      expect(asked).toEqual([rateLimitHeaders ? undefined : false]);
      if (rateLimitHeaders) expect(verdict.headers.ratelimit).toBe('"w";r=1;t=1');
      else expect(verdict.headers).toEqual({});
    }
  });

  it('answers with a promise when identify, skip or the store is asynchronous, with the same verdicts', async () => {
    const asyncStore = createLimiter({
      policies: [window(1, '1s', { name: 'w' })],
      store: new AsyncMemoryStore(),
      clock: new FakeClock(0),
    });
    const gate = createRateLimitGate({
      limiter: asyncStore,
      identify: async (req: Req) => identify(req),
      skip: async (req) => req.client === 'health',
    });
    const pending = gate.check({ client: 'c1' }, 'GET', '/x', undefined);
    expect(pending).toBeInstanceOf(Promise);
    expect((await pending).response).toBeUndefined();
    expect((await gate.check({ client: 'c1' }, 'GET', '/x', undefined)).response?.status).toBe(429);
    const skipped = await gate.check({ client: 'health' }, 'GET', '/x', undefined);
    expect(skipped).toMatchObject({ response: undefined, holdsLease: false });
  });

  it('never throws and never rejects, whatever identify returns or throws; never lets a request through uncounted', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.anything(),
        fc.constantFrom('open' as const, 'closed' as const),
        fc.constantFrom('return', 'throw', 'resolve', 'reject'),
        async (value, failure, how) => {
          const events: RateLimitErrorEvent<Req>[] = [];
          const gate = createRateLimitGate<Req>({
            // A throttle: every request counted holds a lease.
            limiter: createLimiter({ policies: [concurrency(100)], clock: new FakeClock(0) }),
            failure,
            onError: (event) => events.push(event),
            identify: (() => {
              if (how === 'throw') throw value;
              if (how === 'resolve') return Promise.resolve(value);
              if (how === 'reject') return Promise.reject(value);
              return value;
            }) as never,
          });
          const verdict = await gate.check({ client: 'c1' }, 'GET', '/x', undefined);
          const status = verdict.response?.status;
          if (how === 'throw' || how === 'reject') {
            // A failing identify is answered 500 whatever the failure mode, and reported.
            expect(status).toBe(500);
            expect(verdict.holdsLease).toBe(false);
            expect(events.map((e) => [e.phase, e.failure])).toEqual([['identify', 'closed']]);
          } else {
            // Whatever it returned, the request is counted: as the identity, or as anonymous.
            expect(status).toBeUndefined();
            expect(verdict.holdsLease).toBe(true);
            expect(events.every((e) => e.phase === 'identify' && e.failure === 'anonymous')).toBe(
              true,
            );
            expect(events.length).toBeLessThanOrEqual(1);
            verdict.release();
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('fails, never throws, when identify, skip or the limiter returns an object whose then throws', () => {
    // A strict Proxy (an ORM or config object) that throws on a key it does not know.
    const strict = (known: Record<string, unknown>) =>
      new Proxy(known, {
        get(target, key) {
          if (typeof key === 'string' && key in target) return target[key];
          throw new Error(`no property ${String(key)}`);
        },
      });
    for (const failure of ['open', 'closed'] as const) {
      const phases: string[] = [];
      const onError = (e: RateLimitErrorEvent<Req>) => phases.push(e.phase);
      const identified = createRateLimitGate<Req>({
        limiter: limiterOf(),
        identify: () => strict({ clientId: 'c', accountCode: 'ACME' }) as never,
        onError,
        failure,
      });
      const skipping = createRateLimitGate<Req>({
        limiter: limiterOf(),
        identify,
        skip: () => strict({}) as never,
        onError,
        failure,
      });
      const limited = createRateLimitGate<Req>({
        limiter: { check: () => strict({ allowed: true }) as never },
        identify,
        onError,
        failure,
      });
      const statuses = [identified, skipping, limited].map((gate) => {
        const verdict = gate.check({ client: 'c' }, 'GET', '/', undefined) as GateVerdict;
        expect(verdict.holdsLease).toBe(false);
        return verdict.response?.status;
      });
      // identify failing is answered 500 whatever the failure mode.
      const failed = failure === 'open' ? undefined : 503;
      expect(statuses).toEqual([500, failed, failed]);
      expect(phases).toEqual(['identify', 'skip', 'limiter']);
    }
  });

  it('limits an identity the limiter cannot attribute as anonymous, and reports it as an InvalidRequestError in the identify phase', () => {
    const events: RateLimitErrorEvent<Req>[] = [];
    const gate = createRateLimitGate({
      limiter: limiterOf(1),
      identify,
      onError: (e) => events.push(e),
    });
    // A client id that is not a string: counted as anonymous (one key, no remote address here).
    const first = gate.check({ client: 42 }, 'GET', '/x', undefined) as GateVerdict;
    expect(first.response).toBeUndefined();
    expect(events.map((e) => [e.phase, e.failure])).toEqual([['identify', 'anonymous']]);
    expect(isInvalidRequestError(events[0]?.error)).toBe(true);
    // An empty client id is no identity at all: anonymous too, the same key, not reported.
    const second = gate.check({ client: '' }, 'GET', '/x', undefined) as GateVerdict;
    expect(second.response?.status).toBe(429);
    expect(events).toHaveLength(1);
  });

  it('fails on a throwing skip and a rejecting store like on a throwing identify', async () => {
    const events: string[] = [];
    const onError = (e: RateLimitErrorEvent<Req>) => events.push(e.phase);
    const skipping = createRateLimitGate<Req>({
      limiter: limiterOf(),
      identify,
      onError,
      skip: () => {
        throw new Error('skip failed');
      },
    });
    expect((skipping.check({ client: 'c' }, 'GET', '/', undefined) as GateVerdict).response).toBe(
      undefined,
    );
    const down = createRateLimitGate<Req>({
      limiter: createLimiter({ policies: [window(1, '1s')], store: new UnreachableStore() }),
      identify,
      onError,
      failure: 'closed',
    });
    expect((await down.check({ client: 'c' }, 'GET', '/', undefined)).response?.status).toBe(503);
    expect(events).toEqual(['skip', 'limiter']);
  });

  it('fails open or closed on an asynchronous skip that rejects, reported in the skip phase', async () => {
    for (const failure of ['open', 'closed'] as const) {
      const events: RateLimitErrorEvent<Req>[] = [];
      const gate = createRateLimitGate<Req>({
        limiter: limiterOf(),
        identify,
        failure,
        onError: (e) => events.push(e),
        skip: () => Promise.reject(new Error('feature flags unreachable')),
      });
      const pending = gate.check({ client: 'c' }, 'GET', '/', 'req-1');
      expect(pending).toBeInstanceOf(Promise);
      const verdict = await pending;
      expect(verdict.response?.status).toBe(failure === 'open' ? undefined : 503);
      expect(verdict.holdsLease).toBe(false);
      expect(events.map((e) => [e.phase, e.failure, e.trackingId])).toEqual([
        ['skip', failure, 'req-1'],
      ]);
      expect(events[0]?.error).toMatchObject({ message: 'feature flags unreachable' });
    }
  });

  it('releasing a verdict that holds no lease (refused, skipped or failed open) gives nothing back', () => {
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 't' })],
      clock: new FakeClock(0),
    });
    const gate = createRateLimitGate<Req>({
      limiter,
      identify: (req) => {
        if (req.client === 'nobody') throw new Error('no identity');
        return identify(req);
      },
      skip: (req) => req.client === 'health',
      onError: () => undefined,
    });
    const held = gate.check({ client: 'c' }, 'GET', '/', undefined) as GateVerdict;
    expect(held.holdsLease).toBe(true);
    for (const client of ['c', 'health', 'nobody']) {
      const verdict = gate.check({ client }, 'GET', '/', undefined) as GateVerdict;
      expect(verdict.holdsLease).toBe(false);
      verdict.release();
    }
    // The one lease is still held: the next request of the client is refused.
    expect(
      (gate.check({ client: 'c' }, 'GET', '/', undefined) as GateVerdict).response?.status,
    ).toBe(429);
  });

  it('survives an error callback that throws, and logs one line by default', () => {
    const throwing = createRateLimitGate<Req>({
      limiter: limiterOf(),
      identify: () => {
        throw new Error('no identity');
      },
      onError: () => {
        throw new Error('logger down');
      },
    });
    expect(
      (throwing.check({ client: 'c' }, 'GET', '/', 'r1') as GateVerdict).response?.status,
    ).toBe(500);
    const lines: unknown[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line) => void lines.push(line));
    try {
      const silent = createRateLimitGate<Req>({
        limiter: limiterOf(),
        identify: () => {
          throw new Error('no identity');
        },
      });
      silent.check({ client: 'c' }, 'GET', '/', 'r2');
    } finally {
      spy.mockRestore();
    }
    expect(lines).toEqual([
      'api-conventions: rate limit identify failed, request r2 answered 500 (not attributed): no identity',
    ]);
  });

  it('logs a thrown value that is not an Error as text, and says when the request was refused', () => {
    const lines: unknown[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line) => void lines.push(line));
    try {
      const closed = createRateLimitGate<Req>({
        limiter: limiterOf(),
        failure: 'closed',
        identify,
        skip: () => {
          throw 'flags down';
        },
      });
      const verdict = closed.check({ client: 'c' }, 'GET', '/', 'r3') as GateVerdict;
      expect(verdict.response?.status).toBe(503);
    } finally {
      spy.mockRestore();
    }
    expect(lines).toEqual([
      'api-conventions: rate limit skip failed, request r3 refused with 503 (fail closed): flags down',
    ]);
  });

  it('a tracking id source that makes malformed ids is reported and replaced, not a crash', () => {
    const events: RateLimitErrorEvent<Req>[] = [];
    const gate = createRateLimitGate<Req>({
      limiter: limiterOf(),
      identify,
      trackingIds: () => 'bad id',
      onError: (e) => events.push(e),
    });
    const verdict = gate.check({ client: 'c' }, 'GET', '/', undefined) as GateVerdict;
    expect(verdict.trackingId).toMatch(/^[0-9a-f-]{36}$/);
    expect(events[0]?.phase).toBe('tracking-id');
    expect(isConfigurationError(events[0]?.error)).toBe(true);
  });

  it('throws a ConfigurationError for options it cannot work with', () => {
    const cases: unknown[] = [
      undefined,
      { identify },
      { limiter: limiterOf() },
      { limiter: limiterOf(), identify, skip: 'no' },
      { limiter: limiterOf(), identify, failure: 'sometimes' },
      { limiter: limiterOf(), identify, trackingIdHeader: 'two words' },
      // A field the 429 writes itself: Retry-After would carry the tracking id.
      { limiter: limiterOf(), identify, trackingIdHeader: 'Retry-After' },
      // A client's Content-Length would be echoed as the response's.
      { limiter: limiterOf(), identify, trackingIdHeader: 'content-length' },
      // node:http would drop its own Date for the tracking id; caches read Expires and Vary.
      { limiter: limiterOf(), identify, trackingIdHeader: 'Date' },
      { limiter: limiterOf(), identify, trackingIdHeader: 'Expires' },
      { limiter: limiterOf(), identify, trackingIdHeader: 'Last-Modified' },
      { limiter: limiterOf(), identify, trackingIdHeader: 'Age' },
      { limiter: limiterOf(), identify, trackingIdHeader: 'Content-Range' },
      { limiter: limiterOf(), identify, trackingIdHeader: 'Vary' },
      { limiter: limiterOf(), identify, trackingIdOnAdmitted: 'no' },
      { limiter: limiterOf(), identify, rateLimitHeaders: 'nearest' },
      { limiter: limiterOf(), identify, rateLimitHeaders: 1 },
    ];
    for (const options of cases) {
      expect(isConfigurationError(thrown(() => createRateLimitGate(options as never)))).toBe(true);
    }
    // What to change, said in the message.
    expect(
      thrown(() =>
        createRateLimitGate({ limiter: limiterOf(), identify, rateLimitHeaders: 'every' } as never),
      ),
    ).toMatchObject({
      code: 'invalid_option',
      message: expect.stringContaining('one of false, true, "all"'),
    });
  });
});

/** What a well-formed decision has, as the gate reads it (the oracle of the property below). */
function wellFormed(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const d = value as Record<string, unknown>;
  if (d.allowed === true) return typeof d.release === 'function';
  return (
    d.allowed === false &&
    typeof d.retryAfterSeconds === 'number' &&
    d.retryAfterSeconds >= 1 &&
    typeof d.reason === 'string' &&
    Number.isFinite(d.now) &&
    Array.isArray(d.statuses)
  );
}

describe('rate limit gate: limiters and stores that misbehave', () => {
  const admitting = (release: () => unknown): CheckingLimiter => ({
    check: () => ({ allowed: true, statuses: [], now: 0, release }) as never,
  });

  it("a verdict's release never throws, gives back once, and reports a limiter's release that throws or rejects in the release phase", async () => {
    for (const failure of ['open', 'closed'] as const) {
      const events: RateLimitErrorEvent<Req>[] = [];
      let calls = 0;
      const throwing = createRateLimitGate<Req>({
        limiter: admitting(() => {
          calls++;
          throw new Error('store unreachable');
        }),
        identify,
        failure,
        onError: (e) => events.push(e),
      });
      const verdict = throwing.check({ client: 'c' }, 'GET', '/', 'req-1') as GateVerdict;
      expect(verdict.holdsLease).toBe(true);
      // Unbound, as the adapters call it from an event listener.
      const { release } = verdict;
      expect(() => release()).not.toThrow();
      expect(() => release()).not.toThrow();
      expect(calls).toBe(1);
      const rejecting = createRateLimitGate<Req>({
        limiter: admitting(() => Promise.reject(new Error('release rejected'))),
        identify,
        failure,
        onError: (e) => events.push(e),
      });
      (rejecting.check({ client: 'c' }, 'GET', '/', 'req-2') as GateVerdict).release();
      await vi.waitFor(() => expect(events).toHaveLength(2));
      expect(
        events.map((e) => [e.phase, e.failure, e.trackingId, (e.error as Error).message]),
      ).toEqual([
        ['release', 'open', 'req-1', 'store unreachable'],
        ['release', 'open', 'req-2', 'release rejected'],
      ]);
    }
  });

  it("a store whose release throws: the limiter's lease is given back through the gate without a throw, and reported", () => {
    const store = storeWhoseReleaseThrows('release failed');
    const phases: string[] = [];
    const gate = createRateLimitGate<Req>({
      limiter: createLimiter({ policies: [concurrency(2)], store, clock: new FakeClock(0) }),
      identify,
      onError: (e) => phases.push(e.phase),
    });
    const verdict = gate.check({ client: 'c' }, 'GET', '/', undefined) as GateVerdict;
    expect(verdict.holdsLease).toBe(true);
    expect(() => verdict.release()).not.toThrow();
    verdict.release();
    expect(phases).toEqual(['release']);
  });

  it("a store whose asynchronous release rejects: the limiter's release hands the promise on, and the gate reports it", async () => {
    const memory = new AsyncMemoryStore();
    const store: AsyncLimitStore = {
      synchronous: false,
      apply: (plan, now) => memory.apply(plan, now),
      release: () => Promise.reject(new Error('connection lost')),
    };
    const events: RateLimitErrorEvent<Req>[] = [];
    const gate = createRateLimitGate<Req>({
      limiter: createLimiter({ policies: [concurrency(2)], store, clock: new FakeClock(0) }),
      identify,
      onError: (e) => events.push(e),
    });
    const verdict = await gate.check({ client: 'c' }, 'GET', '/', 'req-9');
    expect(verdict.holdsLease).toBe(true);
    verdict.release();
    verdict.release();
    await vi.waitFor(() => expect(events).toHaveLength(1));
    expect(
      events.map((e) => [e.phase, e.failure, e.trackingId, (e.error as Error).message]),
    ).toEqual([['release', 'open', 'req-9', 'connection lost']]);
  });

  it('an admitted decision without release is the limiter failing: the failure mode, reported, no lease', () => {
    for (const failure of ['open', 'closed'] as const) {
      const events: RateLimitErrorEvent<Req>[] = [];
      const gate = createRateLimitGate<Req>({
        limiter: { check: () => ({ allowed: true, statuses: [], now: 0 }) as never },
        identify,
        failure,
        onError: (e) => events.push(e),
      });
      const verdict = gate.check({ client: 'c' }, 'GET', '/', undefined) as GateVerdict;
      expect(verdict.response?.status).toBe(failure === 'open' ? undefined : 503);
      expect(verdict.holdsLease).toBe(false);
      expect(events.map((e) => [e.phase, e.failure])).toEqual([['limiter', failure]]);
      expect(events[0]?.error).toMatchObject({
        name: 'ConfigurationError',
        code: 'invalid_option',
      });
    }
  });

  it('fails, never throws, when identify, skip or the limiter returns a native promise whose constructor getter throws', async () => {
    for (const failure of ['open', 'closed'] as const) {
      const phases: string[] = [];
      const onError = (e: RateLimitErrorEvent<Req>) => phases.push(`${e.phase}:${e.failure}`);
      const gates = [
        createRateLimitGate<Req>({
          limiter: limiterOf(),
          identify: (req) => hostilePromise(identify(req)),
          onError,
          failure,
        }),
        createRateLimitGate<Req>({
          limiter: limiterOf(),
          identify,
          skip: () => hostilePromise(false),
          onError,
          failure,
        }),
        createRateLimitGate<Req>({
          limiter: { check: () => hostilePromise(limiterOf().check(request)) },
          identify,
          onError,
          failure,
        }),
      ];
      const statuses: Array<number | undefined> = [];
      for (const gate of gates) {
        let pending: GateVerdict | Promise<GateVerdict> | undefined;
        expect(() => {
          pending = gate.check({ client: 'c' }, 'GET', '/', undefined);
        }).not.toThrow();
        const verdict = await pending;
        statuses.push(verdict?.response?.status);
        expect(verdict?.holdsLease).toBe(false);
      }
      // identify failing is answered 500 whatever the failure mode.
      const failed = failure === 'open' ? undefined : 503;
      expect(statuses).toEqual([500, failed, failed]);
      expect(phases).toEqual(['identify:closed', `skip:${failure}`, `limiter:${failure}`]);
    }
  });

  it('a decision that is neither a well-formed admission nor a well-formed refusal is the limiter failing, in every configuration: never a 429, reported once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.anything(),
          fc.record(
            {
              allowed: fc.constantFrom(true, false, 1, 0, 'false', undefined),
              retryAfterSeconds: fc.oneof(fc.double(), fc.string(), fc.constant(undefined)),
              reason: fc.constantFrom('limit', 'capacity', undefined, 7),
              now: fc.oneof(fc.double(), fc.constant(undefined)),
              statuses: fc.constantFrom([], null, 'zz', undefined),
              release: fc.constantFrom(undefined, 'release', null),
            },
            { requiredKeys: [] },
          ),
        ),
        fc.constantFrom('open' as const, 'closed' as const),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        async (decision, failure, rateLimitHeaders, trackingIdOnAdmitted, later) => {
          fc.pre(!wellFormed(decision));
          const events: RateLimitErrorEvent<Req>[] = [];
          const gate = createRateLimitGate<Req>({
            limiter: { check: () => (later ? Promise.resolve(decision) : decision) as never },
            identify,
            failure,
            rateLimitHeaders,
            trackingIdOnAdmitted,
            onError: (e) => events.push(e),
          });
          const verdict = await gate.check({ client: 'c' }, 'GET', '/', undefined);
          expect(verdict.response?.status).toBe(failure === 'open' ? undefined : 503);
          expect(verdict.holdsLease).toBe(false);
          expect(events.map((e) => [e.phase, e.failure])).toEqual([['limiter', failure]]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a store that answers a malformed outcome is the limiter failing, with or without the RateLimit fields', async () => {
    const stores: Record<string, LimitStore> = {
      '{}': { synchronous: true, apply: () => ({}) as never, release: () => undefined },
      '42': { synchronous: true, apply: () => 42 as never, release: () => undefined },
      "'ok'": { synchronous: true, apply: () => 'ok' as never, release: () => undefined },
      null: { synchronous: true, apply: () => null as never, release: () => undefined },
      'a promise of {}': {
        synchronous: false,
        apply: async () => ({}) as never,
        release: async () => undefined,
      },
      'a promise from a store declared synchronous': {
        synchronous: true,
        apply: (async () => ({ allowed: true, now: 0 })) as never,
        release: () => undefined,
      },
    };
    for (const [name, store] of Object.entries(stores)) {
      for (const failure of ['open', 'closed'] as const) {
        for (const rateLimitHeaders of [false, true]) {
          const events: RateLimitErrorEvent<Req>[] = [];
          const gate = createRateLimitGate<Req>({
            limiter: createLimiter({ policies: [concurrency(2)], store, clock: new FakeClock(0) }),
            identify,
            failure,
            rateLimitHeaders,
            onError: (e) => events.push(e),
          });
          const verdict = await gate.check({ client: 'c' }, 'GET', '/', undefined);
          const label = `${name}, ${failure}, fields ${rateLimitHeaders}`;
          expect(verdict.response?.status, label).toBe(failure === 'open' ? undefined : 503);
          expect(
            events.map((e) => [e.phase, e.failure]),
            label,
          ).toEqual([['limiter', failure]]);
        }
      }
    }
  });

  it('an admission whose statuses cannot be written as RateLimit fields gives its lease back and fails', () => {
    let released = 0;
    const events: string[] = [];
    const gate = createRateLimitGate<Req>({
      limiter: {
        check: () =>
          ({
            allowed: true,
            now: 0,
            get statuses() {
              throw new Error('no statuses');
            },
            release: () => void released++,
          }) as never,
      },
      identify,
      rateLimitHeaders: true,
      failure: 'closed',
      onError: (e) => events.push(`${e.phase}:${(e.error as Error).message}`),
    });
    const verdict = gate.check({ client: 'c' }, 'GET', '/', undefined) as GateVerdict;
    expect(verdict.response?.status).toBe(503);
    expect(released).toBe(1);
    expect(events).toEqual(['limiter:no statuses']);
  });
});

describe('rate limit gate: the failure an event reports is what was done', () => {
  it('a tracking id source that throws under failure: closed lets the request through, and the event and the default line say so', () => {
    const events: RateLimitErrorEvent<Req>[] = [];
    const options = {
      limiter: limiterOf(2),
      identify,
      failure: 'closed' as const,
      trackingIdOnAdmitted: true,
      trackingIds: () => {
        throw new Error('id source down');
      },
    };
    const gate = createRateLimitGate<Req>({ ...options, onError: (e) => events.push(e) });
    const verdict = gate.check({ client: 'c' }, 'GET', '/', undefined) as GateVerdict;
    expect(verdict.response).toBeUndefined();
    expect(verdict.holdsLease).toBe(true);
    expect(events.map((e) => [e.phase, e.failure])).toEqual([['tracking-id', 'open']]);
    const lines: unknown[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line) => void lines.push(line));
    try {
      createRateLimitGate<Req>(options).check({ client: 'c' }, 'GET', '/', undefined);
    } finally {
      spy.mockRestore();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^api-conventions: rate limit tracking-id failed, request [0-9a-f-]{36} goes on under a random tracking id: id source down$/,
    );
  });

  it('under failure: closed, a failure that refuses says closed, and the ones after the request was let through say open', () => {
    const events: RateLimitErrorEvent<Req>[] = [];
    const gate = createRateLimitGate<Req>({
      limiter: admitting(),
      identify: (req) => {
        if (req.client === 'nobody') throw new Error('no identity');
        return identify(req);
      },
      failure: 'closed',
      onError: (e) => events.push(e),
    });
    // A failing identify refuses too: with a 500, whatever the failure mode.
    expect(
      (gate.check({ client: 'nobody' }, 'GET', '/', 'r1') as GateVerdict).response?.status,
    ).toBe(500);
    const admitted = gate.check({ client: 'c' }, 'GET', '/', 'r2') as GateVerdict;
    admitted.release();
    gate.report(new Error('handler failed'), { client: 'c' }, 'handler', 'r2');
    expect(events.map((e) => [e.phase, e.failure])).toEqual([
      ['identify', 'closed'],
      ['release', 'open'],
      ['handler', 'open'],
    ]);
    const lines: unknown[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line) => void lines.push(line));
    try {
      const silent = createRateLimitGate<Req>({
        limiter: admitting(),
        identify,
        failure: 'closed',
      });
      (silent.check({ client: 'c' }, 'GET', '/', 'r3') as GateVerdict).release();
      silent.report(new Error('handler failed'), { client: 'c' }, 'handler', 'r3');
    } finally {
      spy.mockRestore();
    }
    expect(lines).toEqual([
      'api-conventions: rate limit release failed, request r3 was let through; its lease could not be given back and stays held until it expires: store unreachable',
      'api-conventions: rate limit handler failed, request r3 was let through; its handler failed: handler failed',
    ]);

    function admitting(): CheckingLimiter {
      return {
        check: () =>
          ({
            allowed: true,
            statuses: [],
            now: 0,
            release: () => {
              throw new Error('store unreachable');
            },
          }) as never,
      };
    }
  });
});

describe('rate limit gate: requests identify cannot attribute, and outages decided in one place', () => {
  // A throttle of one: a counted request holds the lease, the next of the same key is refused.
  const throttled = () =>
    createLimiter({
      preset: {
        live: { name: 'live', policies: [concurrency(5, { name: 'live' })] },
        development: { name: 'development', policies: [concurrency(1, { name: 'dev' })] },
      },
      clock: new FakeClock(0),
    });
  const address = (req: Req) => req.id;

  it('counts a request without identity as anonymous, keyed by the remote address the adapter reads', () => {
    const gate = createRateLimitGate<Req>(
      { limiter: throttled(), identify: () => undefined },
      address,
    );
    const first = gate.check({ client: 'x', id: '10.0.0.1' }, 'GET', '/', 'r1') as GateVerdict;
    expect(first).toMatchObject({ response: undefined, holdsLease: true });
    // Same address: the same anonymous key, under the default (development) throttle of one.
    const second = gate.check({ client: 'y', id: '10.0.0.1' }, 'GET', '/', 'r2') as GateVerdict;
    expect(second.response?.status).toBe(429);
    const other = gate.check({ client: 'x', id: '10.0.0.2' }, 'GET', '/', 'r3') as GateVerdict;
    expect(other.holdsLease).toBe(true);
    // No address known: every such request shares one key.
    const unknownA = gate.check({ client: 'x' }, 'GET', '/', 'r4') as GateVerdict;
    const unknownB = gate.check({ client: 'y' }, 'GET', '/', 'r5') as GateVerdict;
    expect([unknownA.holdsLease, unknownB.response?.status]).toEqual([true, 429]);
  });

  it('keys the remote address by network, by anonymous.ipv6Subnet, and names a bad prefix length', () => {
    const gate = (ipv6Subnet?: number) =>
      createRateLimitGate<Req>(
        {
          limiter: throttled(),
          identify: () => undefined,
          ...(ipv6Subnet === undefined ? {} : { anonymous: { ipv6Subnet } }),
        },
        address,
      );
    const held = (g: ReturnType<typeof gate>, id: string) =>
      (g.check({ client: 'x', id }, 'GET', '/', 'r') as GateVerdict).holdsLease;
    // One /56 by default: the second /64 of it waits behind the first's lease.
    const by56 = gate();
    expect([held(by56, '2001:db8:0:100::1'), held(by56, '2001:db8:0:1ff::2')]).toEqual([
      true,
      false,
    ]);
    // The mapped spelling of an IPv4 address is that address.
    expect([held(by56, '192.0.2.1'), held(by56, '::ffff:c000:201')]).toEqual([true, false]);
    const by64 = gate(64);
    expect([held(by64, '2001:db8:0:100::1'), held(by64, '2001:db8:0:1ff::2')]).toEqual([
      true,
      true,
    ]);
    expect(held(by64, '2001:db8:0:1ff::3')).toBe(false);
    expect(thrown(() => gate(0))).toMatchObject({
      message: 'anonymous.ipv6Subnet must be a whole number from 1 to 128, got 0.',
    });
    const both = thrown(() =>
      createRateLimitGate<Req>({
        limiter: throttled(),
        identify: () => undefined,
        anonymous: { key: () => 'k', ipv6Subnet: 64 },
      }),
    );
    expect((both as Error).message).toBe(
      'anonymous.ipv6Subnet must be left out beside anonymous.key, as it applies to the default key only (return anonymousNetworkKey(address, { ipv6Subnet: 64 }) from anonymous.key instead), got 64.',
    );
  });

  it('takes the anonymous account type and key from the options, and refuses with 401 when asked', async () => {
    const keyed = createRateLimitGate<Req>({
      limiter: throttled(),
      identify: () => null as never,
      anonymous: { accountType: 'live', key: (req) => `k-${String(req.client)}` },
    });
    // Live's throttle of five for the key k-a.
    const verdicts = Array.from(
      { length: 6 },
      () => keyed.check({ client: 'a' }, 'GET', '/', undefined) as GateVerdict,
    );
    expect(verdicts.map((v) => v.response?.status ?? 200)).toEqual([200, 200, 200, 200, 200, 429]);
    const refusing = createRateLimitGate<Req>({
      limiter: throttled(),
      identify: async () => undefined,
      anonymous: 'refuse',
    });
    const refused = await refusing.check({ client: 'a' }, 'GET', '/', 'req-401');
    expect(refused.response?.status).toBe(401);
    expect(refused.response?.headers).toMatchObject({
      'content-type': 'application/problem+json; charset=utf-8',
      'service-tracking-id': 'req-401',
    });
    expect(JSON.parse(refused.response?.body ?? '')).toMatchObject({ code: 'unauthenticated' });
  });

  it("onIdentifyError: 'anonymous' limits a request whose identify threw, and reports it", () => {
    const events: RateLimitErrorEvent<Req>[] = [];
    const gate = createRateLimitGate<Req>(
      {
        limiter: throttled(),
        identify: () => {
          throw new Error('session store down');
        },
        onIdentifyError: 'anonymous',
        onError: (e) => events.push(e),
      },
      address,
    );
    const first = gate.check({ client: 'a', id: '10.0.0.9' }, 'GET', '/', 'r1') as GateVerdict;
    const second = gate.check({ client: 'a', id: '10.0.0.9' }, 'GET', '/', 'r2') as GateVerdict;
    expect([first.holdsLease, second.response?.status]).toEqual([true, 429]);
    expect(events.map((e) => [e.phase, e.failure])).toEqual([
      ['identify', 'anonymous'],
      ['identify', 'anonymous'],
    ]);
  });

  it('answers 500, never unlimited, when the anonymous key throws or the anonymous identity cannot be counted', () => {
    const events: RateLimitErrorEvent<Req>[] = [];
    const throwingKey = createRateLimitGate<Req>({
      limiter: throttled(),
      identify: () => undefined,
      anonymous: {
        key: () => {
          throw new Error('no socket');
        },
      },
      onError: (e) => events.push(e),
    });
    const noPreset = createRateLimitGate<Req>({
      limiter: throttled(),
      identify: () => undefined,
      anonymous: { accountType: 'enterprise' },
      onError: (e) => events.push(e),
    });
    for (const gate of [throwingKey, noPreset]) {
      const verdict = gate.check({ client: 'a' }, 'GET', '/', undefined) as GateVerdict;
      expect(verdict.response?.status).toBe(500);
      expect(verdict.holdsLease).toBe(false);
    }
    expect(events.map((e) => [e.phase, e.failure])).toEqual([
      ['identify', 'closed'],
      ['identify', 'closed'],
    ]);
  });

  it("answers a refusal for reason 'unavailable' 503 with its Retry-After, never 429", () => {
    const limiter: CheckingLimiter = {
      check: () => ({
        allowed: false,
        retryAfterSeconds: 4,
        retryAt: 4_000,
        policy: undefined,
        reason: 'unavailable',
        statuses: [],
        now: 0,
      }),
    };
    for (const rateLimitHeaders of [false, true]) {
      const gate = createRateLimitGate<Req>({ limiter, identify, rateLimitHeaders });
      const verdict = gate.check({ client: 'c' }, 'GET', '/', 'r-503') as GateVerdict;
      expect(verdict.response?.status).toBe(503);
      expect(verdict.response?.headers).toMatchObject({
        'retry-after': '4',
        'service-tracking-id': 'r-503',
        'content-type': 'application/problem+json; charset=utf-8',
      });
      expect(JSON.parse(verdict.response?.body ?? '')).toMatchObject({
        code: 'rate_limit_unavailable',
        status: 503,
      });
    }
  });

  it('answers 503 with failureRetryAfterSeconds under failure: closed', async () => {
    const gate = createRateLimitGate<Req>({
      limiter: createLimiter({ policies: [window(1, '1s')], store: new UnreachableStore() }),
      identify,
      failure: 'closed',
      failureRetryAfterSeconds: 7,
      onError: () => undefined,
    });
    const verdict = await gate.check({ client: 'c' }, 'GET', '/', undefined);
    expect(verdict.response?.status).toBe(503);
    expect(verdict.response?.headers['retry-after']).toBe('7');
  });

  it('refuses failure together with a limiter that decides outages itself, and bad new options', () => {
    const deciding = createLimiter({
      policies: [window(1, '1s')],
      store: new UnreachableStore(),
      outage: 'closed',
    });
    const attempts: unknown[] = [
      { limiter: deciding, identify, failure: 'open' },
      { limiter: limiterOf(), identify, onIdentifyError: 'ignore' },
      { limiter: limiterOf(), identify, anonymous: 'allow' },
      { limiter: limiterOf(), identify, anonymous: { key: 'ip' } },
      { limiter: limiterOf(), identify, anonymous: { accountType: 3 } },
      { limiter: limiterOf(), identify, anonymous: { ipv6Subnet: 0 } },
      { limiter: limiterOf(), identify, anonymous: { ipv6Subnet: 129 } },
      { limiter: limiterOf(), identify, anonymous: { key: () => 'k', ipv6Subnet: 64 } },
      { limiter: limiterOf(), identify, failureRetryAfterSeconds: 0 },
    ];
    for (const options of attempts) {
      let error: unknown;
      try {
        createRateLimitGate(options as never);
      } catch (caught) {
        error = caught;
      }
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
    // Without failure, the limiter's own decision stands.
    expect(() => createRateLimitGate({ limiter: deciding, identify })).not.toThrow();
    expect(
      thrown(() => createRateLimitGate({ limiter: deciding, identify, failure: 'open' })),
    ).toMatchObject({
      message:
        'failure must be left out beside a limiter that decides store outages itself (its outage is "closed"): decide in one place, or create the limiter without outage, which leaves outages to the middleware, got "open".',
    });
  });

  it.each<[string, unknown, string]>([
    [
      'a misspelt anonymous key',
      { kye: () => 'k' },
      'anonymous has no option "kye"; did you mean "key"? Its options are accountType, key, ipv6Subnet.',
    ],
    [
      'a misspelt anonymous prefix length',
      { ipv6subnet: 64 },
      'anonymous has no option "ipv6subnet"; did you mean "ipv6Subnet"? Its options are accountType, key, ipv6Subnet.',
    ],
    [
      'an array',
      [() => 'k'],
      'anonymous must be "refuse" or an object such as { accountType?, key?, ipv6Subnet? }, got an array.',
    ],
    [
      'a string other than refuse',
      'refused',
      'anonymous must be "refuse" or an object such as { accountType?, key?, ipv6Subnet? }, got "refused".',
    ],
    [
      'NaN',
      Number.NaN,
      'anonymous must be "refuse" or an object such as { accountType?, key?, ipv6Subnet? }, got NaN.',
    ],
    [
      'an object whose getter throws',
      {
        get key(): never {
          throw new Error('boom');
        },
      },
      'anonymous options must be plain data, got an object that threw when read.',
    ],
    [
      'a proxy whose keys throw',
      new Proxy(
        {},
        {
          ownKeys() {
            throw new Error('boom');
          },
        },
      ),
      'anonymous options must be plain data, got an object that threw when read.',
    ],
    [
      'a prefix length that is a string',
      { ipv6Subnet: '64' },
      'anonymous.ipv6Subnet must be a whole number from 1 to 128, got "64".',
    ],
  ])('refuses anonymous options with %s, naming what to give', (_, anonymous, message) => {
    expect(
      thrown(() => createRateLimitGate({ limiter: limiterOf(), identify, anonymous } as never)),
    ).toMatchObject({ name: 'ConfigurationError', code: 'invalid_option', message });
  });

  it('refuses a misspelt option and a limiter whose outage cannot be read, naming what to give', () => {
    expect(
      thrown(() =>
        createRateLimitGate({ limiter: limiterOf(), identify, failur: 'closed' } as never),
      ),
    ).toMatchObject({
      code: 'invalid_option',
      message:
        'The rate limit middleware has no option "failur"; did you mean "failure"? Its options are limiter, identify, onIdentifyError, anonymous, skip, failure, failureRetryAfterSeconds, onError, trackingIdOnAdmitted, trackingIds, trackingIdHeader, rateLimitHeaders.',
    });
    const limiter = {
      check: () => ({ allowed: true }) as never,
      get outage(): string {
        throw new Error('boom');
      },
    };
    expect(
      thrown(() => createRateLimitGate({ limiter, identify, failure: 'closed' })),
    ).toMatchObject({
      code: 'invalid_option',
      message:
        'limiter must be a limiter made by createLimiter() with check(), got an object that threw when read.',
    });
  });
});
