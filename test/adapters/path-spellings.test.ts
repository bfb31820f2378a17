/**
 * A path spelling never gains an exemption or escapes a limit: the three spellings that did,
 * sent byte for byte over real HTTP to Express 5, Fastify 5, Koa with @koa/router and Hono 4 with
 * the middleware in front, counting the requests that reach the handler.
 */
import Fastify, { type FastifyServerOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { fastifyRateLimit } from '../../src/adapters/fastify.js';
import { createLimiter, FakeClock, isConfigurationError, presets } from '../../src/index.js';
import {
  type AppRoute,
  type Gate,
  type RealApp,
  rawRequest,
  startExpress,
  startFastify,
  startHono,
  startKoa,
} from '../support/real-routers.js';

type Start = (routes: readonly AppRoute[], gate: Gate) => Promise<RealApp>;

const frameworks: Array<[string, Start]> = [
  ['Express 5', startExpress],
  ['Fastify 5', (routes, gate) => startFastify(routes, gate)],
  [
    'Fastify 5, keyed by the URL',
    (routes, gate) => startFastify(routes, { ...gate, keyBy: 'url' }),
  ],
  [
    'Fastify 5, caseSensitive: false',
    (routes, gate) => startFastify(routes, gate, { routerOptions: { caseSensitive: false } }),
  ],
  [
    'Fastify 5, caseSensitive: false, keyed by the URL',
    (routes, gate) =>
      startFastify(routes, { ...gate, keyBy: 'url' }, { routerOptions: { caseSensitive: false } }),
  ],
  ['Koa with @koa/router', startKoa],
  ['Hono 4', startHono],
];

// The Live throttle is 20 in flight; offers GETs are exempt from it, reservation GETs are not.
const LIVE_THROTTLE = 20;
// Development: PATCH /booking/v*/bookings/{id} is limited to 5 per 5 minutes per booking.
const BOOKING_LIMIT = 5;

const liveRoutes: AppRoute[] = [
  { method: 'GET', path: '/booking/v1/offers', hold: true },
  { method: 'GET', path: '/booking/v1/reservations/:id', hold: true },
];
const bookingRoutes: AppRoute[] = [{ method: 'PATCH', path: '/booking/v1/bookings/:id' }];

describe.each(frameworks)(
  '%s: a path spelling never gains an exemption or escapes a limit',
  (_, start) => {
    it('reservations/x\\..\\..\\offers is throttled as the reservation it is routed to: at most 20 of 40 slow requests reach a handler', async () => {
      const clock = new FakeClock(Date.UTC(2026, 0, 1));
      const limiter = createLimiter({ preset: presets.live, clock });
      const app = await start(liveRoutes, {
        limiter,
        identity: { clientId: 'c1', accountCode: 'ACME' },
      });
      const target = '/booking/v1/reservations/x\\..\\..\\offers';
      const sent = Array.from({ length: 40 }, () => rawRequest(app.port, 'GET', target));
      try {
        // Every request either reaches a handler (and is held there) or is answered.
        let answered = 0;
        const statuses: number[] = [];
        await new Promise<void>((done) => {
          const check = () => {
            if (app.served.length + answered === 40) done();
          };
          for (const { status } of sent) {
            status.then((code) => {
              statuses.push(code);
              answered++;
              check();
            });
          }
          const watch = (n: number): void => {
            app.servedAtLeast(n).then(() => {
              check();
              if (n < 40) watch(n + 1);
            });
          };
          watch(1);
        });
        // None reached the exempt offers handler; at most the throttle's 20 reached any handler.
        expect(app.served.filter((s) => s.route === '/booking/v1/offers')).toEqual([]);
        expect(app.served.length).toBeLessThanOrEqual(LIVE_THROTTLE);
        for (const code of statuses) expect([400, 404, 429]).toContain(code);
        if (app.served.length > 0) {
          // Routed as the reservation whose id is the whole backslashed segment.
          expect(app.served[0]).toEqual({
            route: '/booking/v1/reservations/:id',
            params: { id: 'x\\..\\..\\offers' },
          });
          expect(app.served).toHaveLength(LIVE_THROTTLE);
          expect(statuses.filter((code) => code === 429)).toHaveLength(40 - LIVE_THROTTLE);
        }
      } finally {
        for (const { socket } of sent) socket.destroy();
        await app.close();
      }
    });

    it('a Kelvin sign in a literal segment does not escape a 5 per 5 minutes limit: at most 5 of 30 reach the handler', async () => {
      const clock = new FakeClock(Date.UTC(2026, 0, 1));
      const limiter = createLimiter({ preset: presets.development, clock });
      const app = await start(bookingRoutes, {
        limiter,
        identity: { clientId: 'c1', accountCode: 'ACME' },
      });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 30; i++) {
          // One a second: the global limits (5 per second, 200 per minute) never refuse them.
          clock.advance(1_000);
          statuses.push(
            await rawRequest(app.port, 'PATCH', '/booking/v1/boo%E2%84%AAings/B1').status,
          );
        }
        expect(app.served.length).toBeLessThanOrEqual(BOOKING_LIMIT);
        if (app.served.length > 0) {
          // A router that lower-cases with Unicode rules serves booking B1: 5 reach it, 25 are refused.
          expect(app.served[0]).toEqual({
            route: '/booking/v1/bookings/:id',
            params: { id: 'B1' },
          });
          expect(app.served).toHaveLength(BOOKING_LIMIT);
          expect(statuses.filter((code) => code === 429)).toHaveLength(30 - BOOKING_LIMIT);
        } else {
          // The others route it nowhere.
          expect(statuses.every((code) => code === 404 || code === 429)).toBe(true);
        }
      } finally {
        await app.close();
      }
    });

    it('B1\\ and Z\\..\\B1 are the resources the router serves, each with a counter of its own, not B1', async () => {
      const clock = new FakeClock(Date.UTC(2026, 0, 1));
      const limiter = createLimiter({ preset: presets.development, clock });
      const app = await start(bookingRoutes, {
        limiter,
        identity: { clientId: 'c1', accountCode: 'ACME' },
      });
      try {
        const send = async (target: string) => {
          clock.advance(1_000);
          return rawRequest(app.port, 'PATCH', target).status;
        };
        for (let i = 0; i < BOOKING_LIMIT; i++) {
          expect(await send('/booking/v1/bookings/B1')).toBe(200);
        }
        expect(await send('/booking/v1/bookings/B1')).toBe(429);
        const other = [
          await send('/booking/v1/bookings/B1\\'),
          await send('/booking/v1/bookings/Z\\..\\B1'),
        ];
        const ids = app.served.map((s) => s.params.id);
        // Where the router serves them (Hono's node server refuses a backslash with 400), it serves
        // other bookings, and the limiter lets them through on counters of their own.
        for (const [k, id] of ['B1\\', 'Z\\..\\B1'].entries()) {
          if (other[k] === 400) continue;
          expect(other[k]).toBe(200);
          expect(ids).toContain(id);
        }
        expect(ids.filter((id) => id === 'B1')).toHaveLength(BOOKING_LIMIT);
      } finally {
        await app.close();
      }
    });
  },
);

describe('Fastify plugin: keyBy', () => {
  const identity = { clientId: 'c1', accountCode: 'ACME' };
  const sendBookings = async (app: RealApp, clock: FakeClock, n: number) => {
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      clock.advance(1_000);
      // Matrix parameters that find-my-way's useSemicolonDelimiter cuts off: every one is B1.
      statuses.push(await rawRequest(app.port, 'PATCH', `/booking/v1/bookings/B1;x=${i}`).status);
    }
    return statuses;
  };

  it("'route' (the default) counts what useSemicolonDelimiter serves: B1;x=0 … B1;x=9 are B1, 5 of 10 reach it", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const limiter = createLimiter({ preset: presets.development, clock });
    const app = await startFastify(
      bookingRoutes,
      { limiter, identity },
      {
        routerOptions: { useSemicolonDelimiter: true } as NonNullable<
          FastifyServerOptions['routerOptions']
        >,
      },
    );
    try {
      const statuses = await sendBookings(app, clock, 10);
      expect(app.served.map((s) => s.params.id)).toEqual(Array(BOOKING_LIMIT).fill('B1'));
      expect(statuses.filter((code) => code === 429)).toHaveLength(10 - BOOKING_LIMIT);
    } finally {
      await app.close();
    }
  });

  it("'url' reads the URL as sent: each matrix parameter is another id, as Express and Koa serve it", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const limiter = createLimiter({ preset: presets.development, clock });
    const app = await startFastify(bookingRoutes, { limiter, identity, keyBy: 'url' });
    try {
      const statuses = await sendBookings(app, clock, 10);
      expect(statuses).toEqual(Array(10).fill(200));
      expect(app.served.map((s) => s.params.id)).toEqual(
        Array.from({ length: 10 }, (_, i) => `B1;x=${i}`),
      );
    } finally {
      await app.close();
    }
  });

  it('a route with a wildcard is read from the URL, so its resource limits still apply', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const limiter = createLimiter({ preset: presets.development, clock });
    const app = await startFastify([{ method: 'PATCH', path: '/booking/v1/*' }], {
      limiter,
      identity,
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        clock.advance(1_000);
        statuses.push(await rawRequest(app.port, 'PATCH', '/booking/v1/bookings/B1').status);
      }
      expect(app.served).toHaveLength(BOOKING_LIMIT);
      expect(statuses.filter((code) => code === 429)).toHaveLength(8 - BOOKING_LIMIT);
    } finally {
      await app.close();
    }
  });

  it('refuses a keyBy other than route or url with invalid_option', async () => {
    const fastify = Fastify({ logger: false });
    fastify.register(fastifyRateLimit, {
      limiter: createLimiter({ preset: presets.development }),
      identify: () => identity,
      keyBy: 'path' as never,
    });
    const caught = await fastify.ready().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isConfigurationError(caught) && caught.code === 'invalid_option').toBe(true);
    expect((caught as Error).message).toBe('keyBy must be one of "route", "url", got "path".');
    await fastify.close();
  });
});
