/**
 * The retrying fetch and the pacer against real local servers: one that refuses with and without
 * Retry-After, with an HTTP-date and with garbage; and a service limited by the node adapter with the
 * Live preset, which a paced burst crosses without a single 429.
 */
import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeRateLimit } from '../../src/adapters/node.js';
import { createPacer, createRetryingFetch, type RetryEvent } from '../../src/client/index.js';
import { createLimiter, FakeClock, formatHttpDate, presets } from '../../src/index.js';
import { type ListServer, startListServer } from '../support/list-server.js';
import { listen } from '../support/listen.js';

let server: ListServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A sleep that moves the fake clock in a later turn of the event loop, as a timer would. */
const movingSleep = (clock: FakeClock) => (ms: number) =>
  new Promise<void>((resolve) =>
    setImmediate(() => {
      clock.advance(ms);
      resolve();
    }),
  );

describe('retrying fetch against a real server', () => {
  it('waits what each 429 says: delay-seconds, nothing (one second), an HTTP-date, garbage (one second)', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 21, 14, 0, 0));
    const answers = ['2', null, formatHttpDate(clock.now() + 5_000), 'in a moment'];
    server = await startListServer({ total: 3, throttle: (i) => answers[i] });
    const events: RetryEvent[] = [];
    const waits: number[] = [];
    const fetch = createRetryingFetch({
      clock,
      sleep: async (ms) => void waits.push(ms),
      maxRetries: 4,
      onRetry: (event) => events.push(event),
    });
    const response = await fetch(`${server.url}/items?pageNumber=1`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ items: [0, 1, 2] });
    expect(waits).toEqual([2_000, 1_000, 5_000, 1_000]);
    expect(events.map((e) => e.source)).toEqual([
      'retry-after',
      'default',
      'retry-after',
      'default',
    ]);
    expect(server.requests).toHaveLength(5);
  });

  it('returns the last 429 when the retries run out, with what the server said', async () => {
    server = await startListServer({ total: 1, throttle: () => '1' });
    const fetch = createRetryingFetch({ sleep: async () => undefined, maxRetries: 2 });
    const response = await fetch(`${server.url}/items`, { method: 'POST', body: 'x' });
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.text()).toBe('Too many requests');
    expect(server.requests).toEqual(['POST /items', 'POST /items', 'POST /items']);
  });
});

describe('pacing against a service limited with the Live preset', () => {
  // Client and server share one fake clock: time moves only when the client waits.
  async function liveService(clock: FakeClock) {
    let refused = 0;
    let served = 0;
    const limit = nodeRateLimit({
      limiter: createLimiter({ preset: presets.live, clock }),
      identify: () => ({ clientId: 'integrator', accountCode: 'ACME' }),
    });
    const app = await listen(
      createServer((req, res) => {
        res.once('finish', () => {
          if (res.statusCode === 429) refused++;
          else served++;
        });
        limit(req, res, () => res.end('ok'));
      }),
    );
    return {
      app,
      get refused() {
        return refused;
      },
      get served() {
        return served;
      },
    };
  }

  it('a paced burst of a Live minute and more (3,600 requests at once, some under per-resource limits) receives no 429', async () => {
    const clock = new FakeClock(0);
    const service = await liveService(clock);
    try {
      // Time moves only when the client waits and none of its requests is on the way: a request
      // reaches the server at the fake instant it was sent. (Were the clock moved while requests
      // travel over real HTTP, they would arrive as late as the pacer's next wait, a jitter of up
      // to minutes that no safety margin is meant to absorb.)
      const pacer = createPacer({
        preset: presets.live,
        clock,
        sleep: async (ms, signal) => {
          while (pacer.inFlight > 0) await new Promise<void>((resolve) => setImmediate(resolve));
          if (!signal?.aborted) clock.advance(ms);
        },
      });
      const fetch = createRetryingFetch({
        clock,
        sleep: movingSleep(clock),
        maxRetries: 0,
        pace: pacer,
      });
      // Every twelfth call patches one of two bookings: 150 each, at 20 per 5 min per booking.
      const statuses = await Promise.all(
        Array.from({ length: 3_600 }, async (_, i) => {
          const response =
            i % 12 === 0
              ? await fetch(`${service.app.url}/booking/v1/bookings/B${(i / 12) % 2}`, {
                  method: 'PATCH',
                  body: '{}',
                })
              : await fetch(`${service.app.url}/booking/v1/reservations/${i}`);
          await response.arrayBuffer();
          return response.status;
        }),
      );
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      expect(service.refused).toBe(0);
      expect(service.served).toBe(3_600);
      // It took the time the limits demand: 150 patches of one booking at 20 per 5 min is 35 min.
      expect(clock.now()).toBeGreaterThan(35 * 60_000);
    } finally {
      await service.app.close();
    }
  });

  it('the same burst without pacing is refused (the limits are real)', async () => {
    const clock = new FakeClock(0);
    const service = await liveService(clock);
    try {
      const fetch = createRetryingFetch({ clock, sleep: movingSleep(clock), maxRetries: 0 });
      const statuses = await Promise.all(
        Array.from({ length: 400 }, async () => {
          const response = await fetch(`${service.app.url}/booking/v1/reservations`);
          await response.arrayBuffer();
          return response.status;
        }),
      );
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
      expect(service.refused).toBeGreaterThan(0);
    } finally {
      await service.app.close();
    }
  });
});
