/**
 * The limits' diagnostics channels, through real limiter checks on a fake clock: decisions with
 * their policy, reason and Retry-After, leases given back and found expired, store failures.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AsyncLimitStore,
  concurrency,
  createLimiter,
  type DecisionMessage,
  FakeClock,
  type LeaseExpiryMessage,
  type LeaseReleaseMessage,
  type LeaseToken,
  limitsChannels,
  MemoryStore,
  type Plan,
  type StoreFailureMessage,
  type StoreOutcome,
  window,
} from '../../src/index.js';
import { AsyncMemoryStore, UnreachableStore } from '../support/async-store.js';
import { ChannelLog } from '../support/channel-log.js';

const log = new ChannelLog();
afterEach(log.stop);

const request = {
  clientId: 'client-1',
  accountCode: 'ACME',
  accountType: 'live',
  method: 'GET',
  path: '/folios',
};

/** A store that decides from memory and fails to take leases back. */
class ForgetfulStore implements AsyncLimitStore {
  readonly synchronous = false as const;
  readonly #memory = new MemoryStore();

  apply(plan: Plan, now: number): Promise<StoreOutcome> {
    return Promise.resolve(this.#memory.apply(plan, now));
  }

  release(_lease: LeaseToken): Promise<void> {
    return Promise.reject(new Error('connection lost'));
  }
}

describe('the decision channel', () => {
  it('publishes an admission with its request, its lease and the decision check answered', () => {
    const decisions = log.listen<DecisionMessage>(limitsChannels.decision);
    const limiter = createLimiter({
      policies: [window(10, '1s'), concurrency(2, { name: 'throttle' })],
      clock: new FakeClock(0),
    });

    const decision = limiter.check(request);

    expect(decisions).toHaveLength(1);
    const [message] = decisions as [DecisionMessage];
    expect(message).toMatchObject({
      outcome: 'admitted',
      policy: undefined,
      reason: undefined,
      retryAfterSeconds: undefined,
      lease: true,
      request,
    });
    expect(message.decision).toBe(decision);
    expect(message.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('publishes refusals with the policy that refused, the reason and the Retry-After announced', () => {
    const decisions = log.listen<DecisionMessage>(limitsChannels.decision);
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [window(1, '2s', { name: 'one per 2 s' })], clock });

    limiter.check(request);
    clock.advance(500);
    limiter.check(request);
    clock.advance(500);
    limiter.check(request);

    expect(
      decisions.map(({ outcome, policy, reason, retryAfterSeconds, lease }) => ({
        outcome,
        policy,
        reason,
        retryAfterSeconds,
        lease,
      })),
    ).toEqual([
      {
        outcome: 'admitted',
        policy: undefined,
        reason: undefined,
        retryAfterSeconds: undefined,
        lease: false,
      },
      {
        outcome: 'refused',
        policy: 'one per 2 s',
        reason: 'limit',
        retryAfterSeconds: 2,
        lease: false,
      },
      {
        outcome: 'refused',
        policy: 'one per 2 s',
        reason: 'blocked',
        retryAfterSeconds: 2,
        lease: false,
      },
    ]);
  });

  it('publishes an asynchronous store decision once it is made, answering the same decision', async () => {
    const decisions = log.listen<DecisionMessage>(limitsChannels.decision);
    const limiter = createLimiter({
      policies: [window(1, '1s')],
      store: new AsyncMemoryStore(),
      clock: new FakeClock(0),
    });

    const pending = limiter.check(request);
    expect(decisions).toEqual([]);
    const decision = await pending;
    const refused = await limiter.check(request);

    expect(decisions.map((m) => m.decision)).toEqual([decision, refused]);
    expect(decisions.map((m) => m.outcome)).toEqual(['admitted', 'refused']);
  });

  it('publishes nothing for a request check refuses to read', () => {
    const decisions = log.listen<DecisionMessage>(limitsChannels.decision);
    const limiter = createLimiter({ policies: [window(1, '1s')], clock: new FakeClock(0) });

    expect(() => limiter.check({ ...request, clientId: '' })).toThrow();

    expect(decisions).toEqual([]);
  });

  it('lets a subscriber call check again: the store has decided by then', () => {
    const limiter = createLimiter({ policies: [window(2, '1s')], clock: new FakeClock(0) });
    const nested: boolean[] = [];
    const listener = (message: unknown) => {
      if ((message as DecisionMessage).request.clientId !== 'outer') return;
      nested.push(limiter.check({ ...request, clientId: 'inner' }).allowed);
    };
    log.subscribe(limitsChannels.decision, listener);

    const outer = limiter.check({ ...request, clientId: 'outer' });

    expect(outer.allowed).toBe(true);
    expect(nested).toEqual([true]);
  });
});

describe('the lease channels', () => {
  it('publishes a lease given back once, however often release is called', () => {
    const releases = log.listen<LeaseReleaseMessage>(limitsChannels.leaseRelease);
    const store = new MemoryStore();
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle' })],
      store,
      clock: new FakeClock(0),
    });

    const decision = limiter.check(request);
    if (!decision.allowed) throw new Error('expected an admission');
    decision.release();
    decision.release();

    expect(releases).toEqual([{ decision, store }]);
  });

  it('publishes nothing for an admission without a lease', () => {
    const releases = log.listen<LeaseReleaseMessage>(limitsChannels.leaseRelease);
    const limiter = createLimiter({ policies: [window(1, '1s')], clock: new FakeClock(0) });

    const decision = limiter.check(request);
    if (decision.allowed) decision.release();

    expect(releases).toEqual([]);
  });

  it('publishes a lease found past its TTL, never given back, after the decision that found it', async () => {
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle', leaseTtl: '30s' })],
      clock,
    });

    limiter.check(request); // never released
    clock.advance(30_000);
    const after = limiter.check(request);
    expect(expiries).toEqual([]); // on a microtask: the store was deciding
    await Promise.resolve();

    expect(after.allowed).toBe(true);
    expect(expiries).toEqual([{ policy: 'throttle', expiredAt: 30_000, foundAt: 30_000 }]);
  });

  it('publishes a lease the sweep finds expired', async () => {
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle', leaseTtl: '1s' })],
      store: new MemoryStore({ sweepInterval: 1 }),
      clock,
    });

    limiter.check(request); // never released
    clock.advance(5_000);
    // Other clients' decisions: the sweep reaches the first client's record and drops it.
    for (let i = 0; i < 4; i++) limiter.check({ ...request, clientId: `other-${i}` });
    await Promise.resolve();

    expect(expiries).toEqual([{ policy: 'throttle', expiredAt: 1_000, foundAt: 5_000 }]);
  });

  it('publishes a lease given back after it expired as a release too: its request has ended', async () => {
    const releases = log.listen<LeaseReleaseMessage>(limitsChannels.leaseRelease);
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle', leaseTtl: '1s' })],
      clock,
    });

    const first = limiter.check(request);
    clock.advance(1_000);
    limiter.check(request); // finds the first lease expired
    if (first.allowed) first.release();
    await Promise.resolve();

    expect(expiries).toHaveLength(1);
    expect(releases.map((m) => m.decision)).toEqual([first]);
  });
});

describe('the store failure channel', () => {
  it("publishes a store's failure to decide and what the limiter did, in each outage mode", async () => {
    const failures = log.listen<StoreFailureMessage>(limitsChannels.storeFailure);
    const decisions = log.listen<DecisionMessage>(limitsChannels.decision);
    const clock = new FakeClock(0);
    const store = new UnreachableStore();
    const quiet = { onOutage: () => undefined };

    await expect(
      createLimiter({ policies: [window(1, '1s')], store, clock }).check(request),
    ).rejects.toThrow('ECONNREFUSED');
    const decided = [];
    for (const outage of ['open', 'closed', 'fallback'] as const) {
      const limiter = createLimiter({
        policies: [window(1, '1s')],
        store,
        clock,
        outage,
        ...quiet,
      });
      decided.push(await limiter.check(request));
    }

    expect(failures.map(({ operation, outage }) => [operation, outage])).toEqual([
      ['apply', 'reject'],
      ['apply', 'open'],
      ['apply', 'closed'],
      ['apply', 'fallback'],
    ]);
    for (const failure of failures) {
      expect(failure.store).toBe(store);
      expect((failure.error as Error).message).toContain('ECONNREFUSED');
    }
    // A rejected check decides nothing; the others publish what they decided.
    expect(decisions.map((m) => m.decision)).toEqual(decided);
    expect(decisions.map((m) => [m.outcome, m.reason])).toEqual([
      ['admitted', undefined],
      ['refused', 'unavailable'],
      ['admitted', undefined],
    ]);
  });

  it("publishes a store's failure to take a lease back", async () => {
    const failures = log.listen<StoreFailureMessage>(limitsChannels.storeFailure);
    const store = new ForgetfulStore();
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle' })],
      store,
      clock: new FakeClock(0),
    });

    const decision = await limiter.check(request);
    if (!decision.allowed) throw new Error('expected an admission');
    decision.release();
    await new Promise((resolve) => setImmediate(resolve));

    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ operation: 'release', outage: undefined, store });
  });
});
