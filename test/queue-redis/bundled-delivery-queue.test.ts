/**
 * The Redis queue with several deliveries in one BullMQ job (`deliveriesPerJob`), on a real
 * redis-server: the deliveries of a turn share a job, each is attempted by the one job its marker
 * names, a retry moves to a job of its own, and a job taken again skips what left it. The kill
 * tests of redis-delivery-queue.test.ts run in this mode too.
 */
import { randomUUID } from 'node:crypto';
import * as bullmq from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeliverer,
  type DeliveryAttempt,
  type DeliveryJob,
  generateWebhookSecret,
  httpTransport,
  isApiConventionsError,
  isConfigurationError,
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
let keys: Redis;
beforeAll(async () => {
  [redis, receiver] = await Promise.all([sharedRedis(), startReceiver()]);
  keys = new Redis({ host: '127.0.0.1', port: redis.port, db: redis.db });
});
afterAll(async () => {
  keys.disconnect();
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
const job = (id: string): DeliveryJob => ({
  id,
  subscriptionId: 'sub:1',
  endpointUrl: `${receiver.url}/in`,
  body: `{"id":"${id}"}`,
  attempts: 0,
});
/** The marker of a delivery: which job holds it (the delivery's own job id, percent-encoded). */
const marker = (name: string, id: string) =>
  `bull:${name}:held:${encodeURIComponent(id)}|${encodeURIComponent('sub:1')}`;
const markers = (name: string) => keys.keys(`bull:${name}:held:*`);

/** The deliverer's reports, and a way to wait for them. */
function recorder() {
  const reports: DeliveryAttempt[] = [];
  return {
    reports,
    onAttempt: (attempt: DeliveryAttempt) => {
      reports.push(attempt);
    },
    until: (ok: (reports: DeliveryAttempt[]) => boolean, what: string) =>
      eventually(what, async () => ok(reports)),
  };
}
const deliverer = (log: ReturnType<typeof recorder>) =>
  createDeliverer({
    secrets: () => [secret],
    transport: httpTransport({ allow: ['127.0.0.1'] }),
    onAttempt: log.onAttempt,
  });
/** A queue of eight deliveries a job named `name`, its worker's reports in `log`. */
const working = (name: string, log: ReturnType<typeof recorder>) =>
  createRedisDeliveryQueue({
    bullmq,
    connection: connection(),
    name,
    deliverer: deliverer(log),
    deliveriesPerJob: 8,
  });
/** The webhook-ids of the requests the receiver got since `from` for run `run`. */
const arrivedIds = (from: number, run: string) =>
  receiver.received
    .slice(from)
    .map((d) => String(d.headers['webhook-id']))
    .filter((id) => id.startsWith(run));

describe('createRedisDeliveryQueue with several deliveries a job', () => {
  it('puts the deliveries of one turn in one job, attempts each once, never one enqueued again while held, and leaves no marker', async () => {
    const name = `bundled-${randomUUID()}`;
    const run = `turn-${randomUUID().slice(0, 8)}`;
    const log = recorder();
    receiver.respond(() => ({ status: 204 }));
    const from = receiver.received.length;
    // The attempts wait for the gate: the deliveries are held by the queue until it opens.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const real = deliverer(log);
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      deliverer: { attempt: async (j) => gate.then(() => real.attempt(j)) },
      concurrency: 8,
      deliveriesPerJob: 8,
    });
    const inspect = new bullmq.Queue(name, { connection: connection() });
    try {
      const ids = Array.from({ length: 8 }, (_, n) => `${run}-${n}`);
      // One turn: eight deliveries, and the first of them a second time.
      await Promise.all([...ids, ids[0]!].map((id) => queue.enqueue(job(id))));
      // Enqueued again while the queue holds it, alone and in a turn with a new one.
      await queue.enqueue(job(ids[1]!));
      await Promise.all([queue.enqueue(job(ids[2]!)), queue.enqueue(job(`${run}-last`))]);
      open();
      await log.until((r) => r.length >= 9, 'nine deliveries');

      expect(arrivedIds(from, run).sort()).toEqual([...ids, `${run}-last`].sort());
      expect(log.reports.map((r) => [r.outcome, r.attempt])).toEqual(
        log.reports.map(() => ['delivered', 1]),
      );
      // A job completes once its deliveries' attempts are done and recorded.
      const completed = await eventually('both shared jobs completed', async () => {
        const jobs = await inspect.getCompleted();
        return jobs.filter((j) => j.name === 'deliveries').length === 2 && jobs;
      });
      const shared = completed.filter((j) => j.name === 'deliveries');
      expect(
        shared.map((j) => (j.data.deliveries as DeliveryJob[]).map((d) => d.id)).sort(),
      ).toEqual([ids, [ids[2], `${run}-last`]]);
      expect(shared.map((j) => j.returnvalue)).toEqual(['finished', 'finished']);
      // The one enqueued again alone: a job of its own, which its marker kept from attempting it
      // (as it kept the second shared job from attempting the other one enqueued again).
      const alone = completed.find((j) => j.name === 'delivery');
      expect([alone?.data.id, alone?.returnvalue]).toEqual([ids[1], 'held_elsewhere']);
      await eventually('no marker left', async () => (await markers(name)).length === 0);
    } finally {
      await queue.close();
      await inspect.close();
    }
  });

  it('gives an attempt slot to the next request once a request has ended, while the record is written, and completes the job once every record is', async () => {
    const name = `slots-${randomUUID()}`;
    const started: string[] = [];
    // Every record waits for the gate: each attempt's request has ended, its record not written.
    let open: () => void = () => undefined;
    const records = new Promise<void>((resolve) => {
      open = resolve;
    });
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      deliverer: {
        attempt: async (j, options) => {
          started.push(j.id);
          options?.requestEnded?.();
          await records;
          const report = { ...j, attempt: 1, at: Date.now(), outcome: 'delivered' as const };
          return { done: true, report };
        },
      },
      concurrency: 1,
      deliveriesPerJob: 8,
    });
    const inspect = new bullmq.Queue(name, { connection: connection() });
    try {
      const ids = ['a', 'b', 'c'].map((n) => `${name}-${n}`);
      await Promise.all(ids.map((id) => queue.enqueue(job(id))));
      // One worker: the three requests one after the other, none waiting for a record.
      await eventually('three requests made', async () => started.length === 3);
      expect([...started].sort()).toEqual(ids);
      expect(await inspect.getJobCounts('active', 'completed')).toEqual({
        active: 1,
        completed: 0,
      });
      open();
      await eventually('the job completed', async () => {
        const counts = await inspect.getJobCounts('active', 'completed');
        return counts.active === 0 && counts.completed === 1;
      });
      expect(
        await eventually('no marker left', async () => (await markers(name)).length === 0),
      ).toBe(true);
    } finally {
      open();
      await queue.close();
      await inspect.obliterate({ force: true });
      await inspect.close();
    }
  });

  it('moves a delivery that needs a retry to a job of its own, due at its time, its marker with it, and delivers it as attempt 2', async () => {
    const name = `bundled-retry-${randomUUID()}`;
    const run = `retry-${randomUUID().slice(0, 8)}`;
    const ids = [`${run}-0`, `${run}-1`, `${run}-2`];
    const log = recorder();
    receiver.respond((d) =>
      d.headers['webhook-id'] === ids[1] && log.reports.length < 3
        ? { status: 500 }
        : { status: 204 },
    );
    const queue = working(name, log);
    const inspect = new bullmq.Queue(name, { connection: connection() });
    try {
      await Promise.all(ids.map((id) => queue.enqueue(job(id))));
      await log.until((r) => r.length >= 3, 'the first attempts');
      const shared = await eventually('the shared job completed', async () =>
        (await inspect.getCompleted()).find((j) => j.name === 'deliveries'),
      );
      const moved = await eventually('the retry delayed in Redis', async () => {
        const [delayed] = await inspect.getDelayed();
        return delayed !== undefined && delayed;
      });
      expect(moved.id).toBe(`${shared.id}>${encodeURIComponent(ids[1]!)}|sub%3A1`);
      expect(moved.data).toMatchObject({ id: ids[1], attempts: 1, startsCounted: 0 });
      expect(await keys.get(marker(name, ids[1]!))).toBe(moved.id);
      expect(log.reports.find((r) => r.id === ids[1])).toMatchObject({ outcome: 'retry' });

      await moved.promote();
      await log.until((r) => r.length >= 4, 'the retry');
      expect(log.reports.at(-1)).toMatchObject({ id: ids[1], outcome: 'delivered', attempt: 2 });
      await eventually('no marker left', async () => (await markers(name)).length === 0);
    } finally {
      await queue.close();
      await inspect.close();
    }
  });

  it('skips, in a job taken again, a delivery that finished and one whose job of its own was added before its marker was handed over', async () => {
    const name = `bundled-retaken-${randomUUID()}`;
    const run = `retaken-${randomUUID().slice(0, 8)}`;
    const [finished, moved, left] = [`${run}-finished`, `${run}-moved`, `${run}-left`];
    const owner = 'b|crashed';
    const movedId = `${owner}>${encodeURIComponent(moved)}|sub%3A1`;
    // What a process left when it died: one delivery finished (its marker says so), one moved to
    // a job of its own (added, its marker not yet handed over), one not attempted.
    const producer = new bullmq.Queue(name, { connection: connection() });
    await producer.add(
      'delivery',
      { ...job(moved), attempts: 1, startsCounted: 0 },
      {
        jobId: movedId,
        delay: 3_600_000,
      },
    );
    await keys.set(marker(name, finished), `done>${owner}`);
    await keys.set(marker(name, moved), owner);
    await keys.set(marker(name, left), owner);
    await producer.add(
      'deliveries',
      { deliveries: [job(finished), job(moved), job(left)], replayed: true },
      { jobId: owner },
    );
    const log = recorder();
    receiver.respond(() => ({ status: 204 }));
    const from = receiver.received.length;
    const queue = working(name, log);
    try {
      await log.until((r) => r.length >= 1, 'the delivery left');
      await eventually('the job completed', async () => (await producer.getCompletedCount()) === 1);
      expect(log.reports.map((r) => [r.id, r.outcome])).toEqual([[left, 'delivered']]);
      expect(arrivedIds(from, run)).toEqual([left]);
      expect(await keys.get(marker(name, moved))).toBe(movedId);
      // The finished marker goes once the job completes; the moved one stays with its job.
      await eventually('finished markers released', async () => (await markers(name)).length === 1);
      expect(await producer.getDelayedCount()).toBe(1);
    } finally {
      await queue.close();
      await producer.close();
    }
  });

  it('takes over a marker whose job was never added (its process died between the two), and delivers the delivery once', async () => {
    const name = `bundled-orphan-${randomUUID()}`;
    const run = `orphan-${randomUUID().slice(0, 8)}`;
    const [orphaned, fresh] = [`${run}-orphaned`, `${run}-fresh`];
    await keys.set(marker(name, orphaned), 'b|never-added');
    const log = recorder();
    receiver.respond(() => ({ status: 204 }));
    const from = receiver.received.length;
    const queue = working(name, log);
    try {
      await Promise.all([queue.enqueue(job(orphaned)), queue.enqueue(job(fresh))]);
      await log.until((r) => r.length >= 2, 'both delivered');
      expect(arrivedIds(from, run).sort()).toEqual([fresh, orphaned].sort());
      await eventually('no marker left', async () => (await markers(name)).length === 0);
    } finally {
      await queue.close();
    }
  });

  it('adds a delivery enqueued for later as a job of its own, held by its marker', async () => {
    const name = `bundled-later-${randomUUID()}`;
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: connection(),
      name,
      deliveriesPerJob: 4,
    });
    const inspect = new bullmq.Queue(name, { connection: connection() });
    try {
      await queue.enqueue(job('later'), { at: Date.now() + 3_600_000 });
      // The same delivery in a turn with another: the marker keeps it out of the shared job's work.
      await Promise.all([queue.enqueue(job('later')), queue.enqueue(job('other'))]);
      const [delayed] = await inspect.getDelayed();
      expect(delayed!.id).toBe(`later|sub%3A1`);
      expect(await keys.get(marker(name, 'later'))).toBe(delayed!.id);
      const [shared] = await inspect.getWaiting();
      expect(shared!.name).toBe('deliveries');
      expect(await keys.get(marker(name, 'other'))).toBe(shared!.id);
    } finally {
      await queue.close();
      await inspect.close();
    }
  });

  it('fails a job of several whose data is no list of deliveries, and each member that is no delivery, as invalid_job, and attempts no member its marker does not name', async () => {
    const name = `bundled-foreign-${randomUUID()}`;
    const run = `foreign-${randomUUID().slice(0, 8)}`;
    const producer = new bullmq.Queue(name, { connection: connection() });
    const log = recorder();
    const from = receiver.received.length;
    const queue = working(name, log);
    try {
      // Put there by another producer, not through enqueue: no marker names these jobs.
      await producer.add('deliveries', { deliveries: 'none' });
      await producer.add('deliveries', null);
      await producer.add('deliveries', { deliveries: [42, null, job(`${run}-unmarked`)] });
      await eventually(
        'every job completed',
        async () => (await producer.getCompletedCount()) === 3,
      );
      expect(log.reports.map((r) => [r.outcome, r.reason])).toEqual(
        Array.from({ length: 4 }, () => ['failed', 'invalid_job']),
      );
      // A delivery only the queue's own enqueue holds is attempted: this one is another job's
      // as far as the queue can tell.
      expect(arrivedIds(from, run)).toEqual([]);
      expect(await producer.getFailedCount()).toBe(0);
    } finally {
      await queue.close();
      await producer.close();
    }
  });

  it('keeps working when Redis forgets its scripts (a restart, SCRIPT FLUSH): the marker scripts are sent again', async () => {
    // A server of its own: flushing the scripts of the shared one would touch other files' queues.
    const server = await RedisServer.start();
    const name = `bundled-noscript-${randomUUID()}`;
    const run = `noscript-${randomUUID().slice(0, 8)}`;
    const admin = new Redis({ host: '127.0.0.1', port: server.port });
    const log = recorder();
    receiver.respond(() => ({ status: 204 }));
    const from = receiver.received.length;
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null },
      name,
      deliverer: deliverer(log),
      deliveriesPerJob: 8,
    });
    try {
      const ids = (round: number) => [0, 1, 2].map((n) => `${run}-${round}-${n}`);
      await Promise.all(ids(1).map((id) => queue.enqueue(job(id))));
      await log.until((r) => r.length >= 3, 'the first turn');
      await admin.script('FLUSH');
      await Promise.all(ids(2).map((id) => queue.enqueue(job(id))));
      await log.until((r) => r.length >= 6, 'the turn after the flush');
      expect(arrivedIds(from, run).sort()).toEqual([...ids(1), ...ids(2)].sort());
      await eventually(
        'no marker left',
        async () => (await admin.keys(`bull:${name}:held:*`)).length === 0,
      );
    } finally {
      await queue.close();
      admin.disconnect();
      await server.stop();
    }
  });

  it('refuses deliveriesPerJob outside 1 to 64, saying which it got', () => {
    const bound = 'must be a whole number from 1 to 64';
    for (const value of [0, 65, 2.5, '8']) {
      const error = thrown(() =>
        createRedisDeliveryQueue({
          bullmq,
          connection: connection(),
          deliveriesPerJob: value as number,
        }),
      );
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toContain(`deliveriesPerJob ${bound}`);
    }
  });

  it('fails every enqueue of a turn with queue_unavailable, not the process, when Redis cannot be reached', async () => {
    const queue = createRedisDeliveryQueue({
      bullmq,
      connection: {
        host: '127.0.0.1',
        port: await freePort(),
        maxRetriesPerRequest: null,
        retryStrategy: () => null,
      },
      deliveriesPerJob: 8,
    });
    const failures = await Promise.all(
      ['a', 'b', 'c'].map((id) =>
        queue.enqueue(job(id)).then(
          () => undefined,
          (e: unknown) => e,
        ),
      ),
    );
    for (const failure of failures) {
      expect(isApiConventionsError(failure) && failure.code).toBe('queue_unavailable');
    }
    expect(await queue.close()).toEqual([]);
  });
});
