/** The memory delivery queue: bounded with backpressure, a fixed concurrency, retries, draining close. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Deliverer,
  type DeliveryJob,
  type DeliveryStep,
  FakeClock,
  isApiConventionsError,
  isConfigurationError,
  MemoryDeliveryQueue,
  type MemoryDeliveryQueueOptions,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

const job = (n: number): DeliveryJob => ({
  id: `msg_${n}`,
  subscriptionId: 'sub',
  endpointUrl: 'https://hooks.example.com/in',
  body: String(n),
  attempts: 0,
});

/** A deliverer whose attempts the test settles one by one; `retries` says how often each fails. */
function scriptedDeliverer(retries: (job: DeliveryJob) => number, clock: FakeClock) {
  const pending: Array<{ job: DeliveryJob; settle: () => void }> = [];
  const attempts: string[] = [];
  const deliverer: Deliverer = {
    attempt: (j) =>
      new Promise<DeliveryStep>((resolve) => {
        attempts.push(j.id);
        const report = {
          id: j.id,
          subscriptionId: j.subscriptionId,
          endpointUrl: j.endpointUrl,
          attempt: j.attempts + 1,
          at: clock.now(),
        };
        pending.push({
          job: j,
          settle: () =>
            resolve(
              j.attempts < retries(j)
                ? {
                    done: false,
                    job: { ...j, attempts: j.attempts + 1 },
                    at: clock.now() + 1_000,
                    report: { ...report, outcome: 'retry' },
                  }
                : { done: true, report: { ...report, outcome: 'delivered' } },
            ),
        });
      }),
  };
  return { deliverer, pending, attempts };
}

type Sleep = NonNullable<MemoryDeliveryQueueOptions['sleep']>;

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('MemoryDeliveryQueue', () => {
  it('never holds more than capacity nor runs more than concurrency; every job is delivered once, in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 20 }),
        async (capacity, concurrency, retryCounts) => {
          const clock = new FakeClock(0);
          const { deliverer, pending, attempts } = scriptedDeliverer(
            (j) => retryCounts[Number(j.body)]!,
            clock,
          );
          const queue = new MemoryDeliveryQueue({
            deliverer,
            capacity,
            concurrency,
            clock,
            sleep: async () => void clock.advance(1_000),
          });
          const accepted: number[] = [];
          const enqueued = retryCounts.map((_, n) =>
            queue.enqueue(job(n)).then(() => void accepted.push(n)),
          );
          let delivered = 0;
          while (delivered < retryCounts.length) {
            await tick();
            expect(queue.size).toBeLessThanOrEqual(capacity);
            expect(pending.length).toBeLessThanOrEqual(concurrency);
            const next = pending.shift();
            if (next === undefined) continue;
            if (next.job.attempts >= retryCounts[Number(next.job.body)]!) delivered += 1;
            next.settle();
          }
          await Promise.all(enqueued);
          expect(accepted).toEqual(retryCounts.map((_, n) => n));
          const total = retryCounts.reduce((sum, r) => sum + r + 1, 0);
          expect(attempts).toHaveLength(total);
          expect(await queue.close()).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('close finishes attempts in flight, hands back jobs waiting for a retry, and refuses new ones', async () => {
    const clock = new FakeClock(0);
    const { deliverer, pending } = scriptedDeliverer((j) => (j.id === 'msg_0' ? 1 : 0), clock);
    const queue = new MemoryDeliveryQueue({ deliverer, capacity: 2, concurrency: 2, clock });
    await queue.enqueue(job(0));
    await queue.enqueue(job(1));
    const blocked = queue.enqueue(job(2)).then(
      () => 'accepted',
      (e: unknown) => (isApiConventionsError(e) ? e.code : 'other'),
    );
    expect(queue.blocked).toBe(1);
    const closing = queue.close();
    expect(await blocked).toBe('queue_closed');
    for (const p of pending.splice(0)) p.settle();
    const leftover = await closing;
    expect(leftover).toEqual([{ ...job(0), attempts: 1 }]);
    const late = await queue.enqueue(job(3)).then(
      () => 'accepted',
      (e: { code: string }) => e.code,
    );
    expect(late).toBe('queue_closed');
  });

  it('hands back on close a job whose retry is being waited out, and never attempts it again', async () => {
    for (const honoursAbort of [true, false]) {
      const clock = new FakeClock(0);
      const { deliverer, pending, attempts } = scriptedDeliverer(() => 1, clock);
      let wake: () => void = () => undefined;
      const queue = new MemoryDeliveryQueue({
        deliverer,
        clock,
        // One sleep rejects when the queue closes, as asked; the other wakes up late all the same.
        sleep: (_ms, signal) =>
          new Promise<void>((resolve, reject) => {
            wake = resolve;
            if (honoursAbort) signal?.addEventListener('abort', () => reject(signal.reason));
          }),
      });
      await queue.enqueue(job(0));
      pending.shift()!.settle();
      await tick();
      expect(queue.size).toBe(1);
      expect(await queue.close()).toEqual([{ ...job(0), attempts: 1 }]);
      wake();
      await tick();
      expect(attempts).toEqual(['msg_0']);
      expect(queue.size).toBe(0);
    }
  });

  it('holds a job whose deliverer rejects, and hands it back on close', async () => {
    const broken: Deliverer = { attempt: () => Promise.reject(new Error('bug')) };
    const queue = new MemoryDeliveryQueue({ deliverer: broken });
    await queue.enqueue(job(7));
    await tick();
    expect(queue.size).toBe(1);
    expect(await queue.close()).toEqual([job(7)]);
  });

  it('retries after an injected sleep that returns no promise, throws or rejects, as after a wait', async () => {
    const sleeps: Array<(clock: FakeClock) => Sleep> = [
      (clock) => ((ms: number) => void clock.advance(ms)) as unknown as Sleep,
      () => () => {
        throw new Error('timer broke');
      },
      () => () => Promise.reject(new Error('timer broke')),
    ];
    for (const sleep of sleeps) {
      const clock = new FakeClock(0);
      const { deliverer, pending, attempts } = scriptedDeliverer(() => 1, clock);
      const queue = new MemoryDeliveryQueue({ deliverer, clock, sleep: sleep(clock) });
      await queue.enqueue(job(0));
      pending.shift()!.settle();
      await tick();
      expect(attempts).toEqual(['msg_0', 'msg_0']);
      pending.shift()!.settle();
      await tick();
      expect(queue.size).toBe(0);
      expect(await queue.close()).toEqual([]);
    }
  });

  it('hands back on close every job waiting for a retry, even when a deliverer returns the same job object for two', async () => {
    const clock = new FakeClock(0);
    const same = job(0);
    const deliverer: Deliverer = {
      // Two different jobs, answered with one and the same job object to wait for a retry.
      attempt: async (j) => ({
        done: false,
        job: same,
        at: clock.now() + 1_000,
        report: {
          id: j.id,
          subscriptionId: j.subscriptionId,
          endpointUrl: j.endpointUrl,
          attempt: 1,
          at: 0,
          outcome: 'retry',
        },
      }),
    };
    const queue = new MemoryDeliveryQueue({
      deliverer,
      clock,
      sleep: (_ms, signal) =>
        new Promise<void>((_, reject) =>
          signal?.addEventListener('abort', () => reject(signal.reason)),
        ),
    });
    await queue.enqueue(job(1));
    await queue.enqueue(job(2));
    await tick();
    expect(queue.size).toBe(2);
    expect(await queue.close()).toEqual([same, same]);
  });

  it('holds one job per message, subscription and replay: the same again adds nothing until it is done', async () => {
    const clock = new FakeClock(0);
    const { deliverer, pending, attempts } = scriptedDeliverer(() => 0, clock);
    const queue = new MemoryDeliveryQueue({ deliverer, clock, concurrency: 1 });
    await queue.enqueue(job(0));
    // The same delivery, as another object with its attempts counted: not added.
    await queue.enqueue({ ...job(0), attempts: 3 });
    // Another replay of it, and another subscription: each a job of its own.
    await queue.enqueue({ ...job(0), replay: 1 });
    await queue.enqueue({ ...job(0), subscriptionId: 'other' });
    await tick();
    expect(queue.size).toBe(3);
    for (let i = 0; i < 3; i++) {
      pending.shift()!.settle();
      await tick();
    }
    expect(attempts).toEqual(['msg_0', 'msg_0', 'msg_0']);
    expect(queue.size).toBe(0);
    // Done: the same delivery may be queued again (a replay of it would be).
    await queue.enqueue(job(0));
    await tick();
    expect(attempts).toHaveLength(4);
    pending.shift()!.settle();
    expect(await queue.close()).toEqual([]);
  });

  it('shares the workers between accounts: never more than an account’s share in flight, and a job of an account under its share starts whenever a worker is free', async () => {
    // Steps: enqueue a job of one of four accounts, or end one attempt in flight.
    const step = fc.oneof(
      fc.record({ enqueue: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ settle: fc.nat() }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        fc.array(step, { minLength: 1, maxLength: 60 }),
        async (concurrency, accountConcurrency, steps) => {
          const clock = new FakeClock(0);
          const { deliverer, pending, attempts } = scriptedDeliverer(() => 0, clock);
          const queue = new MemoryDeliveryQueue({
            deliverer,
            clock,
            concurrency,
            ...(accountConcurrency === undefined ? {} : { accountConcurrency }),
          });
          // The share as documented: the option, else a quarter of the workers, at least 1.
          const share = accountConcurrency ?? Math.max(1, Math.floor(concurrency / 4));
          const accountOfId = new Map<string, string>();
          const enqueued = new Map<string, number>();
          let n = 0;
          for (const s of steps) {
            if ('enqueue' in s) {
              const account = `account-${s.enqueue}`;
              const j = job(n++);
              accountOfId.set(j.id, account);
              enqueued.set(account, (enqueued.get(account) ?? 0) + 1);
              // Half of them tell their account only through the envelope.
              await queue.enqueue(
                n % 2 === 0
                  ? { ...j, accountCode: account }
                  : { ...j, body: JSON.stringify({ accountId: account }) },
              );
            } else if (pending.length > 0) {
              pending.splice(s.settle % pending.length, 1)[0]!.settle();
            }
            await tick();
            const count = (ids: readonly string[]) => {
              const by = new Map<string, number>();
              for (const id of ids) {
                const account = accountOfId.get(id)!;
                by.set(account, (by.get(account) ?? 0) + 1);
              }
              return by;
            };
            const inFlight = count(pending.map((p) => p.job.id));
            const started = count(attempts);
            expect(pending.length).toBeLessThanOrEqual(concurrency);
            for (const held of inFlight.values()) expect(held).toBeLessThanOrEqual(share);
            if (pending.length < concurrency) {
              // A worker is free: no account under its share has a job that has not started.
              for (const [account, total] of enqueued) {
                if ((inFlight.get(account) ?? 0) < share) {
                  expect(total - (started.get(account) ?? 0)).toBe(0);
                }
              }
            }
          }
          while (pending.length > 0) {
            pending.shift()!.settle();
            await tick();
          }
          expect(attempts).toHaveLength(n);
          expect(await queue.close()).toEqual([]);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('50 jobs waiting for their retry add no listener warning', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      // Each attempt asks a retry an hour away, waited on real timers (the default sleep).
      let made = 0;
      const deliverer: Deliverer = {
        attempt: async (j) => {
          made += 1;
          return {
            done: false,
            job: { ...j, attempts: 1 },
            at: Date.now() + 3_600_000,
            report: {
              id: j.id,
              subscriptionId: j.subscriptionId,
              endpointUrl: j.endpointUrl,
              attempt: 1,
              at: 0,
              outcome: 'retry',
            },
          };
        },
      };
      const queue = new MemoryDeliveryQueue({ deliverer, concurrency: 50 });
      for (let n = 0; n < 50; n++) await queue.enqueue(job(n));
      while (made < 50) await tick();
      await tick();
      expect(await queue.close()).toHaveLength(50);
      await tick();
      expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('refuses a capacity or concurrency below 1', () => {
    const deliverer: Deliverer = { attempt: async () => ({}) as DeliveryStep };
    for (const options of [{ capacity: 0 }, { concurrency: 1.5 }]) {
      const error = thrown(() => new MemoryDeliveryQueue({ deliverer, ...options }));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
  });
});
