/**
 * The webhook service's outbox on a fake clock, on memory, PGlite and a real PostgreSQL: a message
 * and its deliveries are on record before anything is queued, sweeps queue again what no queue
 * holds, every attempt moves its delivery, failures are kept and replayed with the same
 * webhook-id, failing endpoints are disabled, and a receiver's Retry-After holds back only its own
 * subscription.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DeliveryJob,
  type DeliveryQueue,
  DeliveryQueueError,
  FakeClock,
  MemoryDeliveryQueue,
  retrySchedule,
  type SubscriptionRepository,
  type WebhookServiceDisabled,
} from '../../../src/index.js';
import { TestDatabases } from '../../postgres/databases.js';
import {
  call,
  closingSetup,
  heldQueue,
  type ServiceSetup,
  START,
  type serviceSetup,
  subscriptionBody,
  until,
} from '../../support/webhook-service.js';

const databases = new TestDatabases();
beforeAll(() => databases.start());
afterAll(() => databases.stop());

const repositories = databases.repositories();

const closing = closingSetup();

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Two attempts, 1 s apart, no jitter: a delivery fails for good at its second failed attempt. */
const TWO_ATTEMPTS = retrySchedule({ maxAttempts: 2, initialDelayMs: SECOND, jitter: 0 });
/** One attempt: a failed one fails the delivery. */
const ONE_ATTEMPT = retrySchedule({ maxAttempts: 1 });

async function subscribe(made: ServiceSetup, over: Record<string, unknown> = {}, account = 'ACME') {
  const created = await call(made.service, 'POST', '/v1/subscriptions', {
    account,
    body: subscriptionBody(over),
  });
  expect(created.status).toBe(201);
  return created.body as { id: string; secret: string };
}

describe.each(Object.keys(repositories))('createWebhookService on %s', (name) => {
  const fresh = () => (repositories[name] as () => Promise<SubscriptionRepository>)();
  const setup = async (options: Parameters<typeof serviceSetup>[0] = {}) =>
    closing({ ...options, repository: options.repository ?? (await fresh()) });

  describe('the outbox', () => {
    it('records the message and a pending delivery for each matched subscription before anything is queued', async () => {
      const repository = await fresh();
      const seen: Array<string | undefined> = [];
      const queue = (): DeliveryQueue => ({
        enqueue: async (job) => {
          seen.push(await repository.deliveryStatus('ACME', job.id, job.subscriptionId));
        },
        close: async () => [],
      });
      const made = await setup({ repository, queue });
      const a = await subscribe(made);
      const b = await subscribe(made, { endpointUrl: 'https://other.example.com/in' });
      await subscribe(made, { events: ['folio/*'] });
      const published = await made.service.publish({
        accountCode: 'ACME',
        kind: 'reservation/created',
      });
      expect(new Set(published.deliveries)).toEqual(new Set([a.id, b.id]));
      expect(seen).toEqual(['pending', 'pending']);
    });

    it('a job the queue refuses stays on record, is reported, and a later sweep queues it once its lease passed', async () => {
      const jobs: DeliveryJob[] = [];
      let refuse = true;
      const queue = (): DeliveryQueue => ({
        enqueue: async (job) => {
          if (refuse) throw new DeliveryQueueError('queue_unavailable', 'down');
          jobs.push(job);
        },
        close: async () => [],
      });
      const made = await setup({ queue, redeliveryLeaseMs: MINUTE });
      const sub = await subscribe(made);
      const published = await made.service.publish({
        accountCode: 'ACME',
        kind: 'reservation/created',
      });
      expect(made.errors).toEqual([expect.objectContaining({ code: 'queue_unavailable' })]);
      expect(await made.repository.deliveryStatus('ACME', published.id, sub.id)).toBe('pending');
      refuse = false;
      // Within the lease the delivery is left to the queue it was handed to.
      expect(await made.service.redeliver()).toBe(0);
      made.clock.advance(MINUTE);
      expect(await made.service.redeliver()).toBe(1);
      expect(jobs).toEqual([expect.objectContaining({ id: published.id, subscriptionId: sub.id })]);
      // Handed over again: leased again.
      expect(await made.service.redeliver()).toBe(0);
    });

    it('an instance that starts queues every due delivery its predecessor held in memory, with the same webhook-id and body', async () => {
      const repository = await fresh();
      const clock = new FakeClock(START);
      const first = heldQueue();
      const a = await setup({ repository, clock, queue: first.make });
      const x = await subscribe(a);
      const y = await subscribe(a, { endpointUrl: 'https://other.example.com/in' });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push(
          (await a.service.publish({ accountCode: 'ACME', kind: 'reservation/created' })).id,
        );
      }
      expect(first.held.jobs).toHaveLength(6);
      // The process ends: the jobs in its memory queue are gone, nothing was attempted.
      await a.service.close();
      let recorded = 0;
      const b = await setup({
        repository,
        clock,
        // Told once the attempt is on record.
        delivery: {
          onAttempt: () => {
            recorded += 1;
          },
        },
      });
      await b.service.start();
      await until(() => recorded === 6, 'six deliveries on record');
      expect(b.sent).toHaveLength(6);
      const byPair = new Map(first.held.jobs.map((j) => [`${j.id} ${j.subscriptionId}`, j.body]));
      const got = b.sent.map(
        (r) =>
          `${r.headers['webhook-id']} ${r.url === 'https://other.example.com/in' ? y.id : x.id}`,
      );
      expect(new Set(got)).toEqual(new Set(byPair.keys()));
      for (const request of b.sent) {
        const sub = request.url === 'https://other.example.com/in' ? y.id : x.id;
        expect(request.body).toBe(byPair.get(`${request.headers['webhook-id']} ${sub}`));
      }
      expect(new Set(b.sent.map((r) => r.headers['webhook-id']))).toEqual(new Set(ids));
      for (const id of ids) {
        expect(await repository.deliveryStatus('ACME', id, x.id)).toBe('delivered');
        expect(await repository.deliveryStatus('ACME', id, y.id)).toBe('delivered');
      }
    });

    it('each attempt moves its delivery: a retry stays pending, an exhausted schedule marks it failed and keeps it', async () => {
      const { held, make } = heldQueue();
      const made = await setup({ queue: make, delivery: { schedule: TWO_ATTEMPTS } });
      const sub = await subscribe(made);
      made.answer = { status: 500, headers: {} };
      const published = await made.service.publish({
        accountCode: 'ACME',
        kind: 'reservation/created',
      });
      const first = await held.deliverer!.attempt(held.jobs[0]!);
      expect(first).toMatchObject({ done: false, report: { outcome: 'retry' } });
      expect(await made.repository.deliveryStatus('ACME', published.id, sub.id)).toBe('pending');
      made.clock.advance(SECOND);
      const second = await held.deliverer!.attempt((first as { job: DeliveryJob }).job);
      expect(second).toMatchObject({
        done: true,
        report: { outcome: 'failed', reason: 'attempts_exhausted' },
      });
      expect(await made.repository.deliveryStatus('ACME', published.id, sub.id)).toBe('failed');
      const listed = await call(made.service, 'GET', `/v1/subscriptions/${sub.id}/attempts`);
      expect(listed.body.items.map((a: { outcome: string }) => a.outcome)).toEqual([
        'failed',
        'retry',
      ]);
    });
  });

  describe('replays', () => {
    it('POST /v1/messages/{id}/replay sends a failed message again with its webhook-id, as replay 1, recorded', async () => {
      const { held, make } = heldQueue();
      const made = await setup({ queue: make, delivery: { schedule: ONE_ATTEMPT } });
      const failing = await subscribe(made);
      const fine = await subscribe(made, { endpointUrl: 'https://fine.example.com/in' });
      made.answer = { status: 500, headers: {} };
      const published = await made.service.publish({
        accountCode: 'ACME',
        kind: 'reservation/created',
      });
      await held.deliverer!.attempt(held.jobs.find((j) => j.subscriptionId === failing.id)!);
      made.answer = { status: 204, headers: {} };
      await held.deliverer!.attempt(held.jobs.find((j) => j.subscriptionId === fine.id)!);
      const body = held.jobs[0]!.body;
      held.jobs.length = 0;
      made.sent.length = 0;

      const replayed = await call(made.service, 'POST', `/v1/messages/${published.id}/replay`);
      expect(replayed.status).toBe(202);
      // Only the subscription that failed it.
      expect(replayed.body).toEqual({
        messageId: published.id,
        deliveries: 1,
        queued: 1,
        paced: 0,
      });
      expect(held.jobs).toEqual([
        expect.objectContaining({
          id: published.id,
          subscriptionId: failing.id,
          body,
          replay: 1,
          attempts: 0,
        }),
      ]);
      const step = await held.deliverer!.attempt(held.jobs[0]!);
      expect(step.report).toMatchObject({ outcome: 'delivered', attempt: 1, replay: 1 });
      expect(made.sent.map((r) => r.headers['webhook-id'])).toEqual([published.id]);
      expect(await made.repository.deliveryStatus('ACME', published.id, failing.id)).toBe(
        'delivered',
      );
      const listed = await call(made.service, 'GET', `/v1/subscriptions/${failing.id}/attempts`);
      expect(listed.body.items).toEqual([
        expect.objectContaining({ outcome: 'delivered', replay: 1, attempt: 1 }),
        expect.objectContaining({ outcome: 'failed', attempt: 1 }),
      ]);
      expect(listed.body.items[1].replay).toBeUndefined();
      // Nothing failed any more: a second replay sends nothing.
      const again = await call(made.service, 'POST', `/v1/messages/${published.id}/replay`);
      expect(again.body).toMatchObject({ deliveries: 0, queued: 0 });
    });

    it('POST /v1/subscriptions/{id}/replay sends every message it failed since a time; beyond the inline limit they are paced', async () => {
      const { held, make } = heldQueue();
      const made = await setup({
        queue: make,
        delivery: { schedule: ONE_ATTEMPT },
        replayInlineLimit: 1,
        replayPaceMs: 500,
        redeliveryLeaseMs: MINUTE,
      });
      const sub = await subscribe(made);
      made.answer = { status: 500, headers: {} };
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        ids.push(
          (await made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' })).id,
        );
        await held.deliverer!.attempt(held.jobs.at(-1)!);
        made.clock.advance(HOUR);
      }
      held.jobs.length = 0;
      const since = new Date(START + 2 * HOUR).toISOString();
      const replayed = await call(made.service, 'POST', `/v1/subscriptions/${sub.id}/replay`, {
        body: { since },
      });
      expect(replayed.status).toBe(202);
      expect(replayed.body).toEqual({
        subscriptionId: sub.id,
        since,
        deliveries: 2,
        queued: 1,
        paced: 1,
        pacedUntil: new Date(made.clock.now() + 500).toISOString(),
      });
      // The oldest first, at once; the other once its paced time comes.
      expect(held.jobs.map((j) => j.id)).toEqual([ids[2]]);
      expect(await made.service.redeliver()).toBe(0);
      made.clock.advance(500);
      expect(await made.service.redeliver()).toBe(1);
      expect(held.jobs.map((j) => [j.id, j.replay])).toEqual([
        [ids[2], 1],
        [ids[3], 1],
      ]);
      // The two before `since` stay failed.
      expect(await made.repository.deliveryStatus('ACME', ids[0]!, sub.id)).toBe('failed');
    });

    it('refuses bad replays with problem details: unknown message, another account’s, a disabled subscription, a bad since', async () => {
      const made = await setup({ delivery: { schedule: ONE_ATTEMPT } });
      const sub = await subscribe(made);
      const theirs = await subscribe(made, {}, 'OTHER');
      const published = await made.service.publish({
        accountCode: 'OTHER',
        kind: 'reservation/created',
      });
      const cases: Array<[string, string, Parameters<typeof call>[3], number, string, string?]> = [
        ['POST', '/v1/messages/msg_nope/replay', {}, 404, 'message_not_found'],
        ['POST', `/v1/messages/${published.id}/replay`, {}, 404, 'message_not_found'],
        ['GET', `/v1/messages/${published.id}/replay`, {}, 405, 'method_not_allowed'],
        [
          'POST',
          `/v1/subscriptions/${theirs.id}/replay`,
          { body: { since: '2020-01-01T00:00:00Z' } },
          404,
          'subscription_not_found',
        ],
        [
          'POST',
          `/v1/subscriptions/${sub.id}/replay`,
          { body: {} },
          400,
          'invalid_replay',
          '/since',
        ],
        [
          'POST',
          `/v1/subscriptions/${sub.id}/replay`,
          { body: { since: 'yesterday' } },
          400,
          'invalid_replay',
          '/since',
        ],
        [
          'POST',
          `/v1/subscriptions/${sub.id}/replay`,
          { body: { since: 1_700_000_000 } },
          400,
          'invalid_replay',
          '/since',
        ],
        [
          'POST',
          `/v1/subscriptions/${sub.id}/replay`,
          { body: { since: '2999-01-01T00:00:00Z' } },
          400,
          'invalid_replay',
          '/since',
        ],
        [
          'POST',
          `/v1/subscriptions/${sub.id}/replay`,
          { body: { since: '2020-01-01T00:00:00Z', until: 'x' } },
          400,
          'invalid_replay',
          '/until',
        ],
        [
          'POST',
          `/v1/subscriptions/${sub.id}/replay`,
          { body: ['2020-01-01T00:00:00Z'] },
          400,
          'invalid_replay',
          '',
        ],
        [
          'POST',
          `/v1/subscriptions/${sub.id}/replay`,
          { raw: 'since=2020', headers: { 'content-type': 'text/plain' } },
          415,
          'unsupported_media_type',
        ],
        [
          'POST',
          `/v1/subscriptions/${sub.id}/replay`,
          { raw: '{"since":', headers: { 'content-type': 'application/json' } },
          400,
          'invalid_json',
        ],
      ];
      for (const [method, path, init, status, code, pointer] of cases) {
        const answer = await call(made.service, method, path, init);
        expect([path, answer.status, answer.body?.code]).toEqual([path, status, code]);
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        if (pointer !== undefined) expect(answer.body.errors[0].path).toBe(pointer);
      }
      expect(
        (
          await call(made.service, 'PATCH', `/v1/subscriptions/${sub.id}`, {
            body: { status: 'disabled' },
          })
        ).status,
      ).toBe(200);
      const disabled = await call(made.service, 'POST', `/v1/subscriptions/${sub.id}/replay`, {
        body: { since: '2020-01-01T00:00:00Z' },
      });
      expect([disabled.status, disabled.body.code]).toEqual([409, 'subscription_disabled']);
      expect(made.errors).toEqual([]);
    });
  });

  describe('failing endpoints switched off', () => {
    /** A service whose endpoint fails; each message has one attempt, run at once. */
    async function failingEndpoint(options: Parameters<typeof serviceSetup>[0] = {}) {
      const { held, make } = heldQueue();
      const disabled: WebhookServiceDisabled[] = [];
      const made = await setup({
        queue: make,
        delivery: { schedule: ONE_ATTEMPT },
        disableMinMessages: 3,
        onDisabled: (event) => void disabled.push(event),
        ...options,
      });
      const sub = await subscribe(made);
      made.answer = { status: 500, headers: {} };
      const deliverNext = async () => {
        const published = await made.service.publish({
          accountCode: 'ACME',
          kind: 'reservation/created',
        });
        const job = held.jobs.at(-1)!;
        const step = await held.deliverer!.attempt(job);
        return { published, step };
      };
      return { made, sub, held, disabled, deliverNext };
    }

    it('disables a subscription failing without a success for 5 days over at least the minimum of messages: reason and time in GET, onDisabled once, no further attempts', async () => {
      const { made, sub, held, disabled, deliverNext } = await failingEndpoint();
      // Failing for 4 days, a message every 12 hours: many messages, not yet long enough.
      for (let i = 0; i < 9; i++) {
        await deliverNext();
        made.clock.advance(12 * HOUR);
      }
      expect((await call(made.service, 'GET', `/v1/subscriptions/${sub.id}`)).body.status).toBe(
        'enabled',
      );
      made.clock.set(START + 5 * DAY);
      await deliverNext();
      expect(disabled).toHaveLength(1);
      expect(disabled[0]).toMatchObject({ reason: 'endpoint_failing', at: START + 5 * DAY });
      expect(disabled[0]?.subscription).toMatchObject({ id: sub.id, status: 'disabled' });
      const read = await call(made.service, 'GET', `/v1/subscriptions/${sub.id}`);
      expect(read.body).toMatchObject({
        status: 'disabled',
        disabledReason: 'endpoint_failing',
        disabledAt: new Date(START + 5 * DAY).toISOString(),
      });
      // No further attempts: new events no longer match, and a job still queued sends nothing.
      const sentBefore = made.sent.length;
      expect(
        (await made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' }))
          .deliveries,
      ).toEqual([]);
      const queued = await held.deliverer!.attempt(held.jobs[0]!);
      expect(queued.report).toMatchObject({ outcome: 'failed', reason: 'no_secret' });
      expect(made.sent.length).toBe(sentBefore);
      expect(disabled).toHaveLength(1);
    });

    it('stays enabled when a success came in between, or too few messages failed, however long', async () => {
      const between = await failingEndpoint();
      await between.deliverNext();
      between.made.clock.advance(4 * DAY);
      between.made.answer = { status: 200, headers: {} };
      await between.deliverNext();
      between.made.answer = { status: 500, headers: {} };
      for (let i = 0; i < 4; i++) {
        between.made.clock.advance(DAY);
        await between.deliverNext();
      }
      // 8 days since the first failure, 4 since the success: enabled.
      expect(between.disabled).toEqual([]);

      const few = await failingEndpoint({ disableMinMessages: 3 });
      await few.deliverNext();
      few.made.clock.advance(10 * DAY);
      await few.deliverNext();
      // Two messages in ten days, three needed.
      expect(few.disabled).toEqual([]);
      few.made.clock.advance(DAY);
      await few.deliverNext();
      expect(few.disabled).toHaveLength(1);
    });

    it('PATCH status enabled turns it back on, clears the reason, and its failed messages can be replayed', async () => {
      const { made, sub, held, disabled, deliverNext } = await failingEndpoint({
        disableAfterMs: DAY,
      });
      const failed: string[] = [];
      for (let i = 0; i < 3; i++) {
        failed.push((await deliverNext()).published.id);
        made.clock.advance(12 * HOUR);
      }
      expect(disabled).toHaveLength(1);
      const enabled = await call(made.service, 'PATCH', `/v1/subscriptions/${sub.id}`, {
        body: { status: 'enabled' },
      });
      expect(enabled.status).toBe(200);
      expect(enabled.body.status).toBe('enabled');
      expect(enabled.body.disabledReason).toBeUndefined();
      expect(enabled.body.disabledAt).toBeUndefined();
      made.answer = { status: 204, headers: {} };
      held.jobs.length = 0;
      const replayed = await call(made.service, 'POST', `/v1/subscriptions/${sub.id}/replay`, {
        body: { since: new Date(START).toISOString() },
      });
      expect(replayed.body).toMatchObject({ deliveries: 3, queued: 3 });
      for (const job of held.jobs) await held.deliverer!.attempt(job);
      expect(made.sent.slice(-3).map((r) => r.headers['webhook-id'])).toEqual(failed);
      // The streak started afresh: one more failure does not disable it again.
      made.answer = { status: 500, headers: {} };
      await deliverNext();
      expect(disabled).toHaveLength(1);
    });

    it('a 410 answer disables it as endpoint_gone and tells onDisabled', async () => {
      const { made, sub, disabled, deliverNext } = await failingEndpoint();
      made.answer = { status: 410, headers: {} };
      await deliverNext();
      expect(disabled).toEqual([
        expect.objectContaining({
          reason: 'endpoint_gone',
          subscription: expect.objectContaining({ id: sub.id }),
        }),
      ]);
      const read = await call(made.service, 'GET', `/v1/subscriptions/${sub.id}`);
      expect(read.body).toMatchObject({ status: 'disabled', disabledReason: 'endpoint_gone' });
    });

    it('an onDisabled that throws is reported; the subscription is disabled all the same', async () => {
      const { made, sub, deliverNext } = await failingEndpoint({
        disableAfterMs: 0,
        disableMinMessages: 1,
        onDisabled: () => {
          throw new Error('hook down');
        },
      });
      await deliverNext();
      expect(made.errors).toEqual([expect.objectContaining({ message: 'hook down' })]);
      expect((await call(made.service, 'GET', `/v1/subscriptions/${sub.id}`)).body.status).toBe(
        'disabled',
      );
    });
  });

  describe('a receiver’s Retry-After', () => {
    it('holds back every delivery of that subscription until then, without a request or a waiting worker; others go on', async () => {
      const { held, make } = heldQueue();
      const made = await setup({ queue: make });
      const slow = await subscribe(made, { endpointUrl: 'https://slow.example.com/in' });
      const quick = await subscribe(made, { endpointUrl: 'https://quick.example.com/in' });
      made.answer = { status: 429, headers: { 'retry-after': '120' } };
      await made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
      await made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
      const [slow1, quick1, slow2, quick2] = [
        held.jobs.find((j) => j.subscriptionId === slow.id)!,
        held.jobs.find((j) => j.subscriptionId === quick.id)!,
        held.jobs.filter((j) => j.subscriptionId === slow.id)[1]!,
        held.jobs.filter((j) => j.subscriptionId === quick.id)[1]!,
      ];
      const first = await held.deliverer!.attempt(slow1);
      expect(first).toMatchObject({ done: false, report: { status: 429, outcome: 'retry' } });
      const resumeAt = (first as { at: number }).at;
      expect(resumeAt).toBeGreaterThanOrEqual(START + 120 * SECOND);
      made.answer = { status: 200, headers: {} };
      const sent = made.sent.length;
      // The other delivery to the slow receiver is put back until then: no request, no attempt.
      const deferred = await held.deliverer!.attempt(slow2);
      expect(deferred).toEqual({ done: false, job: slow2, at: resumeAt, deferred: true });
      expect(made.sent.length).toBe(sent);
      // The quick receiver is not held back.
      expect((await held.deliverer!.attempt(quick1)).report?.outcome).toBe('delivered');
      expect((await held.deliverer!.attempt(quick2)).report?.outcome).toBe('delivered');
      const log = await call(made.service, 'GET', `/v1/subscriptions/${slow.id}/attempts`);
      expect(log.body.items).toHaveLength(1);
      made.clock.set(resumeAt);
      expect((await held.deliverer!.attempt(slow2)).report?.outcome).toBe('delivered');
    });

    it('in the memory queue with one worker, a slow receiver’s held-back deliveries leave the worker to the others', async () => {
      const clock = new FakeClock(START);
      let recorded = 0;
      const made = await setup({
        clock,
        // Told once the attempt is on record.
        delivery: {
          onAttempt: () => {
            recorded += 1;
          },
        },
        queue: (deliverer) =>
          new MemoryDeliveryQueue({
            deliverer,
            clock,
            concurrency: 1,
            // Waits end only when the queue closes: the fake clock does not move by itself.
            sleep: (_ms, signal) =>
              new Promise<void>((_, reject) =>
                signal?.addEventListener('abort', () => reject(signal.reason)),
              ),
          }),
      });
      const slow = await subscribe(made, {
        endpointUrl: 'https://slow.example.com/in',
        events: ['folio/*'],
      });
      await subscribe(made, { endpointUrl: 'https://quick.example.com/in' });
      made.answer = { status: 503, headers: { 'retry-after': '3600' } };
      await made.service.publish({ accountCode: 'ACME', kind: 'folio/created' });
      await until(() => made.sent.length === 1, 'the slow receiver’s answer');
      made.answer = { status: 200, headers: {} };
      await made.service.publish({ accountCode: 'ACME', kind: 'folio/created' });
      for (let i = 0; i < 5; i++)
        await made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
      await until(() => recorded === 6, 'the slow attempt and five quick ones on record');
      expect(made.sent.filter((r) => r.url.startsWith('https://quick'))).toHaveLength(5);
      expect(made.sent.filter((r) => r.url.startsWith('https://slow'))).toHaveLength(1);
      const log = await call(made.service, 'GET', `/v1/subscriptions/${slow.id}/attempts`);
      expect(log.body.items.map((a: { status: number }) => a.status)).toEqual([503]);
    });
  });

  describe('retention of messages', () => {
    it('deletes messages older than the retention that owe nothing pending, keeps pending ones', async () => {
      const { held, make } = heldQueue();
      const made = await setup({ queue: make, attemptRetentionMs: DAY });
      const sub = await subscribe(made);
      const done = await made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
      await held.deliverer!.attempt(held.jobs[0]!);
      const waiting = await made.service.publish({
        accountCode: 'ACME',
        kind: 'reservation/created',
      });
      made.clock.advance(DAY + 1);
      await made.service.deleteExpiredAttempts();
      expect(await made.repository.deliveryStatus('ACME', done.id, sub.id)).toBeUndefined();
      expect(await made.repository.deliveryStatus('ACME', waiting.id, sub.id)).toBe('pending');
    });
  });
});
