/**
 * The Redis store publishes the leases its decisions drop expired, never given back, on the
 * lease expiry channel (docs/observability.md, "Leases"): once each, with the lease's expiry and
 * the time of the decision that dropped it; none for a lease given back; nothing built while no
 * one listens. Against a real redis-server, with both clients and with text replies.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  concurrency,
  createLimiter,
  FakeClock,
  type LeaseExpiryMessage,
  limitsChannels,
  window,
} from '../../src/index.js';
import { ChannelLog } from '../support/channel-log.js';
import { equivalence, variants } from '../support/redis-equivalence.js';
import { connect, type TestClient } from '../support/redis-server.js';
import { type SharedRedis, sharedRedis } from '../support/shared-redis.js';

const { store: freshStore } = equivalence();
const log = new ChannelLog();
afterEach(log.stop);

const request = {
  clientId: 'client-1',
  accountCode: 'ACME',
  accountType: 'live',
  method: 'GET',
  path: '/folios',
};

const T0 = 1_000_000;

/** Let the messages queued on microtasks by the decision just answered be published. */
const published = () => new Promise((resolve) => setImmediate(resolve));

describe.each(variants)('RedisStore with %s', (kind) => {
  it('reports a lease never given back once, when a decision drops it: its expiry, and that decision time as foundAt', async () => {
    // Arrange
    const store = await freshStore(kind);
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    const clock = new FakeClock(T0);
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle', leaseTtl: '30s' })],
      store,
      clock,
    });

    // Act
    await limiter.check(request); // never given back: expires at T0 + 30 s
    clock.advance(45_000);
    const after = await limiter.check(request); // finds it expired, and drops it
    await published();
    const first = [...expiries];
    if (after.allowed) after.release();
    clock.advance(60_000);
    await limiter.check(request);
    await published();

    // Assert
    expect(after.allowed).toBe(true);
    expect(first).toEqual([{ policy: 'throttle', expiredAt: T0 + 30_000, foundAt: T0 + 45_000 }]);
    expect(expiries).toEqual(first); // never again
  });

  it('reports nothing for leases given back, before they expired or after', async () => {
    // Arrange
    const store = await freshStore(kind);
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    const clock = new FakeClock(T0);
    const limiter = createLimiter({
      policies: [concurrency(2, { name: 'throttle', leaseTtl: '1s' })],
      store,
      clock,
    });

    // Act: one given back in time; one given back late, riding on the next decision.
    const inTime = await limiter.check(request);
    if (inTime.allowed) inTime.release();
    const late = await limiter.check(request);
    clock.advance(5_000);
    if (late.allowed) late.release();
    const next = await limiter.check(request);
    if (next.allowed) next.release();
    clock.advance(5_000);
    await limiter.check(request);
    await published();

    // Assert
    expect([inTime.allowed, late.allowed, next.allowed]).toEqual([true, true, true]);
    expect(expiries).toEqual([]);
  });

  it('a refusal that records nothing else drops and reports the expired leases of its throttles, as the memory store prunes them', async () => {
    // Arrange: a throttle of one whose refusal blocks it for 10 s, longer than the lease lives.
    const store = await freshStore(kind);
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    const clock = new FakeClock(T0);
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle', leaseTtl: '1s', retryAfter: '10s' })],
      store,
      clock,
    });

    // Act
    await limiter.check(request); // never given back: expires at T0 + 1 s
    clock.advance(500);
    const full = await limiter.check(request); // refused, blocked until T0 + 10.5 s
    clock.advance(1_500);
    const blocked = await limiter.check(request); // still blocked: no block to record
    await published();

    // Assert
    expect(full.allowed ? undefined : full.reason).toBe('limit');
    expect(blocked.allowed ? undefined : blocked.reason).toBe('blocked');
    expect(expiries).toEqual([{ policy: 'throttle', expiredAt: T0 + 1_000, foundAt: T0 + 2_000 }]);
  });

  it('a refusal by another policy reports the expired lease too', async () => {
    // Arrange
    const store = await freshStore(kind);
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    const clock = new FakeClock(T0);
    const limiter = createLimiter({
      policies: [
        window(1, '1h', { name: 'hourly' }),
        concurrency(2, { name: 'throttle', leaseTtl: '1s' }),
      ],
      store,
      clock,
    });

    // Act
    await limiter.check(request); // never given back
    clock.advance(5_000);
    const refused = await limiter.check(request);
    await published();

    // Assert
    expect(refused.allowed ? undefined : refused.policy?.name).toBe('hourly');
    expect(expiries).toEqual([{ policy: 'throttle', expiredAt: T0 + 1_000, foundAt: T0 + 5_000 }]);
  });

  it('a peek writes nothing, so it drops and reports nothing; the next check that writes reports the lease once', async () => {
    // Arrange
    const store = await freshStore(kind);
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    const clock = new FakeClock(T0);
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle', leaseTtl: '1s' })],
      store,
      clock,
    });

    // Act
    await limiter.check(request); // never given back
    clock.advance(2_000);
    const peeked = await limiter.peek(request);
    await published();
    const afterPeek = [...expiries];
    clock.advance(1_000);
    await limiter.check(request);
    await published();

    // Assert
    expect(peeked.allowed).toBe(true);
    expect(afterPeek).toEqual([]);
    expect(expiries).toEqual([{ policy: 'throttle', expiredAt: T0 + 1_000, foundAt: T0 + 3_000 }]);
  });

  it('reports the leases each decision of a batch dropped, once each', async () => {
    // Arrange: 20 clients, each with a lease never given back; their next decisions go in batches.
    const store = await freshStore(kind, 8);
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    const clock = new FakeClock(T0);
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle', leaseTtl: '1s' })],
      store,
      clock,
    });
    const clients = Array.from({ length: 20 }, (_, i) => ({ ...request, clientId: `c${i}` }));

    // Act
    await Promise.all(clients.map((r) => limiter.check(r)));
    clock.advance(3_000);
    const after = await Promise.all(clients.map((r) => limiter.check(r)));
    await published();

    // Assert
    expect(after.every((d) => d.allowed)).toBe(true);
    expect(expiries).toEqual(
      clients.map(() => ({ policy: 'throttle', expiredAt: T0 + 1_000, foundAt: T0 + 3_000 })),
    );
  });
});

describe('RedisStore while no one listens for lease expiries', () => {
  let redis: SharedRedis;
  let client: TestClient;

  beforeAll(async () => {
    redis = await sharedRedis();
    client = await connect('ioredis', redis.port, redis.db);
  });

  afterAll(async () => {
    await client.close();
    await redis.release();
  });

  it.each([
    ['bytes', true],
    ['text', false],
  ])(
    'calls no report, and so builds no message, for a lease it drops (replies in %s)',
    async (_, binary) => {
      // Arrange: the library loaded afresh with its report function watched (files share modules
      // in a worker, so the mock must not outlive this test).
      const channels = '../../src/limits/channels.js';
      const report = vi.fn();
      vi.resetModules();
      vi.doMock(channels, async (importOriginal) => {
        const actual = await importOriginal<typeof import('../../src/limits/channels.js')>();
        report.mockImplementation(actual.reportLeaseExpiry);
        return { ...actual, reportLeaseExpiry: report };
      });
      try {
        const { RedisStore } = await import('../../src/redis/index.js');
        const library = await import('../../src/index.js');
        const clock = new library.FakeClock(T0);
        const limiter = library.createLimiter({
          policies: [library.concurrency(1, { name: 'throttle', leaseTtl: '1s' })],
          store: new RedisStore({
            client: binary
              ? client.client
              : { ...client.client, binaryArguments: false, binaryReplies: false },
            prefix: `unheard-${binary}:`,
            timeSource: 'clock',
            expiryMarginMs: 600_000,
            timeoutMs: 10_000,
          }),
          clock,
        });

        // Act: a lease dropped expired unheard, then one heard.
        await limiter.check(request);
        clock.advance(2_000);
        const unheard = await limiter.check(request);
        const callsUnheard = report.mock.calls.length;
        const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
        clock.advance(2_000);
        await limiter.check(request);
        await published();

        // Assert
        expect(unheard.allowed).toBe(true);
        expect(callsUnheard).toBe(0);
        expect(report.mock.calls).toEqual([['throttle', T0 + 3_000, T0 + 4_000]]);
        expect(expiries).toEqual([
          { policy: 'throttle', expiredAt: T0 + 3_000, foundAt: T0 + 4_000 },
        ]);
      } finally {
        vi.doUnmock(channels);
        vi.resetModules();
      }
    },
  );
});
