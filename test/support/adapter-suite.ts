/**
 * The behaviour every adapter must show, run against the real framework serving real HTTP on
 * 127.0.0.1 and called by a real HTTP client: admitted and refused responses, the tracking id,
 * leases that come back after aborts and throwing handlers, skipped routes, asynchronous stores,
 * and failing open or closed.
 */
import type { ClientRequest, Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import {
  concurrency,
  createLimiter,
  FakeClock,
  type Identity,
  type Limiter,
  type LimitRequest,
  livePreset,
  type MemoryStore,
  type RateLimitErrorEvent,
  type RateLimitOptions,
  window,
} from '../../src/index.js';
import { AsyncMemoryStore, heldThrottle, UnreachableStore } from './async-store.js';
import { send, startAbortable, trackConnections } from './http-client.js';

/** The application every adapter test serves, whatever the framework. */
export interface TestApp {
  /** `identify` over a header lookup: `x-client` is the client id, `broken` makes it throw. */
  identify(header: (name: string) => string | undefined): Identity | Promise<Identity>;
  /** `skip`: `/health` is not limited. */
  skip(path: string): boolean;
  /** The `/hold` handler calls this and never answers (the client aborts). */
  held(): void;
}

/** Gate options other than identify and skip, which the framework wires to {@link TestApp}. */
export type GateOptions = Omit<RateLimitOptions<unknown>, 'identify' | 'skip'>;

/** A framework serving the test application with the adapter in front. */
export interface StartedServer {
  /** `http://127.0.0.1:port`. */
  readonly url: string;
  /** The node server underneath. */
  readonly server: Server;
  /** Stop serving. */
  close(): Promise<void>;
}

/** Starts the framework with the adapter. Routes: `/hold`, `/throw`, anything else is `200 ok`. */
export type StartServer = (options: GateOptions, app: TestApp) => Promise<StartedServer>;

/** Identity from the `x-client` and `x-account-type` headers. */
export function testIdentity(header: (name: string) => string | undefined): Identity {
  const client = header('x-client');
  if (client === 'broken') throw new Error('identity service down');
  return {
    clientId: client ?? 'anonymous',
    accountCode: 'ACME',
    accountType: header('x-account-type'),
  };
}

const TRACKING_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const probeRequest = (clientId: string): LimitRequest => ({
  clientId,
  accountCode: 'ACME',
  method: 'GET',
  path: '/probe',
});

/**
 * Saturate the throttle through the limiter: `max` are admitted and the next is refused by the
 * throttle. Then give everything back and step past the refusal's block.
 */
export function expectFullThrottle(
  limiter: Limiter<MemoryStore>,
  clock: FakeClock,
  clientId: string,
  max: number,
): void {
  const held = [];
  for (let i = 0; i < max; i++) {
    const decision = limiter.check(probeRequest(clientId));
    expect(decision.allowed, `probe ${i + 1} of ${max}`).toBe(true);
    held.push(decision);
  }
  const over = limiter.check(probeRequest(clientId));
  expect(over).toMatchObject({ allowed: false });
  for (const decision of held) if (decision.allowed) decision.release();
  clock.advance(1_000);
}

/** Resolves when `held()` has been called `n` times in all. */
function holdCounter() {
  let count = 0;
  let waiters: Array<{ n: number; wake: () => void }> = [];
  return {
    held: () => {
      count++;
      const ready = waiters.filter((w) => w.n <= count);
      waiters = waiters.filter((w) => w.n > count);
      for (const w of ready) w.wake();
    },
    until: (n: number) =>
      count >= n ? Promise.resolve() : new Promise<void>((wake) => waiters.push({ n, wake })),
  };
}

/** Rejects as soon as one of the held requests gets an answer (a leaked lease makes it a 429). */
function answeredEarly(requests: readonly ClientRequest[]): Promise<never> {
  return new Promise<never>((_, reject) => {
    for (const request of requests) {
      request.once('response', (response) =>
        reject(new Error(`a held request was answered ${response.statusCode}`)),
      );
    }
  });
}

/**
 * Open one connection and write every request in one write (HTTP/1.1 pipelining). The last one
 * asks to close the connection; `responses` resolves with the statuses read when it closes.
 */
function pipelined(base: string, paths: readonly string[]) {
  const { hostname, port } = new URL(base);
  const socket: Socket = connect(Number(port), hostname);
  let received = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    received += chunk;
  });
  socket.on('error', () => undefined);
  socket.write(
    paths
      .map(
        (path, i) =>
          `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Client: c1\r\n${
            i === paths.length - 1 ? 'Connection: close\r\n' : ''
          }\r\n`,
      )
      .join(''),
  );
  const responses = new Promise<number[]>((resolve) =>
    socket.on('close', () =>
      resolve([...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))),
    ),
  );
  return { socket, responses };
}

function testApp(held: () => void): TestApp {
  return { identify: testIdentity, skip: (path) => path === '/health', held };
}

/**
 * Declare the adapter suite.
 * @param name - the adapter, for the titles
 * @param start - starts the framework with the adapter
 */
export function adapterSuite(name: string, start: StartServer): void {
  describe(`${name} adapter against the real framework on 127.0.0.1`, () => {
    it('admits a request: the handler answers, with a generated tracking id or the well-formed one sent', async () => {
      const limiter = createLimiter({ policies: [window(10, '1s')], clock: new FakeClock(0) });
      const app = await start(
        { limiter, trackingIdOnAdmitted: true },
        testApp(() => undefined),
      );
      try {
        const plain = await send(app.url, '/ok', { 'x-client': 'c1' });
        expect(plain.status).toBe(200);
        expect(plain.body).toBe('ok');
        expect(plain.headers['service-tracking-id']).toMatch(TRACKING_ID);
        expect(plain.headers.ratelimit).toBeUndefined();
        const traced = await send(app.url, '/ok', {
          'x-client': 'c1',
          'service-tracking-id': 'req-7f3a:01',
        });
        expect(traced.headers['service-tracking-id']).toBe('req-7f3a:01');
      } finally {
        await app.close();
      }
    });

    it("refuses over the limit with the specification's 429: text, Retry-After, tracking id, no-store, which limit", async () => {
      const clock = new FakeClock(Date.UTC(2026, 0, 1, 12, 0, 0));
      const limiter = createLimiter({
        policies: [window(2, '1s', { name: 'global: 2 per 1 s' })],
        clock,
      });
      const app = await start(
        { limiter, rateLimitHeaders: true, trackingIdHeader: 'X-Request-Id' },
        testApp(() => undefined),
      );
      try {
        const first = await send(app.url, '/ok', { 'x-client': 'c1' });
        expect(first.headers['ratelimit-policy']).toBe('"global: 2 per 1 s";q=2;w=1');
        expect(first.headers.ratelimit).toBe('"global: 2 per 1 s";r=1;t=1');
        await send(app.url, '/ok', { 'x-client': 'c1' });
        const refused = await send(app.url, '/ok', { 'x-client': 'c1', 'x-request-id': 'abc' });
        expect(refused.status).toBe(429);
        expect(refused.headers['content-type']).toBe('text/plain; charset=utf-8');
        expect(refused.headers['retry-after']).toBe('1');
        expect(refused.headers['cache-control']).toBe('no-store');
        expect(refused.headers['x-request-id']).toBe('abc');
        expect(refused.headers.ratelimit).toBe('"global: 2 per 1 s";r=0;t=1');
        expect(refused.body).toContain('Limit hit: global: 2 per 1 s.');
        expect(refused.body).toContain(
          'Calls may resume in 1 second, at Thu, 01 Jan 2026 12:00:01 GMT',
        );
        expect(refused.body).toContain('Tracking id: abc');
        // Another client has its own counter.
        expect((await send(app.url, '/ok', { 'x-client': 'c2' })).status).toBe(200);
      } finally {
        await app.close();
      }
    });

    it('by default, admitted responses carry no tracking id and the 429 does', async () => {
      const limiter = createLimiter({ policies: [window(1, '1s')], clock: new FakeClock(0) });
      const app = await start(
        { limiter },
        testApp(() => undefined),
      );
      try {
        const admitted = await send(app.url, '/ok', { 'service-tracking-id': 'req-1' });
        expect(admitted.status).toBe(200);
        expect(admitted.headers['service-tracking-id']).toBeUndefined();
        const refused = await send(app.url, '/ok', { 'service-tracking-id': 'req-2' });
        expect(refused.status).toBe(429);
        expect(refused.headers['service-tracking-id']).toBe('req-2');
      } finally {
        await app.close();
      }
    });

    it('replaces a malformed tracking id with one from the injected source', async () => {
      const limiter = createLimiter({ policies: [window(1, '1s')], clock: new FakeClock(0) });
      let n = 0;
      const app = await start(
        { limiter, trackingIds: () => `generated-${++n}`, trackingIdOnAdmitted: true },
        testApp(() => undefined),
      );
      try {
        const admitted = await send(app.url, '/ok', { 'service-tracking-id': 'has spaces <b>' });
        expect(admitted.headers['service-tracking-id']).toBe('generated-1');
        const refused = await send(app.url, '/ok', { 'service-tracking-id': 'x'.repeat(129) });
        expect(refused.status).toBe(429);
        expect(refused.headers['service-tracking-id']).toBe('generated-2');
        expect(refused.body).toContain('Tracking id: generated-2');
      } finally {
        await app.close();
      }
    });

    it('1,000 requests aborted mid-flight leave zero leases: a saturating probe then sees the full throttle', async () => {
      const clock = new FakeClock(0);
      const max = 100;
      const limiter = createLimiter({ policies: [concurrency(max, { name: 'throttle' })], clock });
      const counter = holdCounter();
      const app = await start({ limiter }, testApp(counter.held));
      const connections = trackConnections(app.server);
      try {
        for (let round = 1; round <= 10; round++) {
          const requests = Array.from({ length: max }, () =>
            startAbortable(app.url, '/hold', { 'x-client': 'c1' }),
          );
          // Every one of them is admitted and inside its handler: the throttle is full.
          await Promise.race([counter.until(round * max), answeredEarly(requests)]);
          for (const request of requests) request.destroy();
          await connections.idle();
        }
        expectFullThrottle(limiter, clock, 'c1', max);
      } finally {
        await app.close();
      }
    });

    it('pipelined requests on one connection each get a decision and a lease, all given back, also when the connection closes before the later responses are sent', async () => {
      const clock = new FakeClock(0);
      const max = 4;
      const limiter = createLimiter({ policies: [concurrency(max, { name: 'throttle' })], clock });
      const holds = holdCounter();
      const identified = holdCounter();
      const app = await start(
        { limiter },
        {
          ...testApp(holds.held),
          identify: (header) => {
            identified.held();
            return testIdentity(header);
          },
        },
      );
      const connections = trackConnections(app.server);
      try {
        const answered = pipelined(app.url, ['/ok', '/ok?n=2', '/ok?n=3']);
        expect(await answered.responses).toEqual([200, 200, 200]);
        await connections.idle();
        expectFullThrottle(limiter, clock, 'c1', max);
        // The first is held; the three behind it are decided and handled while their responses
        // wait for it to be sent. Then the client leaves.
        const waiting = pipelined(app.url, ['/hold', '/ok', '/ok?n=2', '/ok?n=3']);
        await Promise.all([holds.until(1), identified.until(3 + max)]);
        waiting.socket.destroy();
        await connections.idle();
        expectFullThrottle(limiter, clock, 'c1', max);
      } finally {
        await app.close();
      }
    });

    it('a handler that throws gives its lease back', async () => {
      const clock = new FakeClock(0);
      const limiter = createLimiter({ policies: [concurrency(2, { name: 'throttle' })], clock });
      const app = await start(
        { limiter, onError: () => undefined },
        testApp(() => undefined),
      );
      const connections = trackConnections(app.server);
      try {
        for (let i = 0; i < 5; i++) {
          const failed = await send(app.url, '/throw', { 'x-client': 'c1' });
          expect(failed.status).toBe(500);
        }
        await connections.idle();
        expectFullThrottle(limiter, clock, 'c1', 2);
      } finally {
        await app.close();
      }
    });

    it('skipped routes pass a saturated throttle; limited ones get 429', async () => {
      const clock = new FakeClock(0);
      const limiter = createLimiter({ policies: [concurrency(3, { name: 'throttle' })], clock });
      const counter = holdCounter();
      const app = await start({ limiter }, testApp(counter.held));
      try {
        const holding = Array.from({ length: 3 }, () =>
          startAbortable(app.url, '/hold', { 'x-client': 'c1' }),
        );
        await counter.until(3);
        expect((await send(app.url, '/health', { 'x-client': 'c1' })).status).toBe(200);
        const refused = await send(app.url, '/ok', { 'x-client': 'c1' });
        expect(refused.status).toBe(429);
        expect(refused.body).toContain('Limit hit: throttle.');
        for (const request of holding) request.destroy();
      } finally {
        await app.close();
      }
    });

    it('exempt routes pass a saturated throttle: the Live offers calls still answer, other calls get 429', async () => {
      const clock = new FakeClock(0);
      const limiter = createLimiter({ preset: livePreset({ concurrency: 3 }), clock });
      const counter = holdCounter();
      const app = await start({ limiter }, testApp(counter.held));
      try {
        const holding = Array.from({ length: 3 }, () =>
          startAbortable(app.url, '/hold', { 'x-client': 'c1' }),
        );
        await Promise.race([counter.until(3), answeredEarly(holding)]);
        for (const path of [
          '/booking/v1/offers',
          '/booking/v2/rate-plan-offers?x=1',
          '/booking/v1/reservations/R1/service-offers',
        ]) {
          expect((await send(app.url, path, { 'x-client': 'c1' })).status, path).toBe(200);
        }
        const refused = await send(app.url, '/booking/v1/reservations', { 'x-client': 'c1' });
        expect(refused.status).toBe(429);
        expect(refused.body).toContain('Limit hit: throttle: 3 concurrent.');
        for (const request of holding) request.destroy();
      } finally {
        await app.close();
      }
    });

    it('counts a per-resource rule on the path as sent: an escaped backslash stays inside the id', async () => {
      const limiter = createLimiter({
        preset: {
          name: 'resource',
          policies: [window(100, '1s', { name: 'global' })],
          rules: [{ route: 'GET /r/{id}', policies: [window(1, '60s', { name: 'resource' })] }],
        },
        clock: new FakeClock(0),
      });
      const app = await start(
        { limiter },
        testApp(() => undefined),
      );
      try {
        for (const path of ['/r/a%5Cb', '/r/%41b%5C']) {
          expect((await send(app.url, path, { 'x-client': 'c1' })).status, path).toBe(200);
          const again = await send(app.url, path, { 'x-client': 'c1' });
          expect(again.status, path).toBe(429);
          expect(again.body).toContain('Limit hit: resource.');
        }
      } finally {
        await app.close();
      }
    });

    it('decides through an asynchronous store as through the memory store', async () => {
      const limiter = createLimiter({
        policies: [window(1, '1s', { name: 'w' })],
        store: new AsyncMemoryStore(),
        clock: new FakeClock(0),
      });
      const app = await start(
        { limiter },
        testApp(() => undefined),
      );
      try {
        expect((await send(app.url, '/ok', { 'x-client': 'c1' })).status).toBe(200);
        const refused = await send(app.url, '/ok', { 'x-client': 'c1' });
        expect(refused.status).toBe(429);
        expect(refused.headers['retry-after']).toBe('1');
      } finally {
        await app.close();
      }
    });

    it('a client that leaves while an asynchronous store decides gets no handler, and its lease comes back', async () => {
      const { store, limiter } = heldThrottle();
      let handled = 0;
      const app = await start(
        { limiter },
        testApp(() => handled++),
      );
      const connections = trackConnections(app.server);
      try {
        const request = startAbortable(app.url, '/hold', { 'x-client': 'c1' });
        await store.applied();
        request.destroy();
        await connections.idle();
        store.proceed();
        await vi.waitFor(() => expect(store.released).toBe(1));
        expect(handled).toBe(0);
      } finally {
        await app.close();
      }
    });

    it('a client that leaves while an asynchronous identify settles gets no handler, and no lease is left behind', async () => {
      const clock = new FakeClock(0);
      const limiter = createLimiter({ policies: [concurrency(1, { name: 'throttle' })], clock });
      let handled = 0;
      const asked = holdCounter();
      const pending: Array<() => void> = [];
      const app = await start(
        { limiter },
        {
          ...testApp(() => handled++),
          identify: (header) => {
            const identity = testIdentity(header);
            return new Promise<Identity>((resolve) => {
              pending.push(() => resolve(identity));
              asked.held();
            });
          },
        },
      );
      const connections = trackConnections(app.server);
      try {
        const request = startAbortable(app.url, '/hold', { 'x-client': 'c1' });
        await asked.until(1);
        request.destroy();
        await connections.idle();
        for (const settle of pending) settle();
        // Let the gate's continuation run.
        await new Promise((resolve) => setImmediate(resolve));
        expect(handled).toBe(0);
        expectFullThrottle(limiter, clock, 'c1', 1);
      } finally {
        await app.close();
      }
    });

    it('answers 500 when identify throws, fails open by default when the store is down, and reports each failure', async () => {
      const events: RateLimitErrorEvent<unknown>[] = [];
      const down = createLimiter({ policies: [window(1, '1s')], store: new UnreachableStore() });
      const app = await start(
        { limiter: down, onError: (event) => events.push(event) },
        testApp(() => undefined),
      );
      try {
        // A failing identify is a bug in wiring, not an outage: never let through unlimited.
        const broken = await send(app.url, '/ok', { 'x-client': 'broken' });
        expect(broken.status).toBe(500);
        expect(broken.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(broken.body)).toMatchObject({
          status: 500,
          code: 'request_not_attributed',
        });
        const unreachable = await send(app.url, '/ok', {
          'x-client': 'c1',
          'service-tracking-id': 'req-down-1',
        });
        expect(unreachable.status).toBe(200);
        expect(events.map((e) => [e.phase, e.failure, (e.error as Error).message])).toEqual([
          ['identify', 'closed', 'identity service down'],
          ['limiter', 'open', 'connect ECONNREFUSED 127.0.0.1:6380'],
        ]);
        expect(events[0]?.trackingId).toMatch(TRACKING_ID);
        expect(events[1]?.trackingId).toBe('req-down-1');
      } finally {
        await app.close();
      }
    });

    it('fails closed when configured: 503 with problem details, never a 429', async () => {
      const events: RateLimitErrorEvent<unknown>[] = [];
      const down = createLimiter({ policies: [window(1, '1s')], store: new UnreachableStore() });
      const app = await start(
        { limiter: down, failure: 'closed', onError: (event) => events.push(event) },
        testApp(() => undefined),
      );
      try {
        const refused = await send(app.url, '/ok', { 'x-client': 'c1' });
        expect(refused.status).toBe(503);
        expect(refused.headers['retry-after']).toBe('1');
        expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(refused.headers['service-tracking-id']).toMatch(TRACKING_ID);
        expect(JSON.parse(refused.body)).toMatchObject({
          status: 503,
          code: 'rate_limit_unavailable',
        });
        expect(events.map((e) => e.failure)).toEqual(['closed']);
      } finally {
        await app.close();
      }
    });
  });
}
