/**
 * No delivery is lost when webhook service processes are killed: real processes
 * (test/support/webhook-instance.ts) delivering through BullMQ on a real redis-server, on a real
 * PostgreSQL, killed with SIGKILL while attempts are in the receiver's hands, more wait in the
 * queue and publishes are under way, then started again on the same database and Redis: one
 * instance killed once; two at once, killed three times in turn while the other keeps running (with
 * one delivery a BullMQ job, and with several); and two, one killed and never started again while
 * the other finishes its work. Every message
 * published reaches every subscription it matches at least once, and none other; every copy of a
 * message carries the webhook-id publish answered and the same body, signed with the secret shown
 * at create. The scenarios are in test/support/kill-scenario.ts.
 *
 * The workers' locks last two seconds and are checked every second, so that the jobs a killed
 * worker held run again within seconds rather than BullMQ's default 30.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HoldingReceiver } from '../../support/holding-receiver.js';
import { InstanceProcesses } from '../../support/instance-process.js';
import {
  KILL_TEST_TIMEOUT_MS,
  type KillSetup,
  killedAndLeftDead,
  killedOnce,
  killedSeveralTimes,
  startKillReceiver,
} from '../../support/kill-scenario.js';
import { type SharedPostgres, sharedPostgres } from '../../support/shared-postgres.js';
import { type SharedRedis, sharedRedis } from '../../support/shared-redis.js';

const SECRET_KEY = randomBytes(32).toString('base64');

const processes = new InstanceProcesses();
let postgres: SharedPostgres | undefined;
const redises: SharedRedis[] = [];
const receivers: HoldingReceiver[] = [];
/** Each scenario's figures, printed at the end. */
const notes: string[] = [];

beforeAll(async () => {
  postgres = await sharedPostgres();
});

afterAll(async () => {
  // Each step runs whatever the one before did.
  try {
    await processes.stopAll();
  } finally {
    try {
      await Promise.all(receivers.map((r) => r.close()));
      await Promise.all(redises.map((r) => r.release()));
    } finally {
      await postgres?.release();
    }
  }
  console.log(`kill (BullMQ on PostgreSQL and Redis): ${notes.join('\n')}`);
});

/**
 * The instances `names` on a schema and a Redis database of their own, and a receiver.
 * @param more - more settings of the instances
 */
async function onPostgresAndRedis(
  schema: string,
  names: readonly string[],
  more: Record<string, string> = {},
): Promise<KillSetup> {
  const [redis, receiver] = await Promise.all([sharedRedis(), startKillReceiver()]);
  redises.push(redis);
  receivers.push(receiver);
  const env = {
    ...more,
    DATABASE_URL: (postgres as SharedPostgres).url,
    SCHEMA: schema,
    SECRET_KEY,
    REDIS_URL: `redis://127.0.0.1:${redis.port}/${redis.db}`,
    LOCK_DURATION_MS: '2000',
    STALLED_INTERVAL_MS: '1000',
  };
  return {
    start: (name) => processes.start(name, env),
    names,
    receiver,
  };
}

describe('BullMQ on PostgreSQL and Redis, instances killed with SIGKILL mid-delivery', () => {
  it(
    'one instance killed once: every message reaches every matched subscription, under one webhook-id',
    async () => {
      const setup = await onPostgresAndRedis('kill_once', ['A']);
      const { ledger, report } = await killedOnce(setup);
      notes.push(`one instance killed once: ${report}`);
      expect(ledger.problems()).toEqual([]);
    },
    KILL_TEST_TIMEOUT_MS,
  );

  it(
    'two instances, killed three times in turn while the other runs: every message reaches every matched subscription, under one webhook-id',
    async () => {
      const setup = await onPostgresAndRedis('kill_several', ['A', 'B']);
      const { ledger, report } = await killedSeveralTimes(setup);
      notes.push(`two instances killed 3 times: ${report}`);
      expect(ledger.problems()).toEqual([]);
    },
    KILL_TEST_TIMEOUT_MS,
  );

  it(
    'two instances with one delivery a BullMQ job, killed three times in turn while the other runs: every message reaches every matched subscription, under one webhook-id',
    async () => {
      const setup = await onPostgresAndRedis('kill_one_a_job', ['A', 'B'], {
        DELIVERIES_PER_JOB: '1',
      });
      const { ledger, report } = await killedSeveralTimes(setup);
      notes.push(`two instances, one delivery a job, killed 3 times: ${report}`);
      expect(ledger.problems()).toEqual([]);
    },
    KILL_TEST_TIMEOUT_MS,
  );

  it(
    'two instances, one killed and left dead: the other delivers its work, its cut-off publishes included',
    async () => {
      // The deliveries of a publish cut off between record and enqueue wait for their lease.
      const short = { REDELIVERY_INTERVAL_MS: '500', REDELIVERY_LEASE_MS: '1000' };
      const setup = await onPostgresAndRedis('kill_left_dead', ['A', 'B'], short);
      const { ledger, report } = await killedAndLeftDead(setup);
      notes.push(`two instances, one killed and left dead: ${report}`);
      expect(ledger.problems()).toEqual([]);
    },
    KILL_TEST_TIMEOUT_MS,
  );
});
