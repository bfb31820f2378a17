/**
 * The durable delivery queue on a real redis-server through BullMQ: delivery, retries moved to
 * Redis, enqueueing twice adds once, and deliveries that survive killing the process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import * as bullmq from 'bullmq';
import { Redis } from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeliverer,
  type DeliveryAttempt,
  type DeliveryJob,
  type DeliveryStep,
  FakeClock,
  generateWebhookSecret,
  httpTransport,
  isApiConventionsError,
  isConfigurationError,
  retrySchedule,
  verifyWebhook,
} from '../../src/index.js';
import { createRedisDeliveryQueue } from '../../src/queue-redis/index.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/ports.js';
import { RedisServer } from '../support/redis-server.js';
import { type SharedRedis, sharedRedis } from '../support/shared-redis.js';
import { thrown } from '../support/thrown.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

let redis: SharedRedis;
let receiver: WebhookReceiver;
beforeAll(async () => {
  [redis, receiver] = await Promise.all([sharedRedis(), startReceiver()]);
});
afterAll(async () => {
  await receiver.close();
  await redis.release();
});

const secret = generateWebhookSecret();
const connection = () => ({
  host: '127.0.0.1',
  port: redis.port,
  db: redis.db,
  maxRetriesPerRequest: null,
});
const job = (id: string) => ({
  id,
  subscriptionId: 'sub:1',
  endpointUrl: `${receiver.url}/in`,
  body: `{"id":"${id}"}`,
  attempts: 0,
});
/** A fake deliverer's step: the job delivered by attempt `attempt`. */
const delivered = (j: DeliveryJob, attempt: number): DeliveryStep => ({
  done: true,
  report: {
    id: j.id,
    subscriptionId: j.subscriptionId,
    endpointUrl: j.endpointUrl,
    attempt,
    at: 0,
    outcome: 'delivered',
  },
});

describe('createRedisDeliveryQueue (BullMQ)', () => {
  it('delivers, moves a retry to Redis for the time the schedule says, and adds a job enqueued twice once', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const reports: DeliveryAttempt[] = [];
    let finished: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      finished = resolve;
    });
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name: 'unit',
      // On a fake clock far behind the real one, a retry is due at once in Redis's eyes.
      clock,
      deliverer: createDeliverer({
        secrets: () => [secret],
        transport: httpTransport({ allow: ['127.0.0.1'] }),
        clock,
        onAttempt: (a) => {
          reports.push(a);
          if (reports.filter((r) => r.outcome === 'delivered').length === 2) finished();
        },
      }),
    });
    const answers = [{ status: 503, headers: { 'retry-after': '30' } }];
    receiver.respond(() => answers.shift() ?? { status: 204 });
    const before = receiver.received.length;
    try {
      await queue.enqueue(job('msg_a'));
      await queue.enqueue(job('msg_a'));
      await queue.enqueue(job('msg_b'));
      await done;
      const got = receiver.received.slice(before);
      expect(got.map((d) => d.headers['webhook-id']).sort()).toEqual(['msg_a', 'msg_a', 'msg_b']);
      for (const d of got) {
        expect(verifyWebhook(d.body, d.headers, { secrets: secret, clock }).ok).toBe(true);
      }
      const retry = reports.find((r) => r.outcome === 'retry')!;
      expect(retry.nextAttemptAt).toBe(clock.now() + 30_000);
      expect(
        reports
          .filter((r) => r.outcome === 'delivered')
          .map((r) => r.attempt)
          .sort(),
      ).toEqual([1, 2]);
    } finally {
      await queue.close();
    }
    const refused = await queue.enqueue(job('late')).then(
      () => 'accepted',
      (e: unknown) => (isApiConventionsError(e) ? e.code : 'other'),
    );
    expect(refused).toBe('queue_closed');
  });

  it('holds one job per message, subscription and replay: a replay is a job of its own beside the delivered one', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const reports: DeliveryAttempt[] = [];
    let wake: () => void = () => undefined;
    const delivered = (count: number) =>
      new Promise<void>((resolve) => {
        wake = () => {
          if (reports.filter((r) => r.outcome === 'delivered').length >= count) resolve();
        };
        wake();
      });
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name: `replays-${randomUUID()}`,
      clock,
      deliverer: createDeliverer({
        secrets: () => [secret],
        transport: httpTransport({ allow: ['127.0.0.1'] }),
        clock,
        onAttempt: (a) => {
          reports.push(a);
          wake();
        },
      }),
    });
    receiver.respond(() => ({ status: 204 }));
    const before = receiver.received.length;
    try {
      await queue.enqueue(job('msg_r'));
      await delivered(1);
      // The job is kept (active, then completed): the same delivery again adds nothing …
      await queue.enqueue(job('msg_r'));
      // … its replay is a job of its own, sent with the same webhook-id and reported as replay 1.
      await queue.enqueue({ ...job('msg_r'), replay: 1 });
      await delivered(2);
      const got = receiver.received.slice(before);
      expect(got.map((d) => d.headers['webhook-id'])).toEqual(['msg_r', 'msg_r']);
      expect(reports.map((r) => r.replay)).toEqual([undefined, 1]);
      // Two jobs in all, whatever state each has reached.
      const counts = await queue.counts();
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(2);
    } finally {
      await queue.close();
    }
  });

  it('enqueues jobs whose ids hold lone surrogates, each once, never merged with another', async () => {
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name: `surrogates-${randomUUID()}`,
    });
    try {
      // encodeURIComponent refuses lone surrogates; UTF-8 would write all three ids alike.
      for (const subscriptionId of ['sub\uD800', 'sub\uDBFF', 'sub\uFFFD', 'sub%uD800']) {
        await queue.enqueue({ ...job('msg_\uDC00'), subscriptionId });
        await queue.enqueue({ ...job('msg_\uDC00'), subscriptionId });
      }
      expect((await queue.counts()).waiting).toBe(4);
    } finally {
      await queue.close();
    }
  });

  it('rejects with queue_full beyond its capacity, and refuses a missing bullmq module', async () => {
    const producer = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name: 'bounded',
      capacity: 2,
    });
    try {
      await producer.enqueue(job('one'));
      await producer.enqueue(job('two'));
      const full = await producer.enqueue(job('three')).then(
        () => 'accepted',
        (e: { code: string }) => e.code,
      );
      expect(full).toBe('queue_full');
      expect((await producer.counts()).waiting).toBe(2);
    } finally {
      await producer.close();
    }
    const error = thrown(() =>
      createRedisDeliveryQueue({ bullmq: {} as never, connection: connection() }),
    );
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
  });

  it("keeps its jobs under the prefix given, in the queue named 'webhook-deliveries' by default", async () => {
    const producer = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      prefix: 'hooks',
    });
    const view = (prefix: string) =>
      new bullmq.Queue('webhook-deliveries', { connection: connection(), prefix });
    const [prefixed, unprefixed] = [view('hooks'), view('bull')];
    try {
      await producer.enqueue(job('prefixed'));
      expect((await producer.counts()).waiting).toBe(1);
      expect(await prefixed.getJobCounts('waiting')).toEqual({ waiting: 1 });
      expect(await unprefixed.getJobCounts('waiting')).toEqual({ waiting: 0 });
    } finally {
      await Promise.all([producer.close(), prefixed.close(), unprefixed.close()]);
    }
  });

  it('holds one account to its share of the workers: its jobs beyond it are put back unattempted, another account’s run', async () => {
    const held: Array<() => void> = [];
    const started: string[] = [];
    let wake: () => void = () => undefined;
    const changed = () => wake();
    const until = async (condition: () => boolean) => {
      while (!condition()) await new Promise<void>((resolve) => (wake = resolve));
    };
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name: 'shares',
      concurrency: 4,
      accountConcurrency: 1,
      accountDeferMs: 20,
      deliverer: {
        // The hostile account's attempts hang until released; the other's end at once.
        attempt: (j) =>
          new Promise((resolve) => {
            started.push(j.id);
            changed();
            if (j.accountCode === 'hostile') held.push(() => resolve(delivered(j, 1)));
            else resolve(delivered(j, 1));
          }),
      },
    });
    try {
      for (const id of ['h1', 'h2', 'h3'])
        await queue.enqueue({ ...job(id), accountCode: 'hostile' });
      // Of no account field: the envelope's accountId tells it.
      for (const id of ['g1', 'g2']) {
        await queue.enqueue({ ...job(id), body: JSON.stringify({ id, accountId: 'good' }) });
      }
      await until(() => started.includes('g1') && started.includes('g2'));
      // The other account's jobs ran while the hostile one held a single worker.
      expect(started.filter((id) => id.startsWith('h'))).toHaveLength(1);
      expect(held).toHaveLength(1);
      // Released one at a time, the hostile jobs run in turn, each once.
      while (started.filter((id) => id.startsWith('h')).length < 3) {
        held.shift()?.();
        await until(
          () => held.length > 0 || started.filter((id) => id.startsWith('h')).length === 3,
        );
      }
      for (const release of held.splice(0)) release();
      expect(started.sort()).toEqual(['g1', 'g2', 'h1', 'h2', 'h3']);
    } finally {
      for (const release of held.splice(0)) release();
      await queue.close();
    }
  });

  it('lets a job of an account at its share wait in the process for its worker, and attempts it as the attempt before ends, never putting it back', async () => {
    const name = `handed-${randomUUID().slice(0, 8)}`;
    const inspect = new bullmq.Queue(name, { connection: connection() });
    let release: () => void = () => undefined;
    const started: string[] = [];
    let wake: () => void = () => undefined;
    const until = async (condition: () => boolean) => {
      while (!condition()) await new Promise<void>((resolve) => (wake = resolve));
    };
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      concurrency: 4,
      accountConcurrency: 1,
      // Longer than the test: the job is attempted because the worker is handed over, not after.
      accountDeferMs: 60_000,
      deliverer: {
        attempt: (j) =>
          new Promise((resolve) => {
            started.push(j.id);
            wake();
            if (j.id === 'first') release = () => resolve(delivered(j, j.attempts + 1));
            else resolve(delivered(j, j.attempts + 1));
          }),
      },
    });
    const stored = async (id: string) => {
      const jobs = await inspect.getJobs(['active', 'waiting', 'delayed', 'completed']);
      return jobs.find((j) => j.data.id === id);
    };
    try {
      await queue.enqueue({ ...job('first'), accountCode: 'acme' });
      await until(() => started.includes('first'));
      await queue.enqueue({ ...job('second'), accountCode: 'acme' });
      // Taken and waiting in the process: active, recorded as a taking that attempted nothing.
      const waiting = await eventually('the second job waits for the worker', async () => {
        const j = await stored('second');
        return j !== undefined && (await j.isActive()) && j.data.startsCounted === 1 && j;
      });
      expect(waiting.attemptsStarted).toBe(1);
      expect(started).toEqual(['first']);
      release();
      await eventually('the second job delivered', async () =>
        (await stored('second'))?.isCompleted(),
      );
      expect(started).toEqual(['first', 'second']);
      // Taken once: never put back and taken again. Its data is as it was enqueued.
      const done = (await stored('second'))!;
      expect(done.attemptsStarted).toBe(1);
      expect(done.data).toMatchObject({ attempts: 0, startsCounted: 0 });
    } finally {
      release();
      await queue.close();
      await inspect.close();
    }
  });

  it('keeps a job enqueued for a later time delayed in Redis until then', async () => {
    const producer = createRedisDeliveryQueue({ bullmq, connection: connection(), name: 'later' });
    try {
      await producer.enqueue(job('later'), { at: Date.now() + 3_600_000 });
      await producer.enqueue(job('now'), { at: Date.now() - 1_000 });
      expect(await producer.counts()).toMatchObject({ delayed: 1, waiting: 1 });
    } finally {
      await producer.close();
    }
  });

  it('refuses a concurrency or capacity below 1, saying which bounds it got', () => {
    const count = 'must be a whole number from 1 to 9007199254740991 (Number.MAX_SAFE_INTEGER)';
    const bound = 'must be a whole number from 1, or Infinity for no bound';
    for (const [bounds, message] of [
      [{ concurrency: 0 }, `concurrency ${count}, got 0.`],
      [{ concurrency: 2.5 }, `concurrency ${count}, got 2.5.`],
      [{ capacity: 0 }, `capacity ${bound}, got 0.`],
      [{ capacity: Number.NaN }, `capacity ${bound}, got NaN.`],
    ] as const) {
      const error = thrown(() =>
        createRedisDeliveryQueue({ bullmq, connection: connection(), ...bounds }),
      );
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toBe(message);
    }
  });

  it('fails the calls with queue_unavailable, not the process, when Redis cannot be reached', async () => {
    const queue = createRedisDeliveryQueue({
      bullmq,
      // Nothing listens there, and the client gives up instead of reconnecting.
      connection: {
        host: '127.0.0.1',
        port: await freePort(),
        maxRetriesPerRequest: null,
        retryStrategy: () => null,
      },
      deliverer: createDeliverer({ secrets: () => [secret] }),
    });
    const failure = await queue.enqueue(job('unreachable')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isApiConventionsError(failure) && failure.code).toBe('queue_unavailable');
    expect(((failure as Error).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    expect(await queue.close()).toEqual([]);
  });

  it('survives killing the service: each delivery arrives at least once, with the same webhook-id', async () => {
    const run = `run${randomUUID().slice(0, 8)}`;
    const count = 12;
    const env = {
      ...process.env,
      REDIS_PORT: String(redis.port),
      REDIS_DB: String(redis.db),
      RECEIVER_URL: receiver.url,
      QUEUE_NAME: 'restart',
      SECRET: secret,
      RUN: run,
    };
    const start = (extra: Record<string, string>): ChildProcess =>
      spawn(
        process.execPath,
        ['--import', 'tsx', 'test/queue-redis/fixtures/delivery-service.ts'],
        {
          env: { ...env, ...extra },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
    const printed = (child: ChildProcess, line: string) =>
      new Promise<void>((resolve) => {
        let output = '';
        child.stdout!.setEncoding('utf8');
        child.stdout!.on('data', (chunk: string) => {
          output += chunk;
          if (output.includes(line)) resolve();
        });
      });
    // The receiver holds the first deliveries open: the service is killed in the middle of them.
    receiver.respond(() => undefined);
    const before = receiver.received.length;
    const first = start({ ENQUEUE: String(count) });
    await Promise.all([printed(first, 'enqueued'), receiver.waitFor(before + 2)]);
    first.kill('SIGKILL');
    await once(first, 'exit');

    receiver.respond(() => ({ status: 204 }));
    const second = start({});
    const ids = Array.from({ length: count }, (_, n) => `${run}-${n}`);
    const answered = () =>
      new Set(
        receiver.received
          .slice(before + 2)
          .map((d) => String(d.headers['webhook-id']))
          .filter((id) => id.startsWith(run)),
      );
    while (answered().size < count) await receiver.waitFor(receiver.received.length + 1);
    second.kill('SIGTERM');
    const [code] = await once(second, 'exit');
    expect(code).toBe(0);

    expect([...answered()].sort()).toEqual([...ids].sort());
    const got = receiver.received.slice(before);
    for (const d of got) {
      const headers = {
        'webhook-id': String(d.headers['webhook-id']),
        'webhook-timestamp': String(d.headers['webhook-timestamp']),
        'webhook-signature': String(d.headers['webhook-signature']),
      };
      // The body was stored with the job: every attempt carries the same bytes and id.
      expect(new Webhook(secret).verify(d.body, headers)).toEqual({
        n: Number(headers['webhook-id'].slice(run.length + 1)),
      });
    }
    // The two held when the process died arrived again under the same id.
    const held = got.slice(0, 2).map((d) => d.headers['webhook-id']);
    for (const id of held) {
      expect(got.filter((d) => d.headers['webhook-id'] === id).length).toBeGreaterThanOrEqual(2);
    }
  });
});

describe('createRedisDeliveryQueue (BullMQ): restarts, outages and hostile jobs', () => {
  const view = (name: string, prefix?: string) =>
    new bullmq.Queue(name, { connection: connection(), ...(prefix ? { prefix } : {}) });
  // Resolves with each report, in order, as the deliverer makes them.
  const recorder = () => {
    const reports: DeliveryAttempt[] = [];
    let waiters: Array<() => void> = [];
    return {
      reports,
      onAttempt: (a: DeliveryAttempt) => {
        reports.push(a);
        for (const wake of waiters) wake();
        waiters = [];
      },
      async until(ok: (reports: DeliveryAttempt[]) => boolean) {
        while (!ok(reports)) await new Promise<void>((wake) => waiters.push(wake));
      },
    };
  };
  const deliverer = (
    log: ReturnType<typeof recorder>,
    extra: Partial<Parameters<typeof createDeliverer>[0]> = {},
  ) =>
    createDeliverer({
      secrets: () => [secret],
      transport: httpTransport({ allow: ['127.0.0.1'] }),
      onAttempt: log.onAttempt,
      ...extra,
    });
  const hour = 3_600_000;

  it('keeps the jobs waiting for a retry across a restart of the service: a new queue on the same prefix delivers each once', async () => {
    const name = `service-restart-${randomUUID()}`;
    const prefix = 'restart';
    const ids = ['r0', 'r1', 'r2'];
    const log = recorder();
    receiver.respond(() => ({ status: 500 }));
    const first = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      prefix,
      deliverer: deliverer(log, { schedule: retrySchedule({ initialDelayMs: hour, jitter: 0 }) }),
    });
    for (const id of ids) await first.enqueue(job(id));
    await log.until((r) => r.length === ids.length);
    await first.close();
    expect(log.reports.map((r) => r.outcome)).toEqual(['retry', 'retry', 'retry']);

    const inspect = view(name, prefix);
    receiver.respond(() => ({ status: 204 }));
    const before = receiver.received.length;
    const second = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      prefix,
      deliverer: deliverer(log),
    });
    try {
      const delayed = await inspect.getDelayed();
      expect(delayed.map((j) => j.data.attempts)).toEqual([1, 1, 1]);
      // Their hour is up: made due now rather than waited for.
      for (const waiting of delayed) await waiting.promote();
      await log.until((r) => r.filter((a) => a.outcome === 'delivered').length === ids.length);
      expect(
        receiver.received
          .slice(before)
          .map((d) => d.headers['webhook-id'])
          .sort(),
      ).toEqual(ids);
      expect(log.reports.filter((a) => a.outcome === 'delivered').map((a) => a.attempt)).toEqual([
        2, 2, 2,
      ]);
      await second.close(); // waits for the attempts in flight
      expect(await inspect.getJobCounts('delayed', 'completed', 'failed')).toEqual({
        delayed: 0,
        completed: 3,
        failed: 0,
      });
    } finally {
      await Promise.all([second.close(), inspect.close()]);
    }
  });

  it('holds an enqueue while Redis is down, nothing unhandled, and delivers it and the next ones once Redis is back', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    const server = await RedisServer.start();
    const log = recorder();
    receiver.respond(() => ({ status: 204 }));
    const queue = createRedisDeliveryQueue({
      bullmq,
      // As the docs set it up, reconnecting quickly.
      connection: {
        host: '127.0.0.1',
        port: server.port,
        maxRetriesPerRequest: null,
        retryStrategy: () => 20,
      },
      name: `outage-${randomUUID()}`,
      deliverer: deliverer(log),
    });
    const delivered = () => log.reports.filter((a) => a.outcome === 'delivered').map((a) => a.id);
    try {
      await queue.enqueue(job('before'));
      await log.until(() => delivered().length === 1);
      await server.stop();
      let settled = false;
      const during = queue.enqueue(job('during')).finally(() => {
        settled = true;
      });
      await server.restart();
      await during;
      expect(settled).toBe(true);
      await queue.enqueue(job('after'));
      await log.until(() => delivered().length === 3);
      expect(delivered()).toEqual(['before', 'during', 'after']);
      expect(unhandled).toEqual([]);
    } finally {
      await queue.close();
      await server.stop();
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('rejects a job that Redis cannot hold as JSON with invalid_job, storing nothing', async () => {
    const name = `hostile-${randomUUID()}`;
    const queue = createRedisDeliveryQueue({ bullmq, connection: connection(), name });
    const circular: Record<string, unknown> = { ...job('circular') };
    circular.self = circular;
    const hostile: Record<string, unknown> = {
      bigint: { ...job('bigint'), attempts: 1n },
      circular,
      'a throwing getter': {
        ...job('x'),
        get id() {
          throw new Error('boom');
        },
      },
      null: null,
      'a throwing Proxy': new Proxy(
        {},
        {
          get() {
            throw new Error('trap');
          },
        },
      ),
    };
    try {
      for (const [what, input] of Object.entries(hostile)) {
        const error = await queue.enqueue(input as never).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isApiConventionsError(error) && error.code, what).toBe('invalid_job');
      }
      expect(await queue.counts()).toMatchObject({ waiting: 0, delayed: 0 });
    } finally {
      await queue.close();
    }
  });

  it("schedules a retry at the deliverer's time when the queue's clock returns NaN", async () => {
    const name = `nan-clock-${randomUUID()}`;
    const log = recorder();
    receiver.respond(() => ({ status: 500 }));
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      clock: { now: () => Number.NaN },
      deliverer: deliverer(log, { schedule: retrySchedule({ initialDelayMs: hour, jitter: 0 }) }),
    });
    const inspect = view(name);
    try {
      await queue.enqueue(job('nan'));
      await log.until((r) => r.length === 1);
      await queue.close();
      const [delayed] = await inspect.getDelayed();
      // Due in the hour the schedule says, not at once.
      expect(delayed?.delay).toBeGreaterThan(hour / 2);
      expect(log.reports.map((r) => r.outcome)).toEqual(['retry']);
    } finally {
      await Promise.all([queue.close(), inspect.close()]);
    }
  });

  it('keeps a retry due in the year 9999 waiting in Redis', async () => {
    const name = `far-${randomUUID()}`;
    const log = recorder();
    receiver.respond(() => ({
      status: 503,
      headers: { 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' },
    }));
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      deliverer: deliverer(log, {
        schedule: retrySchedule({
          maxAgeMs: Number.MAX_SAFE_INTEGER,
          maxDelayMs: Number.MAX_SAFE_INTEGER,
        }),
        // The receiver's pause bounded by the schedule alone: the date is honoured as given.
        maxEndpointPauseMs: Number.MAX_SAFE_INTEGER,
      }),
    });
    const inspect = view(name);
    try {
      await queue.enqueue(job('far'));
      await log.until((r) => r.length === 1);
      await queue.close();
      expect(log.reports[0]).toMatchObject({
        outcome: 'retry',
        nextAttemptAt: 253_402_300_799_000,
      });
      const [delayed] = await inspect.getDelayed();
      expect(delayed?.data.attempts).toBe(1);
      expect(await delayed?.getState()).toBe('delayed');
    } finally {
      await Promise.all([queue.close(), inspect.close()]);
    }
  });

  it('closes twice, refuses enqueue after close with queue_closed, and keeps an enqueue already under way', async () => {
    const name = `close-${randomUUID()}`;
    const queue = createRedisDeliveryQueue({ bullmq, connection: connection(), name });
    const inspect = view(name);
    try {
      // The same delivery enqueued at once several times is added once.
      await Promise.all(Array.from({ length: 5 }, () => queue.enqueue(job('twice'))));
      const underWay = queue.enqueue(job('under-way'));
      expect(await Promise.all([queue.close(), queue.close()])).toEqual([[], []]);
      await underWay;
      expect(await queue.close()).toEqual([]);
      const refused = await queue.enqueue(job('late')).then(
        () => 'accepted',
        (e: unknown) => (isApiConventionsError(e) ? e.code : 'other'),
      );
      expect(refused).toBe('queue_closed');
      expect(await inspect.getJobCounts('waiting')).toEqual({ waiting: 2 });
    } finally {
      await inspect.close();
    }
  });

  it('fails data that is no delivery job once as invalid_job, put there by another producer, and keeps nothing failed', async () => {
    const name = `foreign-${randomUUID()}`;
    const log = recorder();
    const inspect = view(name);
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      deliverer: deliverer(log),
    });
    try {
      await inspect.add('delivery', null);
      await inspect.add('delivery', { ...job('text'), attempts: 'one' });
      await log.until((r) => r.length >= 2);
      expect(log.reports.map((r) => [r.outcome, r.reason])).toEqual([
        ['failed', 'invalid_job'],
        ['failed', 'invalid_job'],
      ]);
      await queue.close();
      expect(await inspect.getJobCounts('completed', 'failed')).toEqual({
        completed: 2,
        failed: 0,
      });
    } finally {
      await Promise.all([queue.close(), inspect.close()]);
    }
  });

  it('reports a job whose deliverer broke its promise never to reject as lost, keeps it, and replays it once when two replay at once', async () => {
    const name = `rejecting-${randomUUID()}`;
    const lost: Array<{ id: string; code: string }> = [];
    const log = recorder();
    const real = deliverer(log);
    let broken = true;
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      deliverer: {
        attempt: (j) => (broken ? Promise.reject(new Error('broken')) : real.attempt(j)),
        lost: async (j, error) => {
          lost.push({ id: j.id, code: error.code });
          await real.lost!(j, error);
          // A deliverer's lost() that rejects must not become an unhandled rejection.
          throw new Error('log down');
        },
      },
    });
    const other = createRedisDeliveryQueue({ bullmq, connection: connection(), name });
    receiver.respond(() => ({ status: 204 }));
    try {
      for (const id of ['b0', 'b1', 'b2']) await queue.enqueue(job(id));
      await log.until((r) => r.length >= 3);
      expect(lost.map((l) => l.code)).toEqual(['queue_failed', 'queue_failed', 'queue_failed']);
      expect(log.reports.map((r) => [r.outcome, r.attempt, r.error?.message])).toEqual(
        ['b0', 'b1', 'b2'].map(() => [
          'lost',
          1,
          'broken; the job is kept in the failed set: replay it with retryFailed().',
        ]),
      );
      expect((await other.failed()).map((j) => [j.id, j.attempts]).sort()).toEqual([
        ['b0', 1],
        ['b1', 1],
        ['b2', 1],
      ]);
      broken = false;
      const replayed = await Promise.all([queue.retryFailed(), other.retryFailed()]);
      expect(replayed[0] + replayed[1]).toBe(3);
      await log.until((r) => r.filter((a) => a.outcome === 'delivered').length >= 3);
      expect(
        log.reports
          .filter((a) => a.outcome === 'delivered')
          .map((a) => [a.id, a.attempt])
          .sort(),
      ).toEqual([
        ['b0', 1],
        ['b1', 1],
        ['b2', 1],
      ]);
      await queue.close(); // waits for the attempts in flight
      expect(await other.counts()).toMatchObject({ failed: 0, completed: 3 });
    } finally {
      await Promise.all([queue.close(), other.close()]);
    }
  });

  it('tells onGone once when the receiver answers 410, and delivers the same message no more', async () => {
    const log = recorder();
    const gone: string[] = [];
    receiver.respond(() => ({ status: 410 }));
    const before = receiver.received.length;
    const name = `gone-${randomUUID()}`;
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      deliverer: deliverer(log, { onGone: (id) => void gone.push(id) }),
    });
    try {
      await queue.enqueue(job('gone'));
      await log.until((r) => r.length === 1);
      await queue.close(); // waits for the attempt in flight: the job is completed
    } finally {
      await queue.close();
    }
    const again = createRedisDeliveryQueue({ bullmq, connection: connection(), name });
    try {
      await again.enqueue(job('gone'));
      expect(await again.counts()).toMatchObject({ waiting: 0, delayed: 0, completed: 1 });
    } finally {
      await again.close();
    }
    expect(gone).toEqual(['sub:1']);
    expect(log.reports).toMatchObject([{ outcome: 'disabled', reason: 'gone', attempt: 1 }]);
    expect(receiver.received.length - before).toBe(1);
  });
});

// Each kill test runs with one delivery a BullMQ job and with several (the jobs of a run enqueued
// in one turn share a job): the guarantees are the same.
describe.each([1, 8])(
  'createRedisDeliveryQueue (BullMQ): repeated crashes, %i deliveries a job',
  (perJob) => {
    const count = 8;
    // One place every awaited event (a receiver hit, a report, a BullMQ event, an exit) wakes.
    const waiters: Array<() => void> = [];
    const wake = () => {
      for (const w of waiters.splice(0)) w();
    };
    const until = async (ok: () => boolean) => {
      while (!ok()) await new Promise<void>((w) => waiters.push(w));
    };
    // A test that fails or times out leaves no delivery process behind.
    const children: ChildProcess[] = [];
    afterEach(() => {
      for (const child of children.splice(0)) {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    });
    // A delivery process (the fixture) and the reports it printed.
    const service = (env: Record<string, string>) => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'test/queue-redis/fixtures/delivery-service.ts'],
        {
          env: {
            ...process.env,
            REDIS_PORT: String(redis.port),
            REDIS_DB: String(redis.db),
            RECEIVER_URL: receiver.url,
            SECRET: secret,
            DELIVERIES_PER_JOB: String(perJob),
            ...env,
          },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      children.push(child);
      const reports: DeliveryAttempt[] = [];
      const state = { ready: false };
      let rest = '';
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        for (const line of lines) {
          if (line.startsWith('report '))
            reports.push(JSON.parse(line.slice(7)) as DeliveryAttempt);
          if (line === 'ready') state.ready = true;
        }
        wake();
      });
      const exited = once(child, 'exit');
      void exited.then(wake);
      return { child, reports, exited, state };
    };
    const kill = async ({ child, exited }: ReturnType<typeof service>) => {
      child.kill('SIGKILL');
      await exited;
    };
    // Watches a queue: the jobs BullMQ failed, as its event stream tells them.
    const watch = async (name: string) => {
      const events = new bullmq.QueueEvents(name, { connection: connection() });
      const failed = new Set<string>();
      events.on('failed', ({ jobId }) => {
        failed.add(decodeURIComponent(jobId.split('|')[0]!));
        wake();
      });
      await events.waitUntilReady();
      return { events, failed };
    };
    // The ids that reached the receiver since index `from`.
    const arrived = (from: number) =>
      new Set(receiver.received.slice(from).map((d) => String(d.headers['webhook-id'])));
    const hold = () => {
      receiver.respond(() => {
        wake();
        return undefined; // held open: the process is killed in the middle of the attempt
      });
    };
    const answer = () => {
      receiver.respond(() => {
        wake();
        return { status: 204 };
      });
    };

    it.each([2, 3])(
      'delivers every job at least once, under its webhook-id, after %i kills of the delivering process during the same attempts',
      async (kills) => {
        const run = `crash${kills}-${randomUUID().slice(0, 8)}`;
        const name = `crashes-${run}`;
        const ids = Array.from({ length: count }, (_, n) => `${run}-${n}`);
        const { events, failed } = await watch(name);
        const env = { QUEUE_NAME: name, RUN: run, CONCURRENCY: String(count) };
        try {
          hold();
          let from = receiver.received.length;
          let current = service({ ...env, ENQUEUE: String(count) });
          for (let k = 1; k <= kills; k++) {
            // Every job not yet given up is in flight at the receiver, then the process dies.
            const start = from;
            await until(() => ids.every((id) => arrived(start).has(id) || failed.has(id)));
            await kill(current);
            from = receiver.received.length;
            if (k < kills) current = service(env);
          }
          answer();
          const last = service(env);
          const delivered = () =>
            new Set(last.reports.filter((r) => r.outcome === 'delivered').map((r) => r.id));
          await until(
            () => last.state.ready && ids.every((id) => delivered().has(id) || failed.has(id)),
          );
          const lost = ids.filter((id) => !delivered().has(id));
          expect(`${lost.length} of ${count} lost`).toBe(`0 of ${count} lost`);
          last.child.kill('SIGTERM');
          const [code] = await last.exited;
          expect(code).toBe(0);
          expect(failed.size).toBe(0);
          expect([...arrived(from)].sort()).toEqual([...ids].sort());
          // Each crashed attempt counts against the schedule: the one that succeeds is attempt
          // kills + 1 (more only if a run stalled again, which a loaded machine can cause).
          for (const r of last.reports) expect(r.attempt).toBeGreaterThanOrEqual(kills + 1);
          expect(Math.min(...last.reports.map((r) => r.attempt))).toBe(kills + 1);
          // With several a job, the run's deliveries shared one, taken again after each kill.
          const inspect = new bullmq.Queue(name, { connection: connection() });
          const shared = (await inspect.getCompleted()).filter((j) => j.name === 'deliveries');
          await inspect.close();
          expect(shared.length).toBe(perJob > 1 ? 1 : 0);
          for (const j of shared) expect(j.attemptsStarted).toBeGreaterThanOrEqual(kills + 1);
        } finally {
          await events.close();
        }
      },
      120_000,
    );

    it('gives up, without sending again, on a job whose every attempt of the schedule was lost in a crash', async () => {
      const run = `poison-${randomUUID().slice(0, 8)}`;
      const name = `crashes-${run}`;
      const ids = Array.from({ length: count }, (_, n) => `${run}-${n}`);
      const env = { QUEUE_NAME: name, RUN: run, CONCURRENCY: String(count), MAX_ATTEMPTS: '2' };
      hold();
      let from = receiver.received.length;
      let current = service({ ...env, ENQUEUE: String(count) });
      for (let k = 1; k <= 2; k++) {
        const start = from;
        await until(() => ids.every((id) => arrived(start).has(id)));
        await kill(current);
        from = receiver.received.length;
        current = service(env);
      }
      answer();
      await until(() => current.reports.length >= count);
      current.child.kill('SIGTERM');
      expect((await current.exited)[0]).toBe(0);
      expect(receiver.received.length - from).toBe(0);
      expect(current.reports.map((r) => [r.outcome, r.reason, r.error?.code])).toEqual(
        ids.map(() => ['failed', 'attempts_exhausted', 'not_attempted']),
      );
      // The two attempts lost in the kills (more only if a run stalled again on a loaded machine).
      for (const r of current.reports) expect(r.attempt).toBeGreaterThanOrEqual(2);
    }, 120_000);

    it('reports a job BullMQ gave up on as lost, keeps it with its payload, and delivers it once replayed', async () => {
      const run = `given-up-${randomUUID().slice(0, 8)}`;
      const name = `crashes-${run}`;
      const ids = Array.from({ length: count }, (_, n) => `${run}-${n}`);
      const { events, failed } = await watch(name);
      // BullMQ fails a job at its first stall.
      const env = { QUEUE_NAME: name, RUN: run, CONCURRENCY: String(count), MAX_STALLED: '0' };
      const queue = createRedisDeliveryQueue({ bullmq, connection: connection(), name });
      try {
        hold();
        const from = receiver.received.length;
        const first = service({ ...env, ENQUEUE: String(count) });
        await until(() => ids.every((id) => arrived(from).has(id)));
        await kill(first);
        answer();
        const second = service(env);
        const outcomes = (outcome: string) =>
          second.reports.filter((r) => r.outcome === outcome).map((r) => r.id);
        // One BullMQ job per delivery, or one for all of them.
        const jobs = perJob > 1 ? 1 : count;
        await until(() => outcomes('lost').length >= count && failed.size === jobs);
        expect(second.reports.filter((r) => r.outcome === 'lost')).toMatchObject(
          ids.map(() => ({ attempt: 1, error: { code: 'stalled' } })),
        );
        expect(await queue.counts()).toMatchObject({ failed: jobs, waiting: 0, active: 0 });
        const kept = await queue.failed();
        expect(kept.map((j) => j.id).sort()).toEqual([...ids].sort());
        expect(kept.map((j) => j.body).sort()).toEqual(
          ids.map((_, n) => JSON.stringify({ n })).sort(),
        );

        const replayedFrom = receiver.received.length;
        expect(await queue.retryFailed()).toBe(count);
        await until(() => outcomes('delivered').length >= count);
        expect([...arrived(replayedFrom)].sort()).toEqual([...ids].sort());
        expect(
          second.reports.filter((r) => r.outcome === 'delivered').map((r) => r.attempt),
        ).toEqual(ids.map(() => 1));
        expect(await queue.failed()).toEqual([]);
        await until(() => second.state.ready);
        second.child.kill('SIGTERM');
        expect((await second.exited)[0]).toBe(0);
      } finally {
        await Promise.all([queue.close(), events.close()]);
      }
    }, 120_000);

    it('writes nothing before an attempt, and counts one its process died in: a retry, a kill during attempt 2, then attempt 3', async () => {
      const run = `unwritten-${randomUUID().slice(0, 8)}`;
      const name = `crashes-${run}`;
      const id = `${run}-0`;
      const inspect = new bullmq.Queue(name, { connection: connection() });
      const stored = async () => (await inspect.getJob(`${id}|sub-1`))!;
      const env = { QUEUE_NAME: name, RUN: run };
      try {
        // A 500 (a retry, moved to Redis), then the request held open: the process dies in it.
        const answers: Array<{ status: number } | undefined> = [{ status: 500 }];
        receiver.respond(() => {
          wake();
          return answers.shift();
        });
        const from = receiver.received.length;
        const first = service({ ...env, ENQUEUE: '1' });
        await until(() => first.reports.length === 1);
        expect(first.reports.map((r) => [r.outcome, r.attempt])).toEqual([['retry', 1]]);
        // Its hour is up: made due now rather than waited for.
        await eventually('the retry delayed in Redis', async () => (await stored()).isDelayed());
        await (await stored()).promote();
        await until(() => receiver.received.length - from === 2);
        // In flight: taken twice by BullMQ, its data as the retry wrote it, nothing since.
        const held = await stored();
        expect(held.attemptsStarted).toBe(2);
        expect(held.data).toMatchObject({
          attempts: 1,
          startsCounted: 1,
          firstAttemptAt: first.reports[0]!.at,
        });
        await kill(first);
        answer();
        const second = service(env);
        await until(() => second.reports.length === 1);
        expect(second.reports.map((r) => [r.id, r.outcome, r.attempt])).toEqual([
          [id, 'delivered', 3],
        ]);
        second.child.kill('SIGTERM');
        expect((await second.exited)[0]).toBe(0);
      } finally {
        await inspect.close();
      }
    }, 120_000);

    /**
     * Two jobs of one account, a worker for it, in a process (`env` shapes it): one is attempted and
     * held open at the receiver; `whileHeld` checks the other, then the process is killed. A process
     * where the account's two jobs run side by side (after `beforeDelivery`) then delivers the
     * attempted one as attempt 2 (its attempt died with the process) and the other as attempt 1.
     */
    const twoJobsOfOneAccount = async (
      prefix: string,
      env: Record<string, string>,
      whileHeld: (other: string, stored: (id: string) => Promise<bullmq.Job>) => Promise<void>,
      beforeDelivery: (other: string, stored: (id: string) => Promise<bullmq.Job>) => Promise<void>,
    ) => {
      const run = `${prefix}-${randomUUID().slice(0, 8)}`;
      const name = `crashes-${run}`;
      const ids = [`${run}-0`, `${run}-1`];
      const inspect = new bullmq.Queue(name, { connection: connection() });
      // A delivery's job of its own: enqueued alone, or moved out of the job it shared.
      const stored = async (id: string) =>
        perJob === 1
          ? (await inspect.getJob(`${id}|sub-1`))!
          : (await inspect.getJobs(['delayed', 'waiting', 'active'])).find(
              (job) => job.name === 'delivery' && job.data.id === id,
            )!;
      const shaped = {
        QUEUE_NAME: name,
        RUN: run,
        ACCOUNT: 'acme',
        ...env,
        ACCOUNT_CONCURRENCY: '1',
      };
      try {
        hold();
        const from = receiver.received.length;
        const first = service({ ...shaped, ENQUEUE: '2' });
        await until(() => receiver.received.length > from);
        const attempted = String(receiver.received[from]!.headers['webhook-id']);
        const other = ids.find((id) => id !== attempted)!;
        await whileHeld(other, stored);
        await kill(first);
        answer();
        const second = service({ ...shaped, ACCOUNT_CONCURRENCY: '2' });
        await beforeDelivery(other, stored);
        const delivered = () => second.reports.filter((r) => r.outcome === 'delivered');
        await until(() => delivered().length === 2);
        expect(
          delivered()
            .map((r) => [r.id, r.attempt])
            .sort(),
        ).toEqual(
          [
            [attempted, 2],
            [other, 1],
          ].sort(),
        );
        expect(receiver.received.length - from).toBe(3);
        second.child.kill('SIGTERM');
        expect((await second.exited)[0]).toBe(0);
      } finally {
        await inspect.close();
      }
    };

    it.runIf(perJob === 1)(
      'counts no attempt for the times an account at its share put a job back, across a kill of the process',
      async () => {
        // No room to wait (2 workers, a share of 1): the other job is put back a minute each time it
        // is taken.
        await twoJobsOfOneAccount(
          'deferred',
          { ACCOUNT_DEFER_MS: '60000' },
          async (deferred, stored) => {
            // Taken three times, put back each time: made due again rather than waited for.
            for (let taken = 1; taken <= 3; taken++) {
              // Delayed first, then read: the record lands before the move.
              const job = await eventually(`taking ${taken} put back`, async () => {
                if (!(await (await stored(deferred)).isDelayed())) return false;
                const job = await stored(deferred);
                return job.attemptsStarted === taken && job;
              });
              expect(job.data).toMatchObject({ attempts: 0, startsCounted: taken });
              if (taken < 3) await job.promote();
            }
          },
          async (deferred, stored) => (await stored(deferred)).promote(),
        );
      },
      120_000,
    );

    it.runIf(perJob === 1)(
      'counts no attempt for a job that waited in the process for its account’s worker when the process was killed',
      async () => {
        // Room for one more of the account's jobs to wait (4 workers, a share of 1), longer than the
        // test: the other job waits in the process.
        await twoJobsOfOneAccount(
          'waiting',
          { CONCURRENCY: '4', ACCOUNT_DEFER_MS: '60000' },
          async (waiting, stored) => {
            const job = await eventually('the other job waits in the process', async () => {
              const job = await stored(waiting);
              return (await job.isActive()) && job.data.startsCounted === 1 && job;
            });
            expect(job.attemptsStarted).toBe(1);
            expect(job.data).toMatchObject({ attempts: 0 });
          },
          async () => undefined,
        );
      },
      120_000,
    );

    it.runIf(perJob > 1)(
      'counts no attempt for a delivery that waited in its shared job for its account’s worker when the process was killed',
      async () => {
        // One worker for the account, a wait longer than the test: the other delivery of the shared
        // job waits in the process, its wait marked in its marker.
        const markers = new Redis(connection());
        try {
          await twoJobsOfOneAccount(
            'waiting-shared',
            { CONCURRENCY: '2', ACCOUNT_DEFER_MS: '60000' },
            async (waiting) => {
              const name = `crashes-${waiting.slice(0, waiting.lastIndexOf('-'))}`;
              const key = `bull:${name}:held:${encodeURIComponent(waiting)}|sub-1`;
              const value = await eventually('the wait marked', async () => {
                const value = await markers.get(key);
                return value?.endsWith('#1') && value;
              });
              expect(value).toMatch(/^b\|[0-9a-f-]+#1$/);
            },
            async () => undefined,
          );
        } finally {
          markers.disconnect();
        }
      },
      120_000,
    );

    it.runIf(perJob > 1)(
      'counts no attempt for a delivery its account’s share moved out of its shared job, then put back, across a kill of the process',
      async () => {
        // One worker for the account, a short wait: the other delivery moves to a job of its own,
        // which is put back each time it is taken while the account's worker is busy.
        await twoJobsOfOneAccount(
          'deferred-shared',
          { CONCURRENCY: '2', ACCOUNT_DEFER_MS: '200' },
          async (deferred, stored) => {
            const job = await eventually('moved out, and put back twice', async () => {
              const job = await stored(deferred);
              if (job === undefined || job.attemptsStarted < 2 || !(await job.isDelayed()))
                return false;
              return job.data.startsCounted === job.attemptsStarted && job;
            });
            expect(String(job.id)).toMatch(/^b\|[0-9a-f-]+>/);
            expect(job.data).toMatchObject({ attempts: 0, marked: true });
          },
          async () => undefined,
        );
      },
      120_000,
    );

    it('refuses worker options BullMQ would throw on or take silently, saying which it got', () => {
      const ms = 'must be a whole number from 1 to 9007199254740991 (Number.MAX_SAFE_INTEGER)';
      const count = 'must be a whole number from 0 to 9007199254740991 (Number.MAX_SAFE_INTEGER)';
      for (const [workerOptions, message] of [
        [{ lockDuration: 0 }, `workerOptions.lockDuration ${ms}, got 0.`],
        [{ stalledInterval: 2.5 }, `workerOptions.stalledInterval ${ms}, got 2.5.`],
        [{ maxStalledCount: -1 }, `workerOptions.maxStalledCount ${count}, got -1.`],
        [{ maxStalledCount: Number.NaN }, `workerOptions.maxStalledCount ${count}, got NaN.`],
        [null, 'workerOptions must be an object such as { lockDuration: 30_000 }, got null.'],
        [[], 'workerOptions must be an object such as { lockDuration: 30_000 }, got an array.'],
        [
          { lockDuraton: 30_000 },
          'workerOptions has no option "lockDuraton"; did you mean "lockDuration"? Its options are lockDuration, stalledInterval, maxStalledCount.',
        ],
      ] as const) {
        const error = thrown(() =>
          createRedisDeliveryQueue({
            bullmq,
            connection: connection(),
            workerOptions: workerOptions as never,
          }),
        );
        expect(isConfigurationError(error) && error.code).toBe('invalid_option');
        expect((error as Error).message).toBe(message);
      }
    });

    it('refuses a connection that is no object, in the one wording', () => {
      const expected =
        'connection must be ioredis options such as { host, port, maxRetriesPerRequest: null }, or an ioredis instance';
      for (const [given, got] of [
        ['redis://127.0.0.1:6379', '"redis://127.0.0.1:6379"'],
        [null, 'null'],
        [[], 'an array'],
        [6379, '6379'],
        [undefined, 'undefined'],
      ] as const) {
        const error = thrown(() =>
          createRedisDeliveryQueue({ bullmq, connection: given as never }),
        );
        expect(isConfigurationError(error) && error.code).toBe('invalid_option');
        expect((error as Error).message).toBe(`${expected}, got ${got}.`);
      }
    });
  },
);
