/**
 * The contenders of the deliveries benchmark, each a way to get published events signed to the
 * receiver: the floors (a bare BullMQ Queue and Worker that sign and POST with the library's
 * `signWebhook` and `httpTransport` and keep no record; the memory queue with a deliverer that
 * keeps none) and the webhook service itself, on PostgreSQL with the BullMQ queue or on PGlite
 * with the memory queue. Every contender publishes the same events (`eventOf`), makes bodies the
 * same way (`createWebhookMessage`, about 1 KB) and sends through its own `httpTransport` with
 * the same options, `CONCURRENCY` attempts at a time.
 */
import {
  createDeliverer,
  createWebhookMessage,
  createWebhookService,
  type Deliverer,
  type DeliveryJob,
  type DeliveryQueue,
  deliveryJob,
  generateWebhookSecret,
  httpTransport,
  MemoryDeliveryQueue,
  type PublishEvent,
  type SubscriptionRepository,
  signWebhook,
  type WebhookService,
} from 'api-conventions';
import { createRedisDeliveryQueue } from 'api-conventions/queue-redis';
import * as bullmq from 'bullmq';

/** Attempts at a time, in every contender (the BullMQ workers' and the memory queues'). */
export const CONCURRENCY = 16;

/** The accounts the events go to round robin, each with one subscription that matches. */
const ACCOUNTS = ['A0', 'A1', 'A2', 'A3'];
/** The account whose events fan out, to `FAN_OUT` subscriptions each. */
const FAN_ACCOUNT = 'FAN';
export const FAN_OUT = 4;

/** About 1 KB of body once in the envelope. */
const PADDING = 'x'.repeat(800);

/** The n-th event of a run: one of the accounts', of one of 16 properties. */
export function eventOf(n: number, accountCode = ACCOUNTS[n % ACCOUNTS.length]!): PublishEvent {
  return {
    accountCode,
    kind: 'folio/created',
    propertyId: `P${n % 16}`,
    data: { folioId: `F${n}`, padding: PADDING },
  };
}

/** The transport every contender sends with: the library's, the receiver's address allowed. */
const transport = () => httpTransport({ allow: ['127.0.0.1'] });

/** One way to get events to the receiver. */
export interface Contender {
  /** Short, for `DELIVERIES_BENCH_CONTENDERS` (`floor-bullmq`, `bullmq`, …). */
  readonly key: string;
  readonly name: string;
  /** Deliveries each event makes. */
  readonly fanOut: number;
  /** Every secret its deliveries may be signed with. */
  readonly secrets: readonly string[];
  /** Publish the `n`-th event of a run; resolves once the contender accepted it. */
  publish(n: number): Promise<unknown>;
  /** Failures its service reported since it was made (0 for the floors). */
  errors(): number;
}

/** Contenders sharing what `close` lets go of. */
export interface Setup {
  readonly contenders: readonly Contender[];
  close(): Promise<void>;
}

/** BullMQ's connection to the suite's redis-server. */
export function redisConnection(port: number) {
  return { host: '127.0.0.1', port, maxRetriesPerRequest: null };
}

/** Sign `job` with `secret` and POST it as every floor does; throws on an answer not 2xx. */
function signAndPost(send: ReturnType<typeof transport>, secret: string) {
  return async ({ id, body, endpointUrl }: DeliveryJob): Promise<void> => {
    const signature = signWebhook({ id, timestamp: Math.floor(Date.now() / 1000), body }, secret);
    const response = await send({
      url: endpointUrl,
      headers: {
        'user-agent': 'api-conventions-webhooks',
        'content-type': 'application/json',
        ...signature,
      },
      body,
      timeoutMs: 15_000,
    });
    if (response.status < 200 || response.status > 299) {
      throw new Error(`the receiver answered ${response.status}`);
    }
  };
}

/**
 * The floor: a bare BullMQ Queue and Worker on the same Redis, the processor signing with one
 * secret and posting; no repository, no record, BullMQ's job options as ours.
 */
export function bullmqFloor(redisPort: number, endpointUrl: string): Setup {
  const secret = generateWebhookSecret();
  const post = signAndPost(transport(), secret);
  const connection = redisConnection(redisPort);
  const name = 'bench-floor';
  const queue = new bullmq.Queue<DeliveryJob>(name, { connection });
  const worker = new bullmq.Worker<DeliveryJob>(name, ({ data }) => post(data), {
    connection,
    concurrency: CONCURRENCY,
  });
  let failed = 0;
  worker.on('failed', () => failed++);
  return {
    contenders: [
      {
        key: 'floor-bullmq',
        name: 'floor: bare BullMQ worker',
        fanOut: 1,
        secrets: [secret],
        publish: (n) => {
          const job = deliveryJob(createWebhookMessage(eventOf(n)), { id: 'floor', endpointUrl });
          return queue.add('delivery', job, { removeOnComplete: 1000, removeOnFail: false });
        },
        errors: () => failed,
      },
    ],
    close: async () => {
      await worker.close();
      await queue.close();
    },
  };
}

/** Deliveries a job of the batched floor carries. */
export const JOB_BATCH = 8;

/**
 * Not a target: the bare BullMQ floor with `JOB_BATCH` deliveries in each job (the publishes
 * gathered `JOB_BATCH` at a time, each resolving once its job is added; a worker signs and POSTs
 * its job's deliveries at once, `CONCURRENCY / JOB_BATCH` jobs at a time, so `CONCURRENCY`
 * attempts at a time as in every contender). Against the floor it tells what BullMQ costs per
 * job, the part a service could share among deliveries by queueing several in one job.
 */
export function bullmqBatchedFloor(redisPort: number, endpointUrl: string): Setup {
  const secret = generateWebhookSecret();
  const post = signAndPost(transport(), secret);
  const connection = redisConnection(redisPort);
  const name = 'bench-floor-batched';
  const queue = new bullmq.Queue<DeliveryJob[]>(name, { connection });
  const worker = new bullmq.Worker<DeliveryJob[]>(
    name,
    async ({ data }) => {
      await Promise.all(data.map(post));
    },
    { connection, concurrency: Math.max(1, Math.floor(CONCURRENCY / JOB_BATCH)) },
  );
  let failed = 0;
  worker.on('failed', () => failed++);
  const gather = gathered((jobs) =>
    queue.add('deliveries', jobs, { removeOnComplete: 1000, removeOnFail: false }),
  );
  return {
    contenders: [
      {
        key: 'floor-bullmq-batched',
        name: `floor: bare BullMQ, ${JOB_BATCH} deliveries a job`,
        fanOut: 1,
        secrets: [secret],
        publish: (n) =>
          gather(deliveryJob(createWebhookMessage(eventOf(n)), { id: 'floor', endpointUrl })),
        errors: () => failed,
      },
    ],
    close: async () => {
      await worker.close();
      await queue.close();
    },
  };
}

/**
 * Jobs handed in one at a time, added `JOB_BATCH` at a time: the jobs of a turn, up to
 * `JOB_BATCH`, go in one call of `add` (the rest of the turn in the next), each caller's promise
 * settling with that call.
 */
function gathered(
  add: (jobs: DeliveryJob[]) => Promise<unknown>,
): (job: DeliveryJob) => Promise<void> {
  let batch: { job: DeliveryJob; settle: (error?: unknown) => void }[] = [];
  const addBatch = () => {
    const taken = batch;
    batch = [];
    if (taken.length === 0) return;
    add(taken.map((b) => b.job)).then(
      () => {
        for (const b of taken) b.settle();
      },
      (error: unknown) => {
        for (const b of taken) b.settle(error ?? new Error('not added'));
      },
    );
  };
  return (job) =>
    new Promise<void>((resolve, reject) => {
      batch.push({ job, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      if (batch.length === 1) setImmediate(addBatch);
      if (batch.length >= JOB_BATCH) addBatch();
    });
}

/** The memory floor: the memory queue and a deliverer with one secret, no repository. */
export function memoryFloor(endpointUrl: string): Setup {
  const secret = generateWebhookSecret();
  const queue = new MemoryDeliveryQueue({
    deliverer: createDeliverer({ secrets: () => [secret], transport: transport() }),
    concurrency: CONCURRENCY,
    capacity: 1_000_000,
  });
  return {
    contenders: [
      {
        key: 'floor-memory',
        name: 'floor: memory queue, no record',
        fanOut: 1,
        secrets: [secret],
        publish: (n) =>
          queue.enqueue(
            deliveryJob(createWebhookMessage(eventOf(n)), { id: 'floor', endpointUrl }),
          ),
        errors: () => 0,
      },
    ],
    close: async () => {
      await queue.close();
    },
  };
}

/**
 * Where the service keeps its deliveries' work: BullMQ, the memory queue, or none (every job
 * dropped: publish's own cost, for the outbox's figures).
 */
export type QueueKind =
  | { kind: 'bullmq'; redisPort: number; deliveriesPerJob?: number }
  | { kind: 'memory' }
  | { kind: 'none' };

/** The queue of a service whose deliveries go nowhere. */
const dropEveryJob = { enqueue: async () => undefined, close: async () => [] };

function makeQueue(queue: QueueKind, deliverer: Deliverer, name: string): DeliveryQueue {
  if (queue.kind === 'none') return dropEveryJob;
  if (queue.kind === 'memory') {
    return new MemoryDeliveryQueue({ deliverer, concurrency: CONCURRENCY, capacity: 1_000_000 });
  }
  return createRedisDeliveryQueue({
    bullmq,
    connection: redisConnection(queue.redisPort),
    name,
    deliverer,
    concurrency: CONCURRENCY,
    ...(queue.deliveriesPerJob === undefined ? {} : { deliveriesPerJob: queue.deliveriesPerJob }),
  });
}

/** How {@link ourService} is set up. */
export interface OurServiceOptions {
  /** The key and name of its contender (the fan-out one adds `-fan-out` and `, fan-out 4`). */
  readonly key: string;
  readonly name: string;
  readonly repository: SubscriptionRepository;
  readonly queue: QueueKind;
  /** The receiver's URL; each subscription gets a path of its own under it. */
  readonly endpointUrl: string;
  /** Add the contender whose events fan out to `FAN_OUT` subscriptions. */
  readonly fanOut?: boolean;
}

/**
 * The webhook service, its subscriptions made through its API: one on `folio/created` (and one on
 * `reservation/*`, never matched) in each account, and `FAN_OUT` on `folio/*` in the fan-out
 * account. Its contenders publish through `service.publish`: one delivery per event, and (with
 * `fanOut`) `FAN_OUT` per event.
 */
export async function ourService(options: OurServiceOptions): Promise<Setup> {
  const { key, name, repository, queue, endpointUrl } = options;
  let errors = 0;
  const service = createWebhookService({
    repository,
    identify: (request) => ({ clientId: 'bench', accountCode: request.headers.get('x-account')! }),
    pollIntervalMs: 0,
    onWarning: () => undefined,
    onError: (error) => {
      errors++;
      if (errors <= 3) console.error(`${name}: ${String(error)}`);
    },
    endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
    delivery: { transport: transport() },
    queue: (deliverer) => makeQueue(queue, deliverer, `bench-${key}`),
  });
  await service.start();
  const secrets: string[] = [];
  const subscribe = async (accountCode: string, events: readonly string[]) => {
    // A path each, so that the receiver tells a fan-out's deliveries apart.
    const url = `${endpointUrl}/${secrets.length}`;
    secrets.push(await subscription(service, accountCode, { endpointUrl: url, events }));
  };
  for (const account of ACCOUNTS) {
    await subscribe(account, ['folio/created']);
    await subscribe(account, ['reservation/*']);
  }
  for (let i = 0; i < FAN_OUT; i++) await subscribe(FAN_ACCOUNT, ['folio/*']);
  const contenders: Contender[] = [
    {
      key,
      name,
      fanOut: 1,
      secrets,
      publish: (n) => service.publish(eventOf(n)),
      errors: () => errors,
    },
  ];
  if (options.fanOut === true) {
    contenders.push({
      key: `${key}-fan-out`,
      name: `${name}, fan-out ${FAN_OUT}`,
      fanOut: FAN_OUT,
      secrets,
      publish: (n) => service.publish(eventOf(n, FAN_ACCOUNT)),
      errors: () => errors,
    });
  }
  return { contenders, close: () => service.close() };
}

/** Create a subscription through the service's API; its secret. */
async function subscription(
  service: WebhookService,
  accountCode: string,
  body: { endpointUrl: string; events: readonly string[] },
): Promise<string> {
  const response = await service.fetch(
    new Request('http://bench.test/v1/subscriptions', {
      method: 'POST',
      headers: { 'x-account': accountCode, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
  const created = (await response.json()) as { secret?: string };
  if (response.status !== 201 || created.secret === undefined) {
    throw new Error(
      `creating a subscription answered ${response.status}: ${JSON.stringify(created)}`,
    );
  }
  return created.secret;
}
