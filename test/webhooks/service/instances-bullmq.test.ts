/**
 * A delivery that waits in BullMQ across a restart of the webhook service: real processes
 * (test/support/webhook-instance.ts with `REDIS_URL`) on a real PostgreSQL and a real redis-server,
 * delivering to a real receiver.
 *
 * The receiver answers the first attempt 503 with `Retry-After: 2`, so the job waits in BullMQ's
 * delayed set; the instance is killed (SIGKILL) while it waits, and started again (a new process,
 * the same database and Redis) only once the retry is due, so that the new worker takes the job as
 * soon as it runs, and the service loads its index only after that (as behind a long load at
 * start; without that order a small index loads first and the race never shows). The retry must be signed
 * with the secret shown at create, under the message's `webhook-id`, and logged; a job whose
 * subscription was deleted meanwhile must reach nobody, and be logged as `no_secret`.
 */
import { randomBytes } from 'node:crypto';
import * as bullmq from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryJob } from '../../../src/index.js';
import { verifyWebhook } from '../../../src/index.js';
import { eventually } from '../../support/eventually.js';
import { type InstanceProcess, InstanceProcesses } from '../../support/instance-process.js';
import { type SharedPostgres, sharedPostgres } from '../../support/shared-postgres.js';
import { type SharedRedis, sharedRedis } from '../../support/shared-redis.js';
import {
  type ReceivedDelivery,
  startReceiver,
  type WebhookReceiver,
} from '../../support/webhook-receiver.js';

const SCHEMA = 'bullmq_restart';
const SECRET_KEY = randomBytes(32).toString('base64');
/** createRedisDeliveryQueue's default name, which the instance uses. */
const QUEUE_NAME = 'webhook-deliveries';
/** The receiver's `Retry-After` on the first attempt, in seconds. */
const RETRY_AFTER_S = 2;

const processes = new InstanceProcesses();
let postgres: SharedPostgres | undefined;
let redis: SharedRedis | undefined;
let receiver: WebhookReceiver | undefined;
/** The test's view of the instance's queue: it inspects jobs, it runs none (no worker). */
let inspector: bullmq.Queue<DeliveryJob> | undefined;
let a: InstanceProcess;

const env = (more: Record<string, string> = {}): Record<string, string> => ({
  ...more,
  DATABASE_URL: (postgres as SharedPostgres).url,
  SCHEMA,
  SECRET_KEY,
  REDIS_URL: `redis://127.0.0.1:${(redis as SharedRedis).port}/${(redis as SharedRedis).db}`,
});

beforeAll(async () => {
  [postgres, redis, receiver] = await Promise.all([
    sharedPostgres(),
    sharedRedis(),
    startReceiver(),
  ]);
  inspector = new bullmq.Queue<DeliveryJob>(QUEUE_NAME, {
    connection: { host: '127.0.0.1', port: redis.port, db: redis.db, maxRetriesPerRequest: null },
  });
  inspector.on('error', () => undefined);
  a = await processes.start('A', env());
});

afterAll(async () => {
  // Each step runs whatever the one before did.
  try {
    await processes.stopAll();
  } finally {
    try {
      await inspector?.close();
      await receiver?.close();
      await redis?.release();
    } finally {
      await postgres?.release();
    }
  }
});

/** Poll `check` until it gives a value (see `eventually`), saying `what` was awaited. */
const until = <T>(what: string, check: () => Promise<T | undefined>): Promise<T> =>
  eventually(what, check, 10);

/** The requests the receiver got for message `id`, in order. */
const requestsOf = (id: string): ReceivedDelivery[] =>
  (receiver as WebhookReceiver).received.filter((d) => d.headers['webhook-id'] === id);

/** The account's delivery log once it holds at least `count` attempts, oldest first. */
async function logOf(on: InstanceProcess, account: string, count: number) {
  return until(`the log of ${account} holding ${count} attempts`, async () => {
    const log = await on.call('GET', '/v1/audit-logs', { account });
    expect(log.status).toBe(200);
    // biome-ignore lint/suspicious/noExplicitAny: the audit log's parsed JSON items
    const items: any[] = log.body.items;
    // The audit log is newest first.
    return items.length >= count ? items.reverse() : undefined;
  });
}

/** The BullMQ job of message `id` (one subscription per message here), once it is in `state`. */
async function jobIn(state: 'delayed' | 'completed', id: string): Promise<bullmq.Job<DeliveryJob>> {
  const queue = inspector as bullmq.Queue<DeliveryJob>;
  return until(`the job of message ${id} ${state}`, async () => {
    const jobs = state === 'delayed' ? await queue.getDelayed() : await queue.getCompleted();
    return jobs.find((job) => job.data.id === id);
  });
}

/**
 * Create a subscription on A, have the receiver refuse the first attempt with 503 and
 * `Retry-After`, publish one event, and wait until the job waits in BullMQ's delayed set.
 */
async function deliveryWaitingForRetry(account: string) {
  const target = receiver as WebhookReceiver;
  target.respond(() => ({ status: 503, headers: { 'retry-after': String(RETRY_AFTER_S) } }));
  const created = await a.call('POST', '/v1/subscriptions', {
    account,
    body: { endpointUrl: `${target.url}/${account}`, events: ['reservation/*'] },
  });
  expect(created.status).toBe(201);
  const subscription = created.body;
  const published = await a.publish({
    accountCode: account,
    kind: 'reservation/created',
    data: { reservation: 'R1' },
  });
  expect(published.deliveries).toEqual([subscription.id]);
  const { id } = published;
  const waiting = await jobIn('delayed', id);
  expect(waiting.data).toMatchObject({ id, subscriptionId: subscription.id, attempts: 1 });
  // The first attempt reached the receiver, was refused, and is in the log with its retry time.
  expect(requestsOf(id)).toHaveLength(1);
  const [first] = await logOf(a, account, 1);
  expect(first).toMatchObject({
    id,
    subscriptionId: subscription.id,
    attempt: 1,
    status: 503,
    outcome: 'retry',
  });
  expect(first.nextAttemptAt - first.at).toBe(RETRY_AFTER_S * 1000);
  return { subscription, id, dueAt: first.nextAttemptAt as number };
}

/**
 * Kill A while its job waits, let the receiver accept, and start A again once the retry is due:
 * the new process's worker takes the job as soon as it runs, and its service starts loading the
 * index only then (START_AFTER_FIRST_JOB): the attempt must wait for it.
 */
async function killAndRestartWhenDue(dueAt: number): Promise<void> {
  expect(await a.stop('SIGKILL')).toBeNull();
  (receiver as WebhookReceiver).respond(() => ({ status: 204 }));
  await until('the retry due', async () => (Date.now() > dueAt ? true : undefined));
  // Its worker takes the due job before its service loads the index, as behind a long load.
  a = await processes.start('A', env({ START_AFTER_FIRST_JOB: '1' }));
}

describe('a delivery waiting in BullMQ across a restart (SIGKILL) of the webhook service', () => {
  it('is delivered after the restart, signed with the secret shown at create, under the message’s webhook-id, and both attempts are in the log', async () => {
    const account = 'K1';
    const { subscription, id, dueAt } = await deliveryWaitingForRetry(account);
    await killAndRestartWhenDue(dueAt);

    const log = await logOf(a, account, 2);
    // Signed and sent, not failed as no_secret by a worker that ran before the index was loaded.
    expect(log).toHaveLength(2);
    expect(log[1]).toMatchObject({
      id,
      subscriptionId: subscription.id,
      attempt: 2,
      status: 204,
      outcome: 'delivered',
    });
    const received = requestsOf(id);
    expect(received).toHaveLength(2);
    const retried = received[1] as ReceivedDelivery;
    expect(retried.path).toBe(`/${account}`);
    expect(retried.headers['webhook-id']).toBe(id);
    expect(verifyWebhook(retried.body, retried.headers, { secrets: subscription.secret })).toEqual(
      expect.objectContaining({ ok: true }),
    );
    // The same message both times: the body the receiver was refused is the body it got.
    expect(retried.body).toBe((received[0] as ReceivedDelivery).body);
    expect(JSON.parse(retried.body)).toMatchObject({ id, accountId: account });

    // Not sooner than the receiver asked.
    expect(log[1].at).toBeGreaterThanOrEqual(log[0].nextAttemptAt);
    expect((await jobIn('completed', id)).returnvalue).toBe('delivered');
    expect(await a.errors()).toEqual([]);
  });

  it('a subscription deleted while its job waits: after the restart nothing reaches the receiver, and the log shows the attempt as no_secret', async () => {
    const account = 'K2';
    const { subscription, id, dueAt } = await deliveryWaitingForRetry(account);
    const deleted = await a.call('DELETE', `/v1/subscriptions/${subscription.id}`, { account });
    expect(deleted.status).toBe(204);
    await killAndRestartWhenDue(dueAt);

    const log = await logOf(a, account, 2);
    expect(log).toHaveLength(2);
    expect(log[1]).toMatchObject({
      id,
      subscriptionId: subscription.id,
      attempt: 2,
      outcome: 'failed',
      reason: 'no_secret',
    });
    expect(log[1].status).toBeUndefined();
    // The job is done with: no attempt follows, and the receiver got only the first one.
    expect((await jobIn('completed', id)).returnvalue).toBe('failed');
    expect(requestsOf(id)).toHaveLength(1);
    expect(await a.errors()).toEqual([]);
  });
});
