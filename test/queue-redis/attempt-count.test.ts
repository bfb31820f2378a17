/**
 * The Redis queue counts attempts without writing the job before each one: from the record a retry
 * or a deferral writes and BullMQ's count of the job's takings. Here BullMQ is a fake that keeps
 * one job's hash (its data and `attemptsStarted`) as its Lua scripts do, each process a queue of
 * its own that may die at any point, so that any mix of retries, crashes and deferrals runs in
 * milliseconds on a fake clock; the real BullMQ and real kills are in redis-delivery-queue.test.ts.
 * The queue here holds one delivery a job (`deliveriesPerJob: 1`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type DeliveryAttempt,
  type DeliveryJob,
  FakeClock,
  retrySchedule,
} from '../../src/index.js';
import { createRedisDeliveryQueue } from '../../src/queue-redis/index.js';
import { hookedDeliverer } from '../../src/webhooks/delivery/create-deliverer.js';

/** What becomes of one taking of the job (by a worker process of its own). */
type Taking =
  /** Attempted; the receiver answers 500: a retry. */
  | { kind: 'retry' }
  /** Attempted; the process dies while the request is out. */
  | { kind: 'crash' }
  /** Attempted, answered 500; the process dies putting it back, after `landed` of its commands. */
  | { kind: 'crash-putting-back'; landed: 0 | 1 }
  /** Not attempted: the subscription's receiver asked every delivery to wait (the deliverer defers). */
  | { kind: 'wait'; crash?: { landed: 0 | 1 } }
  /**
   * Not attempted: the job's account holds its share of the process's workers. The job waits in
   * the process for one, until the queue closes, and goes back to Redis (at once where the
   * process has no room to wait); or the process dies after `landed` of the job's commands.
   */
  | { kind: 'share'; crash?: { landed: 0 | 1 } }
  /**
   * The job's account holds its share; the job waits in the process, and the other job's attempt
   * hands it its worker as it ends (where the process has room to wait; else the job goes back to
   * Redis). After it, attempted: answered 500 (a retry), or the process dies while the request is out.
   */
  | { kind: 'handed'; after: 'retry' | 'crash' };

/** How the job is stored when the run starts. */
type Start =
  | { kind: 'enqueued' }
  /** Written by the queue before `startsCounted` was kept: attempts counted by a write before each. */
  | { kind: 'legacy'; attempts: number; deferrals: number; firstAttemptAt: boolean };

const T0 = 1_700_000_000_000;
const ACCOUNT = 'acct';

/** One job's hash, as BullMQ keeps it. */
interface Hash {
  data: unknown;
  attemptsStarted: number;
  readonly timestamp: number;
  readonly opts: { delay?: number };
}

type Processor = (job: unknown, token: string) => Promise<unknown>;

/** A process: its commands land until it dies; those it sends after never do. */
class Life {
  #armed = false;
  #landing = Number.POSITIVE_INFINITY;
  #sent = 0;
  #die: () => void = () => undefined;
  readonly dead = new Promise<'dead'>((resolve) => {
    this.#die = () => resolve('dead');
  });
  /** From now on, `landed` more commands land, then the process dies. */
  dieAfter(landed: number): void {
    this.#armed = true;
    this.#landing = this.#sent + landed;
  }
  die(): Promise<never> {
    this.#die();
    return new Promise<never>(() => undefined);
  }
  command(apply: () => void): Promise<void> {
    if (this.#armed && this.#sent >= this.#landing) return this.die();
    this.#sent += 1;
    apply();
    return Promise.resolve();
  }
}

/** The parts of `bullmq` the queue uses, over one hash per job id. */
function fakeBullmq(hashes: Map<string, Hash>, clock: FakeClock) {
  const processors: Processor[] = [];
  class Queue {
    on() {
      return this;
    }
    async add(_name: string, data: unknown, opts: { jobId: string; delay?: number }) {
      if (hashes.has(opts.jobId)) return;
      hashes.set(opts.jobId, {
        data: structuredClone(data),
        attemptsStarted: 0,
        timestamp: clock.now(),
        opts: opts.delay === undefined ? {} : { delay: opts.delay },
      });
    }
    async count() {
      return 0;
    }
    async close() {}
  }
  class Worker {
    constructor(_name: string, processor: Processor) {
      processors.push(processor);
    }
    on() {
      return this;
    }
    async close() {}
  }
  class DelayedError extends Error {}
  /** A worker takes the job (BullMQ's moveToActive: `attemptsStarted` + 1) in a process. */
  const take = (id: string, life: Life) => {
    const hash = hashes.get(id)!;
    hash.attemptsStarted += 1;
    const job = {
      id,
      data: structuredClone(hash.data),
      attemptsStarted: hash.attemptsStarted,
      timestamp: hash.timestamp,
      opts: hash.opts,
      updateData(data: unknown) {
        job.data = data;
        return life.command(() => {
          hash.data = structuredClone(data);
        });
      },
      moveToDelayed: () => life.command(() => undefined),
    };
    return job;
  };
  return { module: { Queue, Worker, DelayedError } as never, processors, take };
}

/** What a run saw: the time of each request to the receiver, and each report with the requests before it. */
interface Seen {
  readonly requests: number[];
  readonly reports: Array<{ readonly report: DeliveryAttempt; readonly requests: number }>;
}

/**
 * Runs the takings, then one that delivers; answers what was seen and the job's hash. Each taking
 * is a process of its own, as after a crash or a restart (its queue's shares are its own), with 4
 * workers (room for one job of the account to wait) or, without `room`, 2 (none).
 */
async function run(
  start: Start,
  takings: readonly Taking[],
  steps: readonly number[],
  room = true,
) {
  const clock = new FakeClock(T0);
  const hashes = new Map<string, Hash>();
  const fake = fakeBullmq(hashes, clock);
  const seen: Seen = { requests: [], reports: [] };
  const job: DeliveryJob = {
    id: 'msg',
    subscriptionId: 'sub',
    endpointUrl: 'https://receiver.example/in',
    body: '{}',
    attempts: 0,
    accountCode: ACCOUNT,
  };
  let current: { taking: Taking | { kind: 'deliver' }; life: Life } | undefined;
  // The other job's request, once out: ending it gives back its worker.
  let otherOut: (end: () => void) => void = () => undefined;
  const deliverer = hookedDeliverer(
    {
      clock,
      random: () => 0,
      schedule: retrySchedule({ maxAttempts: 10_000, maxAgeMs: 365 * 86_400_000 }),
      transport: async (request) => {
        // The process's other job of the same account holds its worker until ended.
        if (request.headers['webhook-id'] !== 'msg') {
          return new Promise((resolve) => otherOut(() => resolve({ status: 204, headers: {} })));
        }
        seen.requests.push(clock.now());
        const { taking, life } = current!;
        if (taking.kind === 'crash' || (taking.kind === 'handed' && taking.after === 'crash')) {
          return life.die();
        }
        if (taking.kind === 'crash-putting-back') life.dieAfter(taking.landed);
        return { status: taking.kind === 'deliver' ? 204 : 500, headers: {} };
      },
    },
    {
      secrets: () => ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      recorded: (report) => {
        if (report.id === 'msg') seen.reports.push({ report, requests: seen.requests.length });
      },
      waitUntil: (_subscription, now) => {
        const { taking, life } = current!;
        if (taking.kind !== 'wait') return undefined;
        if (taking.crash !== undefined) life.dieAfter(taking.crash.landed);
        return now + 1_000;
      },
    },
  );
  const process = () =>
    createRedisDeliveryQueue({
      bullmq: fake.module,
      connection: {},
      clock,
      deliverer,
      concurrency: room ? 4 : 2,
      accountConcurrency: 1,
      // Longer than any run: a wait ends when the worker is handed over or the queue closes.
      accountDeferMs: 60_000,
      // A job of its own per delivery, with no marker: what this fake keeps. Several deliveries
      // a job count per delivery through their markers (bundled-*.test.ts, the kill tests).
      deliveriesPerJob: 1,
    });
  const producer = process();
  if (start.kind === 'enqueued') await producer.enqueue(job);
  else {
    const { attempts, deferrals, firstAttemptAt } = start;
    hashes.set('msg|sub', {
      data: { ...job, attempts, ...(firstAttemptAt ? { firstAttemptAt: T0 - 1 } : {}) },
      attemptsStarted: attempts + deferrals,
      timestamp: T0 - 2,
      opts: {},
    });
  }
  hashes.set('other|sub', {
    data: { ...job, id: 'other', startsCounted: 0 },
    attemptsStarted: 0,
    timestamp: T0,
    opts: {},
  });
  const all = [...takings, { kind: 'deliver' as const }];
  for (const [n, taking] of all.entries()) {
    clock.set(clock.now() + (steps[n % steps.length] ?? 0));
    const life = new Life();
    const queue = process();
    const processor = fake.processors.at(-1)!;
    const held = taking.kind === 'share' || taking.kind === 'handed';
    const otherEnds = new Promise<() => void>((resolve) => {
      otherOut = resolve;
    });
    if (held) {
      // Another job of the account in flight in this process: this one is over the share.
      current = { taking, life };
      void processor(fake.take('other|sub', life), 'token');
      if (taking.kind === 'share' && taking.crash !== undefined) {
        life.dieAfter(taking.crash.landed);
      }
    }
    current = { taking, life };
    const settled = processor(fake.take('msg|sub', life), 'token').then(
      () => 'settled',
      () => 'settled',
    );
    // The job waits (where there is room) until the other's attempt ends, or the queue closes.
    if (taking.kind === 'handed') (await otherEnds)();
    if (taking.kind === 'share') void queue.close();
    await Promise.race([settled, life.dead]);
    await queue.close();
  }
  return { seen, hash: hashes.get('msg|sub')! };
}

const landed = fc.constantFrom<0 | 1>(0, 1);
const taking: fc.Arbitrary<Taking> = fc.oneof(
  fc.constant({ kind: 'retry' as const }),
  fc.constant({ kind: 'crash' as const }),
  landed.map((l) => ({ kind: 'crash-putting-back' as const, landed: l })),
  fc.record({ kind: fc.constant('wait' as const) }),
  fc.record({ kind: fc.constant('share' as const) }),
  landed.map((l) => ({ kind: 'wait' as const, crash: { landed: l } })),
  landed.map((l) => ({ kind: 'share' as const, crash: { landed: l } })),
  fc.constantFrom('retry' as const, 'crash' as const).map((after) => ({
    kind: 'handed' as const,
    after,
  })),
);
const start: fc.Arbitrary<Start> = fc.oneof(
  fc.constant({ kind: 'enqueued' as const }),
  fc.record({
    kind: fc.constant('legacy' as const),
    attempts: fc.nat(5),
    deferrals: fc.nat(3),
    firstAttemptAt: fc.boolean(),
  }),
);
const attemptsBefore = (s: Start) => (s.kind === 'legacy' ? s.attempts : 0);

describe('the Redis queue counts attempts from its records and BullMQ’s count of takings', () => {
  it('counts every attempt started, those lost with their process included, and no deferral, whatever the mix', async () => {
    await fc.assert(
      fc.asyncProperty(
        start,
        fc.array(taking, { maxLength: 12 }),
        fc.array(fc.nat(5_000), { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        async (first, takings, steps, room) => {
          const { seen } = await run(first, takings, steps, room);
          // The requirement: attempt n is the n-th request the receiver got (the attempts the
          // job had when it came counted too). A process that dies while it defers a job, before
          // its record lands, cannot be told from one that died attempting: at most one more each.
          const unrecorded = takings.filter(
            (t) => (t.kind === 'wait' || t.kind === 'share') && t.crash !== undefined,
          ).length;
          expect(seen.reports.length).toBeGreaterThan(0);
          for (const { report, requests } of seen.reports) {
            const started = attemptsBefore(first) + requests;
            expect(report.attempt).toBeGreaterThanOrEqual(started);
            expect(report.attempt).toBeLessThanOrEqual(started + unrecorded);
            if (unrecorded === 0) expect(report.attempt).toBe(started);
          }
          expect(seen.reports.at(-1)?.report.outcome).toBe('delivered');
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps a first attempt time never later than the first request, so the max age gives up no later', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(taking, { maxLength: 8 }),
        fc.array(fc.nat(5_000), { minLength: 1, maxLength: 4 }),
        async (takings, steps) => {
          const { seen, hash } = await run({ kind: 'enqueued' }, takings, steps);
          const stored = hash.data as DeliveryJob;
          const firstRequest = seen.requests[0]!;
          // Recorded with the retry of the last taking before the delivery, or still unknown.
          if (stored.firstAttemptAt !== undefined) {
            expect(stored.firstAttemptAt).toBeLessThanOrEqual(firstRequest);
            expect(stored.firstAttemptAt).toBeGreaterThanOrEqual(T0);
          }
          // The first attempt's own retry landed: its time exactly (unless a process died deferring
          // the job before it, unrecorded, which reads as an attempt lost earlier still).
          const firstAttempt = takings.findIndex(
            (t) =>
              ['retry', 'crash', 'crash-putting-back', 'handed'].includes(t.kind) ||
              ((t.kind === 'wait' || t.kind === 'share') && t.crash !== undefined),
          );
          const first = takings[firstAttempt];
          if (first?.kind === 'retry' || (first?.kind === 'handed' && first.after === 'retry')) {
            expect(stored.firstAttemptAt).toBe(firstRequest);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('writes nothing before an attempt of a job it enqueued, and one record with each retry or deferral', async () => {
    const { seen, hash } = await run({ kind: 'enqueued' }, [{ kind: 'crash' }], [0]);
    // The crashed attempt wrote nothing; the taking after it counted it all the same.
    expect(seen.reports.map(({ report: r }) => [r.outcome, r.attempt])).toEqual([['delivered', 2]]);
    expect(hash).toMatchObject({ attemptsStarted: 2, data: { attempts: 0, startsCounted: 0 } });
    const deferred = await run({ kind: 'enqueued' }, [{ kind: 'share' }, { kind: 'wait' }], [0]);
    expect(deferred.hash).toMatchObject({
      attemptsStarted: 3,
      data: { attempts: 0, startsCounted: 2 },
    });
    expect(deferred.seen.reports.map(({ report: r }) => [r.outcome, r.attempt])).toEqual([
      ['delivered', 1],
    ]);
  });

  it('attempts a job that waited for its account’s worker in the same taking, counted as one attempt', async () => {
    const outcomes = (seen: Seen) => seen.reports.map(({ report: r }) => [r.outcome, r.attempt]);
    // Handed the worker as the other job's attempt ended: attempted in this taking, never put back.
    const retried = await run({ kind: 'enqueued' }, [{ kind: 'handed', after: 'retry' }], [0]);
    expect(outcomes(retried.seen)).toEqual([
      ['retry', 1],
      ['delivered', 2],
    ]);
    expect(retried.hash).toMatchObject({ attemptsStarted: 2, data: { attempts: 1 } });
    // The process died in that attempt: the taking after it counts it.
    const died = await run({ kind: 'enqueued' }, [{ kind: 'handed', after: 'crash' }], [0]);
    expect(outcomes(died.seen)).toEqual([['delivered', 2]]);
    expect(died.seen.requests).toHaveLength(2);
    // No room to wait (2 workers, a share of 1): put back unattempted, counted as none.
    const putBack = await run(
      { kind: 'enqueued' },
      [{ kind: 'handed', after: 'retry' }],
      [0],
      false,
    );
    expect(outcomes(putBack.seen)).toEqual([['delivered', 1]]);
    expect(putBack.hash).toMatchObject({ attemptsStarted: 2, data: { startsCounted: 1 } });
  });

  it('counts a job stored before startsCounted was kept by its attempts, written once before the attempt', async () => {
    const legacy: Start = { kind: 'legacy', attempts: 2, deferrals: 3, firstAttemptAt: true };
    const { seen, hash } = await run(legacy, [{ kind: 'crash' }], [0]);
    expect(seen.reports.map(({ report: r }) => [r.outcome, r.attempt])).toEqual([['delivered', 4]]);
    // Written before the crashed attempt (attempts 3), then counted by its takings from then on.
    expect(hash).toMatchObject({ attemptsStarted: 7, data: { attempts: 3, startsCounted: 6 } });
  });
});
