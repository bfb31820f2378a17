/**
 * One webhook service instance as a process of its own, for the tests that run several on one
 * database (test/webhooks/service/instances.test.ts). Run with tsx; configured by the environment:
 *
 * - `INSTANCE`: its name, also the `application_name` of its connections (a test finds its
 *   backends in `pg_stat_activity` by it);
 * - `DATABASE_URL` (a PostgreSQL server, through a `pg.Pool`) or `DATA_DIR` (PGlite on that
 *   folder; one process per folder);
 * - `SCHEMA` (the repository's schema), `SECRET_KEY` (base64 of 32 bytes: secrets encrypted at rest);
 * - `RECEIVER_HOST` (an address deliveries may reach besides public ones; `127.0.0.1` by default);
 * - `REDIS_URL` (`redis://host:port/db`): deliveries through the BullMQ queue on that Redis
 *   (`createRedisDeliveryQueue`, its default name), so that a job waiting for a retry outlives the
 *   process; without it, a memory queue as the service makes by default;
 * - `START_AFTER_FIRST_JOB=1` (with `REDIS_URL`): the service starts (loads its index) only once
 *   the queue's worker has taken its first job, the order a long load at start gives, made certain;
 *   for a restart with a job due, as the instance serves only once started;
 * - `DELIVERIES_PER_JOB` (with `REDIS_URL`): the queue's `deliveriesPerJob`;
 * - `LOCK_DURATION_MS`, `STALLED_INTERVAL_MS` (with `REDIS_URL`): the BullMQ worker's
 *   `lockDuration` and `stalledInterval`, so that a killed worker's jobs run again within seconds;
 * - `REDELIVERY_INTERVAL_MS`, `REDELIVERY_LEASE_MS`: the service's `redeliveryIntervalMs` and
 *   `redeliveryLeaseMs` (passed only when set);
 * - `RATE_REDIS_URL` (`redis://host:port/db`): subscriptions' `rateLimit` counted on that Redis
 *   (`delivery.rateLimitStore`: a `RedisStore` timed by the service's clock), shared with every
 *   instance given the same; without it, in this process's memory.
 *
 * Its deliveries carry `x-sender: <INSTANCE>/<pid>`. It serves the service's API over node:http
 * on 127.0.0.1 through `nodeFetchHandler`, identifying accounts by the `x-account` header, and
 * these test routes on the same server:
 *
 * - `POST /test/publish` (body: an event) answers `service.publish(event)`'s result;
 *   `POST /test/publish?stall` publishes the event but hangs the enqueue of its first job, once it
 *   is on record: the publish is never answered, the message is not lost (stalling-queue.ts);
 * - `GET /test/stalled` answers the messages so stalled (`{ id, data }`);
 * - `GET /test/stats` answers `service.stats()`;
 * - `GET /test/errors` answers what `onError` was told so far (messages).
 *
 * It prints `listening <port>` once it serves, and stops cleanly on SIGTERM (exit code 0). It exits
 * when its standard input ends, so that it never outlives a test process that died.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import * as bullmq from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { nodeFetchHandler } from '../../src/adapters/node.js';
import {
  createWebhookService,
  type Deliverer,
  httpTransport,
  MemoryDeliveryQueue,
} from '../../src/index.js';
import { PostgresSubscriptionRepository, type SqlDatabase } from '../../src/postgres/index.js';
import { createRedisDeliveryQueue } from '../../src/queue-redis/index.js';
import { ioredisClient, RedisStore } from '../../src/redis/index.js';
import { StallingQueue } from './stalling-queue.js';

const name = process.env.INSTANCE ?? 'instance';
const databaseUrl = process.env.DATABASE_URL;
const dataDir = process.env.DATA_DIR;
const receiverHost = process.env.RECEIVER_HOST ?? '127.0.0.1';
const redisUrl = process.env.REDIS_URL === undefined ? undefined : new URL(process.env.REDIS_URL);
const startAfterFirstJob = process.env.START_AFTER_FIRST_JOB === '1';
const deliveriesPerJob =
  process.env.DELIVERIES_PER_JOB === undefined ? undefined : Number(process.env.DELIVERIES_PER_JOB);
if (startAfterFirstJob && redisUrl === undefined) {
  throw new Error('START_AFTER_FIRST_JOB needs REDIS_URL');
}
/** `{ [option]: ms }` from a whole number of ms in the environment; `{}` when it is not set. */
function msFromEnv<K extends string>(variable: string, option: K): { [P in K]?: number } {
  const value = process.env[variable];
  if (value === undefined) return {};
  if (!/^[0-9]+$/.test(value)) throw new Error(`${variable} must be a whole number of ms`);
  return { [option]: Number(value) } as { [P in K]?: number };
}
const workerOptions = {
  ...msFromEnv('LOCK_DURATION_MS', 'lockDuration'),
  ...msFromEnv('STALLED_INTERVAL_MS', 'stalledInterval'),
};
const redelivery = {
  ...msFromEnv('REDELIVERY_INTERVAL_MS', 'redeliveryIntervalMs'),
  ...msFromEnv('REDELIVERY_LEASE_MS', 'redeliveryLeaseMs'),
};

const errors: string[] = [];
const noteError = (error: unknown) => {
  errors.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
};

let pool: pg.Pool | undefined;
let lite: PGlite | undefined;
let database: SqlDatabase;
if (databaseUrl !== undefined) {
  pool = new pg.Pool({ connectionString: databaseUrl, application_name: name, max: 10 });
  // An idle connection the server ends must not end the process.
  pool.on('error', noteError);
  database = pool;
} else {
  lite = await PGlite.create(dataDir as string);
  database = lite;
}

const repository = await PostgresSubscriptionRepository.open({
  database,
  ...(process.env.SCHEMA === undefined ? {} : { schema: process.env.SCHEMA }),
  ...(process.env.SECRET_KEY === undefined
    ? {}
    : { secretKeys: [{ id: 'test', key: process.env.SECRET_KEY }] }),
});

const rateRedis =
  process.env.RATE_REDIS_URL === undefined ? undefined : new Redis(process.env.RATE_REDIS_URL);
rateRedis?.on('error', noteError);
const rateLimitStore =
  rateRedis === undefined
    ? undefined
    : new RedisStore({
        client: ioredisClient(rateRedis),
        prefix: 'rates:',
        timeSource: 'clock',
        timeoutMs: 2_000,
      });

let tookFirstJob: () => void = () => undefined;
const firstJobTaken = new Promise<void>((resolve) => {
  tookFirstJob = resolve;
});
/** The service's deliverer, telling when the worker takes its first job. */
const watched = (deliverer: Deliverer): Deliverer => ({
  attempt: (job) => {
    tookFirstJob();
    return deliverer.attempt(job);
  },
  ...(deliverer.lost === undefined ? {} : { lost: deliverer.lost.bind(deliverer) }),
});

/** The service's queue, made by the service. */
let stalling: StallingQueue | undefined;
const service = createWebhookService({
  repository,
  identify: (request) => {
    const account = request.headers.get('x-account');
    return account === null ? undefined : { clientId: 'app', accountCode: account };
  },
  endpointUrl: { allowHttp: true, allow: [receiverHost] },
  delivery: {
    transport: httpTransport({ allow: [receiverHost] }),
    timeoutMs: 10_000,
    // Which process sent an attempt: the kill tests tell a killed one's attempts from the others'.
    headers: { 'x-sender': `${name}/${process.pid}` },
    ...(rateLimitStore === undefined ? {} : { rateLimitStore }),
  },
  // Only notifications keep this instance in step: no poll hides a missed one.
  pollIntervalMs: 0,
  queue: (deliverer) => {
    stalling = new StallingQueue(
      redisUrl === undefined
        ? new MemoryDeliveryQueue({ deliverer })
        : // BullMQ opens (and closes) its own connections; it waits while Redis is away.
          createRedisDeliveryQueue({
            bullmq,
            connection: {
              host: redisUrl.hostname,
              port: Number(redisUrl.port),
              db: Number(redisUrl.pathname.slice(1) || '0'),
              maxRetriesPerRequest: null,
            },
            deliverer: watched(deliverer),
            workerOptions,
            ...(deliveriesPerJob === undefined ? {} : { deliveriesPerJob }),
          }),
    );
    return stalling;
  },
  onError: noteError,
  onWarning: () => undefined,
  ...redelivery,
});
if (startAfterFirstJob) await firstJobTaken;
await service.start();

const api = nodeFetchHandler(service);

/** The whole body of a request, as text. */
async function bodyOf(req: IncomingMessage): Promise<string> {
  let text = '';
  req.setEncoding('utf8');
  for await (const chunk of req) text += chunk;
  return text;
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

/** The test routes; false for a request that is the service's. */
async function testRoute(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const path = req.url ?? '/';
  if (req.method === 'POST' && (path === '/test/publish' || path === '/test/publish?stall')) {
    try {
      const event = JSON.parse(await bodyOf(req));
      if (path.endsWith('?stall')) stalling?.stallNext(event?.data);
      json(res, 200, await service.publish(event));
    } catch (error) {
      json(res, 400, { error: error instanceof Error ? error.message : String(error) });
    }
    return true;
  }
  if (req.method === 'GET' && path === '/test/stats') {
    json(res, 200, service.stats());
    return true;
  }
  if (req.method === 'GET' && path === '/test/stalled') {
    json(res, 200, stalling?.stalled ?? []);
    return true;
  }
  if (req.method === 'GET' && path === '/test/errors') {
    json(res, 200, errors);
    return true;
  }
  return false;
}

const server = createServer((req, res) => {
  testRoute(req, res).then(
    (served) => (served ? undefined : api(req, res)),
    (error: unknown) => {
      noteError(error);
      if (!res.headersSent) json(res, 500, { error: String(error) });
    },
  );
});
server.keepAliveTimeout = 1_000;
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
console.log(`listening ${(server.address() as AddressInfo).port}`);

// The test process holds the other end: when it is gone, so is this instance.
process.stdin.on('end', () => process.exit(1));
process.stdin.resume();

process.once('SIGTERM', () => {
  const stop = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await service.close();
    await repository.close();
    await pool?.end();
    await lite?.close();
    rateRedis?.disconnect();
  };
  stop().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
});
