/**
 * Replays at once over real HTTP, on a real PostgreSQL and on PGlite: 20 simultaneous
 * `POST /v1/subscriptions/{id}/replay` over 2,000 failed deliveries (since 1970, or since later
 * messages), three times, while the replayed deliveries go to a real receiver that fails them.
 * Every call answers 202: replays take their subscriptions' pacing rows in one order before any
 * delivery, so none deadlocks, whatever order each one's plan reads the deliveries in.
 */
import { createServer } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFetchHandler } from '../../../src/adapters/node.js';
import {
  createWebhookService,
  httpTransport,
  retrySchedule,
  type SubscriptionRepository,
} from '../../../src/index.js';
import { PostgresSubscriptionRepository } from '../../../src/postgres/index.js';
import { type DatabaseName, TestDatabases } from '../../postgres/databases.js';
import { listen } from '../../support/listen.js';
import { startReceiver } from '../../support/webhook-receiver.js';
import { byAccountHeader } from '../../support/webhook-service.js';

const databases = new TestDatabases();
// A pool as an application makes one (pg's default size): each connection runs the replay's
// prepared statement several times, so that the server may plan it afresh (generic plan).
let pool: pg.Pool;
beforeAll(async () => {
  await databases.start();
  pool = new pg.Pool({ connectionString: databases.postgres?.url, max: 10 });
});
afterAll(async () => {
  await pool.end();
  await databases.stop();
});

const FAILED = 2_000;
const AT_ONCE = 20;
const ROUNDS = 3;

/**
 * `count` messages of ACME, one a second until now, whose deliveries to the subscription all
 * failed.
 * @returns when the first was published, in ms
 */
async function failedDeliveries(
  repository: SubscriptionRepository,
  subscriptionId: string,
  endpointUrl: string,
  count: number,
): Promise<number> {
  const start = Date.now() - count * 1_000;
  const one = async (i: number) => {
    const id = `msg_${i}`;
    const body = JSON.stringify({ type: 'reservation/created', id });
    const createdAt = start + i * 1_000;
    await repository.recordMessage(
      { accountCode: 'ACME', id, kind: 'reservation/created', body, createdAt },
      [{ subscriptionId, endpointUrl }],
      { leaseUntil: createdAt },
    );
    await repository.recordAttempt('ACME', {
      id,
      subscriptionId,
      endpointUrl,
      attempt: 1,
      at: createdAt,
      status: 500,
      durationMs: 3,
      outcome: 'failed',
    });
  };
  // A few at a time: a pool runs them side by side, PGlite one after another.
  for (let i = 0; i < count; i += 20) {
    await Promise.all(Array.from({ length: Math.min(20, count - i) }, (_, j) => one(i + j)));
  }
  return start;
}

describe.each(['pg', 'pglite'] as DatabaseName[])('replays at once over HTTP on %s', (name) => {
  it(`${AT_ONCE} simultaneous replays over ${FAILED} failed deliveries, ${ROUNDS} times: every one answers 202`, async () => {
    const database = name === 'pg' ? pool : databases.database(name);
    const schema = databases.schema();
    const repository = await PostgresSubscriptionRepository.open({ database, schema });
    const receiver = await startReceiver(() => ({ status: 500 }));
    const errors: unknown[] = [];
    const service = createWebhookService({
      repository,
      identify: byAccountHeader,
      pollIntervalMs: 0,
      endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
      delivery: {
        transport: httpTransport({ allow: ['127.0.0.1'] }),
        schedule: retrySchedule({ maxAttempts: 1 }),
      },
      onError: (error) => errors.push(error),
      onWarning: () => undefined,
    });
    await service.start();
    const api = await listen(createServer(nodeFetchHandler(service)));
    try {
      const created = await fetch(`${api.url}/v1/subscriptions`, {
        method: 'POST',
        headers: { 'x-account': 'ACME', 'content-type': 'application/json' },
        body: JSON.stringify({ endpointUrl: `${receiver.url}/in`, events: ['reservation/*'] }),
      });
      expect(created.status).toBe(201);
      const { id, endpointUrl } = (await created.json()) as { id: string; endpointUrl: string };
      const start = await failedDeliveries(repository, id, endpointUrl, FAILED);
      // Statistics as autovacuum gathers them after such a load: the planner then picks its
      // plans by them, and a connection's prepared statement may change plan after a few runs.
      await database.query(`ANALYZE "${schema}".deliveries, "${schema}".messages`);

      const answers: Array<{ status: number; text: string }> = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Since 1970, or since one of four later messages: what each selects overlaps the others.
        const calls = Array.from({ length: AT_ONCE }, async (_, i) => {
          const since = i % 5 === 0 ? 0 : start + (i % 5) * (FAILED / 5) * 1_000;
          const response = await fetch(`${api.url}/v1/subscriptions/${id}/replay`, {
            method: 'POST',
            headers: { 'x-account': 'ACME', 'content-type': 'application/json' },
            body: JSON.stringify({ since: new Date(since).toISOString() }),
          });
          return { status: response.status, text: await response.text() };
        });
        answers.push(...(await Promise.all(calls)));
      }
      const refused = answers.filter((a) => a.status !== 202).length;
      expect({ refused, errors: errors.map(String) }).toEqual({ refused: 0, errors: [] });
      // Every failed delivery was replayed once by the first call to reach it; later calls found
      // only those that had failed again meanwhile.
      const replayed = answers.map(
        (a) => (JSON.parse(a.text) as { deliveries: number }).deliveries,
      );
      expect(replayed.reduce((sum, n) => sum + n, 0)).toBeGreaterThanOrEqual(FAILED);
    } finally {
      await api.close();
      await service.close();
      await receiver.close();
    }
  }, 180_000);
});
