/**
 * The start sweep after a crash, on memory, PGlite and a real PostgreSQL: it queues every due
 * delivery, each once, whatever the dead process's leases, in every batch; and on a repository
 * this process has alone (memory, PGlite) a retry that falls due after the restart is queued for
 * its due time at start, not left until the dead process's lease: on a fake clock, and over a
 * real restart of a service delivering to a real receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DeliveryAttempt,
  type DeliveryJob,
  type DeliveryQueue,
  type EnqueueOptions,
  FakeClock,
  httpTransport,
  MemorySubscriptionRepository,
  retrySchedule,
  type SubscriptionRepository,
  systemClock,
} from '../../../src/index.js';
import { TestDatabases } from '../../postgres/databases.js';
import { eventLog } from '../../support/demo-service.js';
import { startHoldingReceiver } from '../../support/holding-receiver.js';
import {
  call,
  closingSetup,
  heldQueue,
  START,
  subscriptionBody,
} from '../../support/webhook-service.js';

const databases = new TestDatabases();
beforeAll(() => databases.start());
afterAll(() => databases.stop());

const repositories = databases.repositories();

const closing = closingSetup();

/** A queue that records every job handed to it and when it is due, and attempts none. */
function recordingQueue() {
  const jobs: Array<{ job: DeliveryJob; at: number | undefined }> = [];
  const make = (): DeliveryQueue => ({
    enqueue: async (job, options?: EnqueueOptions) => {
      jobs.push({ job, at: options?.at });
    },
    close: async () => [],
  });
  return { jobs, make };
}

async function subscribe(service: Parameters<typeof call>[0], endpointUrl: string) {
  const created = await call(service, 'POST', '/v1/subscriptions', {
    body: subscriptionBody({ endpointUrl }),
  });
  expect(created.status).toBe(201);
  return created.body.id as string;
}

describe.each(Object.keys(repositories))('the start sweep on %s', (name) => {
  const fresh = () => (repositories[name] as () => Promise<SubscriptionRepository>)();

  it('queues every one of 1,200 due deliveries a dead process held, each once', async () => {
    const repository = await fresh();
    const clock = new FakeClock(START);
    // The process that dies: its memory queue held every job, none attempted.
    const first = heldQueue();
    const a = closing({ repository, clock, queue: first.make });
    for (let i = 0; i < 3; i++) await subscribe(a.service, `https://hooks.example.com/${i}`);
    for (let i = 0; i < 400; i++) {
      await a.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    }
    expect(first.held.jobs).toHaveLength(1_200);
    await a.service.close();
    // Restarted at once: every lease of the dead process is still running.
    const second = recordingQueue();
    const b = closing({ repository, clock, queue: second.make });
    await b.service.start();
    // Joins the start sweep, or sweeps once more after it.
    await b.service.redeliver();
    const keys = second.jobs.map(({ job }) => `${job.id} ${job.subscriptionId}`);
    expect(new Set(keys)).toEqual(
      new Set(first.held.jobs.map((job) => `${job.id} ${job.subscriptionId}`)),
    );
    expect(keys).toHaveLength(1_200);
    // Each job says its account, for the queue to share its workers fairly.
    expect(new Set(second.jobs.map(({ job }) => job.accountCode))).toEqual(new Set(['ACME']));
  });

  it('a retry that falls due after the restart: queued at start for its due time where this process is alone on the data, left to its lease on a shared server', async () => {
    const repository = await fresh();
    const clock = new FakeClock(START);
    const attempts = eventLog<DeliveryAttempt>();
    const a = closing({
      repository,
      clock,
      delivery: {
        schedule: retrySchedule({ initialDelayMs: 5_000, jitter: 0 }),
        onAttempt: attempts.push,
      },
    });
    a.answer = { status: 500, headers: {} };
    await subscribe(a.service, 'https://hooks.example.com/in');
    const published = await a.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await attempts.waitFor(1);
    const retry = attempts.entries[0]!;
    expect(retry).toMatchObject({ outcome: 'retry', nextAttemptAt: START + 5_000 });
    // The process ends between the attempt and its retry.
    await a.service.close();
    clock.advance(1_000);
    const second = recordingQueue();
    const b = closing({ repository, clock, queue: second.make });
    await b.service.start();
    await b.service.redeliver();
    // Memory and PGlite are one process's alone; a PostgreSQL server is shared.
    expect(repository.exclusive === true).toBe(name !== 'PostgreSQL');
    if (name !== 'PostgreSQL') {
      expect(second.jobs).toEqual([
        {
          job: expect.objectContaining({ id: published.id, attempts: 1 }),
          at: START + 5_000,
        },
      ]);
    } else {
      // Another instance may hold it: left to its lease, taken by the sweep after it.
      expect(second.jobs).toEqual([]);
    }
  });
});

describe.each(Object.keys(repositories))(
  'the start on %s takes over only its predecessor’s leases',
  (name) => {
    it('publishes made while the start sweep runs are queued once, by the publish; the predecessor’s deliveries once, by the sweep', async () => {
      const inner = await (repositories[name] as () => Promise<SubscriptionRepository>)();
      const clock = new FakeClock(START);
      // The process that dies, holding 30 deliveries in its queue.
      const first = heldQueue();
      const a = closing({ repository: inner, clock, queue: first.make });
      for (let i = 0; i < 3; i++) await subscribe(a.service, `https://hooks.example.com/${i}`);
      for (let i = 0; i < 10; i++) {
        await a.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
      }
      await a.service.close();
      // The next process's sweeps claim only once its own publishes are on record, the worst order:
      // a sweep that took whatever its lease would take those too, and queue them a second time.
      let recorded!: () => void;
      const ownPublishes = new Promise<void>((resolve) => {
        recorded = resolve;
      });
      const repository = new Proxy(inner, {
        get(target, property) {
          // Read on the repository itself: its getters read private fields.
          const value = Reflect.get(target, property, target);
          if (property === 'claimDeliveries') {
            return async (claim: Parameters<SubscriptionRepository['claimDeliveries']>[0]) => {
              await ownPublishes;
              return target.claimDeliveries(claim);
            };
          }
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const second = recordingQueue();
      const b = closing({ repository, clock, queue: second.make });
      await b.service.start();
      const own: string[] = [];
      for (let i = 0; i < 10; i++) {
        own.push(
          (await b.service.publish({ accountCode: 'ACME', kind: 'reservation/created' })).id,
        );
      }
      recorded();
      await b.service.redeliver();
      const handed = second.jobs.map(({ job }) => `${job.id} ${job.subscriptionId}`);
      // Every delivery once: the 30 the dead process held and the 30 of this process's publishes.
      expect(handed).toHaveLength(60);
      expect(new Set(handed).size).toBe(60);
      expect(new Set(second.jobs.map(({ job }) => job.id))).toEqual(
        new Set([...first.held.jobs.map((job) => job.id), ...own]),
      );
    });
  },
);

describe('a real restart on the memory repository', () => {
  it('sends a retry that falls due after the restart at its due time, not after the dead process’s lease', async () => {
    const receiver = await startHoldingReceiver({ retryAfterSeconds: 1 });
    // Each delivery is refused once (503, Retry-After: 1 s): its retry is due a second later.
    receiver.refuse(['/in']);
    const repository = new MemorySubscriptionRepository();
    const options = {
      repository,
      // Real time: the retry is sent by the queue's real timer.
      clock: systemClock as unknown as FakeClock,
      endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
      // A lease far longer than the test may take: only the start can send the retry in time.
      redeliveryLeaseMs: 3_600_000,
      delivery: { transport: httpTransport({ allow: ['127.0.0.1'] }) },
    };
    try {
      const attempts = eventLog<DeliveryAttempt>();
      const a = closing({
        ...options,
        delivery: { ...options.delivery, onAttempt: attempts.push },
      });
      await subscribe(a.service, `${receiver.url}/in`);
      const published = await a.service.publish({
        accountCode: 'ACME',
        kind: 'reservation/created',
      });
      await attempts.waitFor(1);
      expect(attempts.entries[0]).toMatchObject({ outcome: 'retry', status: 503 });
      await a.service.close();
      const b = closing(options);
      await b.service.start();
      await receiver.waitFor(2);
      const delivered = receiver.received[1]!;
      expect(delivered.headers['webhook-id']).toBe(published.id);
      expect(receiver.accepted(delivered)).toBe(true);
    } finally {
      await receiver.close();
    }
  });
});
