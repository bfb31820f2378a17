/**
 * The outbox's invariant on a fake clock, as the specification of deliveries states it: whatever
 * the receivers answer and however often the instance restarts (its memory queue lost each time),
 * every published message reaches every subscription it matched at least once, and every copy of
 * it carries the same webhook-id and body.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type DeliveryJob,
  FakeClock,
  MemorySubscriptionRepository,
  retrySchedule,
  type TransportRequest,
} from '../../../src/index.js';
import {
  call,
  heldQueue,
  type ServiceSetup,
  START,
  serviceSetup,
  subscriptionBody,
} from '../../support/webhook-service.js';

const LEASE = 60_000;
const SCHEDULE = retrySchedule({ maxAttempts: 3, initialDelayMs: 1_000, factor: 2, jitter: 0 });
const ENDPOINTS = ['https://a.example.com/in', 'https://b.example.com/in'];
const KINDS = ['reservation/created', 'folio/closed'];

const stepArb = fc.oneof(
  fc.record({ op: fc.constant('publish' as const), kind: fc.constantFrom(...KINDS) }),
  fc.record({
    op: fc.constant('run' as const),
    pick: fc.nat(20),
    status: fc.constantFrom(200, 204, 500, 503, 429),
  }),
  fc.record({ op: fc.constant('restart' as const) }),
  fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 90_000 }) }),
  fc.record({ op: fc.constant('sweep' as const) }),
);

interface Instance {
  readonly made: ServiceSetup;
  readonly held: ReturnType<typeof heldQueue>['held'];
  /** Jobs of this instance's queue, with the time each may run. */
  readonly queued: Array<{ job: DeliveryJob; at: number }>;
}

describe('the outbox: nothing lost', () => {
  it('every message reaches every matched subscription at least once, across restarts, with one webhook-id and body', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40 }), async (steps) => {
        const repository = new MemorySubscriptionRepository();
        const clock = new FakeClock(START);
        const received: Array<{ request: TransportRequest; status: number }> = [];
        let status = 200;
        const boot = async (): Promise<Instance> => {
          const { held, make } = heldQueue();
          const made = serviceSetup({
            repository,
            clock,
            queue: make,
            redeliveryLeaseMs: LEASE,
            delivery: {
              schedule: SCHEDULE,
              transport: async (request) => {
                received.push({ request, status });
                return { status, headers: status === 200 ? {} : { 'retry-after': '2' } };
              },
            },
          });
          await made.service.start();
          await made.service.redeliver();
          const instance: Instance = { made, held, queued: [] };
          return instance;
        };
        let instance = await boot();
        // The jobs the queue was handed so far, moved into the instance's list as they come.
        const take = () => {
          for (const job of instance.held.jobs.splice(0)) {
            instance.queued.push({ job, at: clock.now() });
          }
        };
        const run = async (index: number): Promise<void> => {
          take();
          const due = instance.queued.filter((q) => q.at <= clock.now());
          const chosen = due[index % Math.max(1, due.length)];
          if (chosen === undefined) return;
          instance.queued.splice(instance.queued.indexOf(chosen), 1);
          const step = await instance.held.deliverer!.attempt(chosen.job);
          if (!step.done) instance.queued.push({ job: step.job, at: step.at });
        };
        const a = await call(instance.made.service, 'POST', '/v1/subscriptions', {
          body: subscriptionBody({ endpointUrl: ENDPOINTS[0], events: ['reservation/*'] }),
        });
        const b = await call(instance.made.service, 'POST', '/v1/subscriptions', {
          body: subscriptionBody({
            endpointUrl: ENDPOINTS[1],
            events: ['reservation/*', 'folio/*'],
          }),
        });
        const endpointOf = new Map([
          [a.body.id as string, ENDPOINTS[0]],
          [b.body.id as string, ENDPOINTS[1]],
        ]);
        // What the specification's matching says each kind reaches.
        const reach = (kind: string) =>
          kind.startsWith('reservation/') ? [a.body.id, b.body.id] : [b.body.id];
        const published: Array<{ id: string; subscriptions: string[] }> = [];
        for (const step of steps) {
          switch (step.op) {
            case 'publish': {
              const result = await instance.made.service.publish({
                accountCode: 'ACME',
                kind: step.kind,
              });
              expect(new Set(result.deliveries)).toEqual(new Set(reach(step.kind)));
              published.push({ id: result.id, subscriptions: reach(step.kind) });
              break;
            }
            case 'run':
              status = step.status;
              await run(step.pick);
              break;
            case 'restart':
              // The process dies: what its memory queue held is gone.
              await instance.made.service.close();
              instance = await boot();
              break;
            case 'advance':
              clock.advance(step.ms);
              break;
            case 'sweep':
              await instance.made.service.redeliver();
              break;
          }
        }
        // From here on every receiver answers 200: run what is queued, sweep after each lease,
        // and replay what exhausted its schedule meanwhile, until nothing is pending.
        status = 200;
        const settled = async () => {
          for (const message of published) {
            for (const subscription of message.subscriptions) {
              const at = await repository.deliveryStatus('ACME', message.id, subscription);
              if (at !== 'delivered') return false;
            }
          }
          return true;
        };
        for (let round = 0; round < 20 && !(await settled()); round++) {
          take();
          while (instance.queued.length > 0) {
            clock.set(Math.max(clock.now(), ...instance.queued.map((q) => q.at)));
            await run(0);
            take();
          }
          for (const message of published) {
            await call(instance.made.service, 'POST', `/v1/messages/${message.id}/replay`);
          }
          clock.advance(LEASE + 10_000);
          await instance.made.service.redeliver();
        }
        for (const message of published) {
          for (const subscription of message.subscriptions) {
            const copies = received.filter(
              (r) =>
                r.request.headers['webhook-id'] === message.id &&
                r.request.url === endpointOf.get(subscription),
            );
            expect(
              copies.some((c) => c.status >= 200 && c.status <= 299),
              `${message.id} to ${subscription}`,
            ).toBe(true);
            expect(new Set(copies.map((c) => c.request.body)).size).toBe(1);
            expect(await repository.deliveryStatus('ACME', message.id, subscription)).toBe(
              'delivered',
            );
          }
        }
        // Nothing reached a subscription the message did not match.
        const matched = new Set(
          published.flatMap((m) => m.subscriptions.map((s) => `${m.id} ${endpointOf.get(s)}`)),
        );
        for (const r of received) {
          expect(matched.has(`${r.request.headers['webhook-id']} ${r.request.url}`)).toBe(true);
        }
        await instance.made.service.close();
      }),
      { numRuns: 60 },
    );
  });
});
