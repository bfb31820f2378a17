/**
 * Replay pacing per subscription, across calls and instances, on a fake clock: two webhook
 * services on one repository (memory, PGlite, a real PostgreSQL), replays of subscriptions and of
 * messages at any times, and a worker that fails every replayed delivery it is handed, so that
 * the next replay finds it failed again. The oracle is the documented rule (docs/webhook-service.md,
 * "Replays"): from the first replay on, no span of w ms has more than
 * `replayInlineLimit + w / replayPaceMs` replayed deliveries of one subscription due in it.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FakeClock,
  type PendingDelivery,
  retrySchedule,
  type SubscriptionRepository,
} from '../../../src/index.js';
import { TestDatabases } from '../../postgres/databases.js';
import {
  call,
  heldQueue,
  repositoryWith,
  type ServiceSetup,
  START,
  serviceSetup,
  subscriptionBody,
} from '../../support/webhook-service.js';

const databases = new TestDatabases();
beforeAll(() => databases.start());
afterAll(() => databases.stop());

const repositories = databases.repositories();

/** When each replayed delivery was due: the first due time seen of each round of a delivery. */
class DueTimes {
  readonly #seen = new Map<string, { readonly subscriptionId: string; readonly at: number }>();

  note(pending: PendingDelivery): void {
    // A round's due time stays until its first attempt: the first look at it is the one set.
    if (pending.replay === 0 || pending.attempts > 0) return;
    const key = JSON.stringify([pending.messageId, pending.subscriptionId, pending.replay]);
    if (!this.#seen.has(key)) {
      this.#seen.set(key, { subscriptionId: pending.subscriptionId, at: pending.nextAttemptAt });
    }
  }

  /** The due times of one subscription's replayed deliveries, ascending. */
  of(subscriptionId: string): number[] {
    return [...this.#seen.values()]
      .filter((d) => d.subscriptionId === subscriptionId)
      .map((d) => d.at)
      .sort((a, b) => a - b);
  }

  get size(): number {
    return this.#seen.size;
  }
}

/**
 * The repository as the services see it, telling `dues` of every replayed delivery: those a
 * replay makes due at once, and the paced ones as the sweeps take them.
 */
function watched(repository: SubscriptionRepository, dues: DueTimes): SubscriptionRepository {
  return repositoryWith(repository, {
    replay: async (...args: Parameters<SubscriptionRepository['replay']>) => {
      const result = await repository.replay(...args);
      for (const d of result.due) dues.note(d);
      return result;
    },
    claimDeliveries: async (...args: Parameters<SubscriptionRepository['claimDeliveries']>) => {
      const claimed = await repository.claimDeliveries(...args);
      for (const d of claimed) dues.note(d);
      return claimed;
    },
  });
}

/**
 * The oracle, from the documented rule: for every span between two due times, the deliveries due
 * in it are at most `inline + span / paceMs`.
 */
function overPace(times: readonly number[], inline: number, paceMs: number): string | undefined {
  for (let i = 0; i < times.length; i++) {
    for (let j = i + inline; j < times.length; j++) {
      const span = (times[j] as number) - (times[i] as number);
      if (j - i + 1 > inline + span / paceMs) {
        return `${j - i + 1} due within ${span} ms (from ${times[i]}), allowed ${inline} + ${span} / ${paceMs}`;
      }
    }
  }
  return undefined;
}

/** Two services on one repository and one fake clock; every attempt answers 500 and fails. */
interface Instances {
  readonly clock: FakeClock;
  readonly dues: DueTimes;
  readonly services: readonly ServiceSetup[];
  readonly held: readonly ReturnType<typeof heldQueue>['held'][];
  readonly repository: SubscriptionRepository;
}

async function instances(
  repository: SubscriptionRepository,
  options: { readonly inline: number; readonly paceMs: number },
): Promise<Instances> {
  const clock = new FakeClock(START);
  const dues = new DueTimes();
  const shared = watched(repository, dues);
  const held: ReturnType<typeof heldQueue>['held'][] = [];
  const services = [0, 1].map(() => {
    const queue = heldQueue();
    held.push(queue.held);
    const made = serviceSetup({
      repository: shared,
      clock,
      queue: queue.make,
      delivery: { schedule: retrySchedule({ maxAttempts: 1 }) },
      replayInlineLimit: options.inline,
      replayPaceMs: options.paceMs,
      redeliveryIntervalMs: 0,
      onWarning: () => undefined,
    });
    made.answer = { status: 500, headers: {} };
    return made;
  });
  // Started, with their start sweeps done: nothing is pending yet.
  for (const made of services) await made.service.redeliver();
  return { clock, dues, services, held, repository };
}

/** `count` messages of ACME, one a second, whose deliveries to each subscription failed. */
async function failedMessages(
  repository: SubscriptionRepository,
  subscriptions: readonly { readonly id: string; readonly endpointUrl: string }[],
  count: number,
): Promise<string[]> {
  const ids: string[] = [];
  const one = async (i: number) => {
    const id = `msg_${String(i).padStart(5, '0')}`;
    const createdAt = START - (count - i) * 1_000;
    await repository.recordMessage(
      { accountCode: 'ACME', id, kind: 'reservation/created', body: `{"n":${i}}`, createdAt },
      subscriptions.map((s) => ({ subscriptionId: s.id, endpointUrl: s.endpointUrl })),
      { leaseUntil: createdAt },
    );
    for (const s of subscriptions) {
      await repository.recordAttempt('ACME', {
        id,
        subscriptionId: s.id,
        endpointUrl: s.endpointUrl,
        attempt: 1,
        at: createdAt,
        status: 500,
        durationMs: 3,
        outcome: 'failed',
      });
    }
    ids[i] = id;
  };
  for (let i = 0; i < count; i += 20) {
    await Promise.all(Array.from({ length: Math.min(20, count - i) }, (_, j) => one(i + j)));
  }
  return ids;
}

async function subscribe(made: ServiceSetup, n: number) {
  const subscriptions: { id: string; endpointUrl: string }[] = [];
  for (let i = 0; i < n; i++) {
    const created = await call(made.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody({ endpointUrl: `https://hooks.example.com/${i}` }),
    });
    expect(created.status).toBe(201);
    subscriptions.push(created.body);
  }
  return subscriptions;
}

/** One instance's turn of work: its sweep, then an attempt of every job it holds (each fails). */
async function work(all: Instances, instance: number): Promise<number> {
  const made = all.services[instance] as ServiceSetup;
  const held = all.held[instance] as Instances['held'][number];
  await made.service.redeliver();
  const jobs = held.jobs.splice(0);
  for (const job of jobs) await held.deliverer?.attempt(job);
  return jobs.length;
}

/** The rest of every replayed delivery's due time: sweeps far enough ahead to take them all. */
async function drain(all: Instances): Promise<void> {
  all.clock.advance(10 * 24 * 3_600_000);
  while ((await all.services[0]?.service.redeliver()) !== 0) {
    // Each sweep takes what is due; the loop ends once one finds nothing.
  }
}

async function closeAll(all: Instances): Promise<void> {
  for (const made of all.services) await made.service.close();
}

type Step =
  | { readonly advance: number; readonly instance: number; readonly kind: 'work' }
  | {
      readonly advance: number;
      readonly instance: number;
      readonly kind: 'subscription';
      readonly subscription: number;
    }
  | {
      readonly advance: number;
      readonly instance: number;
      readonly kind: 'message';
      readonly message: number;
    };

const MESSAGES = 8;

const iso = (ms: number) => new Date(ms).toISOString();

const steps = (paceMs: number) =>
  fc.array(
    fc.oneof(
      fc.record({
        advance: fc.integer({ min: 0, max: 3 * paceMs }),
        instance: fc.constantFrom(0, 1),
        kind: fc.constant('work' as const),
      }),
      fc.record({
        advance: fc.integer({ min: 0, max: 3 * paceMs }),
        instance: fc.constantFrom(0, 1),
        kind: fc.constant('subscription' as const),
        subscription: fc.constantFrom(0, 1),
      }),
      fc.record({
        advance: fc.integer({ min: 0, max: 3 * paceMs }),
        instance: fc.constantFrom(0, 1),
        kind: fc.constant('message' as const),
        message: fc.integer({ min: 0, max: MESSAGES - 1 }),
      }),
    ),
    { minLength: 1, maxLength: 16 },
  );

describe.each(['memory', 'PGlite'])('replay pacing on %s', (name) => {
  it('for any replays of subscriptions and messages, through either of two instances, at any times: no span of w ms has more than replayInlineLimit + w / replayPaceMs of one subscription’s replayed deliveries due', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .record({
            inline: fc.integer({ min: 1, max: 4 }),
            paceMs: fc.integer({ min: 1, max: 500 }),
          })
          .chain((options) => fc.tuple(fc.constant(options), steps(options.paceMs))),
        async ([options, run]) => {
          const all = await instances(
            await (repositories[name] as () => Promise<SubscriptionRepository>)(),
            options,
          );
          try {
            const [first] = all.services as [ServiceSetup];
            const subscriptions = await subscribe(first, 2);
            const messages = await failedMessages(all.repository, subscriptions, MESSAGES);
            let replayed = 0;
            for (const step of run as Step[]) {
              all.clock.advance(step.advance);
              const made = all.services[step.instance] as ServiceSetup;
              if (step.kind === 'work') {
                await work(all, step.instance);
                continue;
              }
              const answer =
                step.kind === 'message'
                  ? await call(
                      made.service,
                      'POST',
                      `/v1/messages/${messages[step.message]}/replay`,
                    )
                  : await call(
                      made.service,
                      'POST',
                      `/v1/subscriptions/${subscriptions[step.subscription]?.id}/replay`,
                      { body: { since: '1970-01-01T00:00:00Z' } },
                    );
              expect(answer.status).toBe(202);
              const { deliveries, queued, paced, pacedUntil } = answer.body;
              expect(queued + paced).toBe(deliveries);
              expect(queued).toBeLessThanOrEqual(options.inline);
              if (paced > 0) expect(Date.parse(pacedUntil)).toBeGreaterThanOrEqual(all.clock.now());
              replayed += deliveries;
            }
            await drain(all);
            // Every replayed delivery came due, once per round.
            expect(all.dues.size).toBe(replayed);
            for (const s of subscriptions) {
              expect(overPace(all.dues.of(s.id), options.inline, options.paceMs)).toBeUndefined();
            }
          } finally {
            await closeAll(all);
          }
        },
      ),
      { numRuns: name === 'memory' ? 150 : 25 },
    );
  }, 240_000);
});

describe.each(['memory', 'PostgreSQL'])('60 replays on %s', (name) => {
  it('60 replays since 1970 over 2,000 failed deliveries in 12 s, through two instances, while each one sent fails: 220 due in those 12 s (100 at once, then one every 100 ms), not one allowance a call', async () => {
    const repository = await (repositories[name] as () => Promise<SubscriptionRepository>)();
    const all = await instances(repository, { inline: 100, paceMs: 100 });
    try {
      const [first] = all.services as [ServiceSetup];
      const [subscription] = await subscribe(first, 1);
      await failedMessages(
        all.repository,
        [subscription as { id: string; endpointUrl: string }],
        2_000,
      );
      const t0 = all.clock.now();
      let sent = 0;
      for (let i = 0; i < 60; i++) {
        const made = all.services[i % 2] as ServiceSetup;
        const answer = await call(
          made.service,
          'POST',
          `/v1/subscriptions/${subscription?.id}/replay`,
          {
            body: { since: '1970-01-01T00:00:00Z' },
          },
        );
        expect(answer.status).toBe(202);
        // The first sends 100 at once and paces the rest; each later one paces all it finds
        // failed again, after those.
        expect(answer.body).toMatchObject(
          i === 0
            ? { deliveries: 2_000, queued: 100, paced: 1_900, pacedUntil: iso(t0 + 190_000) }
            : { queued: 0, paced: answer.body.deliveries },
        );
        if (i > 0 && answer.body.paced > 0) {
          expect(Date.parse(answer.body.pacedUntil)).toBeGreaterThan(t0 + 190_000);
        }
        // 200 ms on, each instance's sweep and worker: what came due is sent, and fails again.
        all.clock.advance(200);
        sent += (await work(all, 0)) + (await work(all, 1));
      }
      await drain(all);
      const within = all.dues.of(subscription?.id as string).filter((t) => t <= t0 + 12_000);
      expect({ within: within.length, sent }).toEqual({ within: 220, sent: 220 });
    } finally {
      await closeAll(all);
    }
  }, 240_000);
});
