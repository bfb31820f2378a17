import { describe, expect, it } from 'vitest';
import {
  type DeliveryAttempt,
  FakeClock,
  MemorySubscriptionRepository,
  verifyWebhook,
} from '../../../src/index.js';
import {
  call,
  closingSetup,
  heldQueue,
  repositoryWith,
  START,
  subscriptionBody,
  until,
} from '../../support/webhook-service.js';

const setup = closingSetup();

const verifies = (
  sent: { body: string; headers: Record<string, string> },
  secret: string,
  clock: FakeClock,
) => verifyWebhook(sent.body, sent.headers, { secrets: [secret], clock }).ok;

describe('createWebhookService: publishing and delivery', () => {
  it('a publish right after a create on the same instance matches it; the delivery is signed with its secret and logged', async () => {
    const attempts: DeliveryAttempt[] = [];
    const { service, sent, clock, repository } = setup({
      delivery: { onAttempt: (a) => void attempts.push(a) },
    });
    const created = await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody({ propertyIds: ['BER'] }),
    });
    const published = await service.publish({
      accountCode: 'ACME',
      kind: 'reservation/created',
      propertyId: 'BER',
      data: { reservationId: 'R1' },
    });
    expect(published.deliveries).toEqual([created.body.id]);
    await until(() => attempts.length === 1, 'the attempt');
    expect(sent).toHaveLength(1);
    expect(verifies(sent[0]!, created.body.secret, clock)).toBe(true);
    expect(JSON.parse(sent[0]!.body)).toMatchObject({
      id: published.id,
      accountId: 'ACME',
      data: { reservationId: 'R1' },
    });
    const log = await repository.attempts('ACME', { limit: 10 });
    expect(log).toEqual([
      expect.objectContaining({ id: published.id, outcome: 'delivered', sequence: 1 }),
    ]);
    const other = await service.publish({
      accountCode: 'ACME',
      kind: 'reservation/created',
      propertyId: 'MUC',
    });
    expect(other.deliveries).toEqual([]);
    const foreign = await service.publish({
      accountCode: 'OTHER',
      kind: 'reservation/created',
      propertyId: 'BER',
    });
    expect(foreign.deliveries).toEqual([]);
  });

  it('after a rotation deliveries carry two signatures, one per secret; after the grace period only the new one', async () => {
    const { service, sent, clock } = setup({ secretGracePeriodMs: 60_000 });
    const created = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const rotated = await call(
      service,
      'POST',
      `/v1/subscriptions/${created.body.id}/secret/rotate`,
    );
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await until(() => sent.length === 1);
    expect(sent[0]!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verifies(sent[0]!, created.body.secret, clock)).toBe(true);
    expect(verifies(sent[0]!, rotated.body.secret, clock)).toBe(true);
    clock.advance(60_000);
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await until(() => sent.length === 2);
    expect(sent[1]!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verifies(sent[1]!, created.body.secret, clock)).toBe(false);
    expect(verifies(sent[1]!, rotated.body.secret, clock)).toBe(true);
  });

  it('after a delete nothing is delivered: a publish matches nothing, and a delivery queued before ends no_secret and is logged', async () => {
    const { held, make } = heldQueue();
    const { service, sent, repository } = setup({ queue: make });
    const created = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    expect(held.jobs).toHaveLength(1);
    expect((await call(service, 'DELETE', `/v1/subscriptions/${created.body.id}`)).status).toBe(
      204,
    );
    expect(
      (await service.publish({ accountCode: 'ACME', kind: 'reservation/created' })).deliveries,
    ).toEqual([]);
    const step = await held.deliverer!.attempt(held.jobs[0]!);
    expect(step.report).toMatchObject({ outcome: 'failed', reason: 'no_secret' });
    expect(sent).toHaveLength(0);
    const log = await repository.attempts('ACME', { limit: 10 });
    expect(log).toEqual([
      expect.objectContaining({ reason: 'no_secret', subscriptionId: created.body.id }),
    ]);
  });

  it('a disabled subscription is not matched, and is again once enabled', async () => {
    const { service } = setup();
    const created = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const path = `/v1/subscriptions/${created.body.id}`;
    await call(service, 'PATCH', path, { body: { status: 'disabled' } });
    expect(service.stats().subscriptions).toBe(0);
    expect(
      (await service.publish({ accountCode: 'ACME', kind: 'reservation/created' })).deliveries,
    ).toEqual([]);
    await call(service, 'PATCH', path, { body: { status: 'enabled', events: ['folio/*'] } });
    expect(
      (await service.publish({ accountCode: 'ACME', kind: 'reservation/created' })).deliveries,
    ).toEqual([]);
    expect(
      (await service.publish({ accountCode: 'ACME', kind: 'folio/created' })).deliveries,
    ).toEqual([created.body.id]);
  });

  it('a 410 from the receiver disables the subscription in the repository and the index', async () => {
    const made = setup();
    const { service, repository } = made;
    made.answer = { status: 410, headers: {} };
    const created = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await until(() => service.stats().subscriptions === 0, 'the index to drop it');
    expect((await repository.get('ACME', created.body.id))?.status).toBe('disabled');
    const read = await call(service, 'GET', `/v1/subscriptions/${created.body.id}`);
    expect(read.body.status).toBe('disabled');
  });

  it('a log that cannot be written is reported; the delivery goes on and the user onAttempt is still told', async () => {
    const inner = new MemorySubscriptionRepository();
    const failure = new Error('log down');
    const attempts: DeliveryAttempt[] = [];
    const repository = repositoryWith(inner, { recordAttempt: () => Promise.reject(failure) });
    const { service, errors, sent } = setup({
      repository,
      delivery: { onAttempt: (a) => void attempts.push(a) },
    });
    await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await until(() => attempts.length === 1);
    expect(sent).toHaveLength(1);
    expect(errors).toContain(failure);
  });
});

describe('createWebhookService: the same on every instance', () => {
  it('two services on one repository stay in step: create on A is matched on B; delete on A, B stops', async () => {
    const repository = new MemorySubscriptionRepository();
    const clock = new FakeClock(START);
    const a = setup({ repository, clock });
    const b = setup({ repository, clock });
    await Promise.all([a.service.start(), b.service.start()]);
    const created = await call(a.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(),
    });
    await until(() => b.service.stats().subscriptions === 1, 'B to hear of the create');
    const published = await b.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    expect(published.deliveries).toEqual([created.body.id]);
    await until(() => b.sent.length === 1);
    expect(verifies(b.sent[0]!, created.body.secret, clock)).toBe(true);
    await call(a.service, 'PATCH', `/v1/subscriptions/${created.body.id}`, {
      body: { events: ['folio/*'] },
    });
    await until(() => b.service.stats().revision === a.service.stats().revision);
    expect(
      (await b.service.publish({ accountCode: 'ACME', kind: 'folio/created' })).deliveries,
    ).toHaveLength(1);
    await call(a.service, 'DELETE', `/v1/subscriptions/${created.body.id}`);
    await until(() => b.service.stats().subscriptions === 0, 'B to hear of the delete');
    expect(
      (await b.service.publish({ accountCode: 'ACME', kind: 'folio/created' })).deliveries,
    ).toEqual([]);
  });

  it('a job held across a restart waits for the index to load, and a job from an instance ahead catches up first: both are signed', async () => {
    const repository = new MemorySubscriptionRepository();
    // No notifications: only the deliverer's own catch-up can tell C of the later create.
    const unwatched = repositoryWith(repository, { watch: undefined });
    const clock = new FakeClock(START);
    const queueA = heldQueue();
    const a = setup({ repository: unwatched, clock, queue: queueA.make });
    const created = await call(a.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(),
    });
    await a.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    const job = queueA.held.jobs[0]!;
    // B is the restarted instance: its durable queue runs the job before anything started it.
    const queueB = heldQueue();
    const b = setup({ repository: unwatched, clock, queue: queueB.make });
    expect((await queueB.held.deliverer!.attempt(job)).report?.outcome).toBe('delivered');
    expect(verifies(b.sent[0]!, created.body.secret, clock)).toBe(true);
    // C started before the next create and hears of no change: its deliverer catches up on the miss.
    const queueC = heldQueue();
    const c = setup({ repository: unwatched, clock, queue: queueC.make });
    await c.service.start();
    const later = await call(a.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(),
    });
    expect(c.service.stats().subscriptions).toBe(1);
    const laterJob = { ...job, subscriptionId: later.body.id };
    expect((await queueC.held.deliverer!.attempt(laterJob)).report?.outcome).toBe('delivered');
    expect(verifies(c.sent.at(-1)!, later.body.secret, clock)).toBe(true);
  });

  it('one id in two accounts (a custom generateId): the index keeps the first, reports the second, and a change of the second never touches the first', async () => {
    const { service, errors } = setup({ generateId: () => 'same-id' });
    await service.start();
    const first = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const second = await call(service, 'POST', '/v1/subscriptions', {
      account: 'OTHER',
      body: subscriptionBody(),
    });
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(errors.map((e) => (e as { code?: string }).code)).toContain('duplicate_subscription_id');
    expect(errors.map((e) => (e as Error).message)).toContain(
      `subscription.id of account "OTHER" must be an id no other account's subscription has: only the first is matched (make generateId return ids unique across accounts; the default, a UUID, is), got "same-id".`,
    );
    const publishTo = (accountCode: string) =>
      service.publish({ accountCode, kind: 'reservation/created' });
    expect((await publishTo('ACME')).deliveries).toEqual(['same-id']);
    expect((await publishTo('OTHER')).deliveries).toEqual([]);
    await call(service, 'DELETE', '/v1/subscriptions/same-id', { account: 'OTHER' });
    expect((await publishTo('ACME')).deliveries).toEqual(['same-id']);
  });

  it('without notifications the poll catches up; a failing catch-up is reported and retried', async () => {
    const inner = new MemorySubscriptionRepository();
    let failing = false;
    const quiet = repositoryWith(inner, {
      watch: undefined,
      changesSince: (revision: number, limit: number) =>
        failing ? Promise.reject(new Error('flaky')) : inner.changesSince(revision, limit),
    });
    const writer = setup({ repository: inner });
    const reader = setup({ repository: quiet, pollIntervalMs: 5 });
    await reader.service.start();
    failing = true;
    await call(writer.service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    await until(() => reader.errors.length > 0, 'a failing catch-up to be reported');
    expect(reader.service.stats().subscriptions).toBe(0);
    failing = false;
    await until(() => reader.service.stats().subscriptions === 1, 'the poll to catch up');
  });

  it('a burst of changes is applied in order, once, whatever the notifications: the index ends as the repository is', async () => {
    const repository = new MemorySubscriptionRepository();
    const a = setup({ repository });
    const b = setup({ repository });
    await b.service.start();
    const ids: string[] = [];
    const writes = Array.from({ length: 30 }, () =>
      call(a.service, 'POST', '/v1/subscriptions', { body: subscriptionBody() }),
    );
    for (const answer of await Promise.all(writes)) ids.push(answer.body.id);
    await Promise.all(
      ids
        .filter((_, i) => i % 3 === 0)
        .map((id) => call(a.service, 'DELETE', `/v1/subscriptions/${id}`)),
    );
    await Promise.all(
      ids
        .filter((_, i) => i % 3 === 1)
        .map((id) =>
          call(a.service, 'PATCH', `/v1/subscriptions/${id}`, { body: { status: 'disabled' } }),
        ),
    );
    const latest = (await repository.changesSince(0, 1000)).at(-1)!.revision;
    await until(() => b.service.stats().revision === latest, 'B to apply the last change');
    expect(b.service.stats().subscriptions).toBe(10);
    expect(a.service.stats().subscriptions).toBe(10);
  });
});
