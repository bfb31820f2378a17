/**
 * Signing secrets the configured keys cannot read, on PostgreSQL and PGlite: secrets stored under
 * key A, the service started again with key B. Start tells `onError` of each subscription none of
 * whose secrets can be read; a delivery to one ends `failed` with reason `secret_unreadable` (not
 * `no_secret`) and `onError` is told; a rotation recovers (the new secret signs, the old one that
 * B cannot read is skipped and told); with keys [B, A] every secret signs again.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DeliveryAttempt,
  type DeliveryJob,
  isSecretCipherError,
  type SecretCipherError,
  verifyWebhook,
} from '../../../src/index.js';
import { PostgresSubscriptionRepository, type SecretKey } from '../../../src/postgres/index.js';
import { DATABASES, type DatabaseName, TestDatabases } from '../../postgres/databases.js';
import {
  call,
  closingSetup,
  heldQueue,
  type ServiceSetup,
  subscriptionBody,
} from '../../support/webhook-service.js';

const databases = new TestDatabases();
beforeAll(() => databases.start());
afterAll(() => databases.stop());
const closing = closingSetup();

const A: SecretKey = { id: 'key-a', key: randomBytes(32) };
const B: SecretKey = { id: 'key-b', key: randomBytes(32) };
/** Key B under A's id: the demo's `demo-1:$(openssl rand -base64 32)` given a new key. */
const A_AGAIN: SecretKey = { id: 'key-a', key: randomBytes(32) };

/** A service on the schema with these keys, its queue held so that each attempt is run here. */
async function serviceOn(name: DatabaseName, schema: string, secretKeys: readonly SecretKey[]) {
  const repository = await PostgresSubscriptionRepository.open({
    database: databases.database(name),
    schema,
    secretKeys,
  });
  const queue = heldQueue();
  const attempts: DeliveryAttempt[] = [];
  const made = closing({
    repository,
    queue: queue.make,
    delivery: { onAttempt: (attempt) => void attempts.push(attempt) },
  });
  return { made, queue, attempts, repository };
}

/** Publish one event and run its attempt to the subscription. */
async function deliverOne(
  made: ServiceSetup,
  queue: ReturnType<typeof heldQueue>,
  subscriptionId: string,
) {
  const published = await made.service.publish({
    accountCode: 'ACME',
    kind: 'reservation/created',
  });
  const job = queue.held.jobs.find(
    (j) => j.id === published.id && j.subscriptionId === subscriptionId,
  ) as DeliveryJob;
  expect(job).toBeDefined();
  const step = await queue.held.deliverer!.attempt(job);
  return { published, report: step.report as DeliveryAttempt };
}

const cipherErrors = (errors: unknown[]): SecretCipherError[] => errors.filter(isSecretCipherError);

describe.each(DATABASES)('secrets the keys cannot read, on %s', (name) => {
  it('start reports them, a delivery fails secret_unreadable and is told, a rotation recovers, and [B, A] signs again', async () => {
    const schema = databases.schema();
    const before = await serviceOn(name, schema, [A]);
    const created = await call(before.made.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(),
    });
    expect(created.status).toBe(201);
    const { id, secret: first } = created.body as { id: string; secret: string };
    const fine = await call(before.made.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody({ endpointUrl: 'https://other.example.com/in' }),
    });
    // With the keys it was stored with, start reports nothing and the delivery signs.
    expect((await deliverOne(before.made, before.queue, id)).report.outcome).toBe('delivered');
    expect(cipherErrors(before.made.errors)).toEqual([]);
    await before.made.service.close();

    // Restarted with key B: start tells onError of each subscription, naming it.
    const wrong = await serviceOn(name, schema, [B]);
    await wrong.made.service.start();
    const atStart = cipherErrors(wrong.made.errors);
    expect(atStart.map((e) => [e.subscriptionId, e.accountCode, e.code]).sort()).toEqual(
      [
        [id, 'ACME', 'unknown_secret_key'],
        [fine.body.id, 'ACME', 'unknown_secret_key'],
      ].sort(),
    );
    expect(atStart[0]?.message).toContain('key-a');

    // A delivery: failed, secret_unreadable, nothing sent, onError told.
    wrong.made.errors.length = 0;
    const sentBefore = wrong.made.sent.length;
    const failed = await deliverOne(wrong.made, wrong.queue, id);
    expect(failed.report).toMatchObject({ outcome: 'failed', reason: 'secret_unreadable' });
    expect(failed.report.error?.code).toBe('unknown_secret_key');
    expect(wrong.made.sent.length).toBe(sentBefore);
    expect(cipherErrors(wrong.made.errors).map((e) => e.subscriptionId)).toEqual([id]);
    // On record as such in the delivery log.
    const log = await wrong.repository.attempts('ACME', { limit: 10, subscriptionId: id });
    expect(log[0]).toMatchObject({ outcome: 'failed', reason: 'secret_unreadable' });

    // A rotation recovers: the new secret (under B) signs; the old one, still in its grace
    // period and unreadable, is skipped and told.
    const rotated = await call(wrong.made.service, 'POST', `/v1/subscriptions/${id}/secret/rotate`);
    expect(rotated.status).toBe(200);
    const second = rotated.body.secret as string;
    wrong.made.errors.length = 0;
    const recovered = await deliverOne(wrong.made, wrong.queue, id);
    expect(recovered.report.outcome).toBe('delivered');
    const request = wrong.made.sent.at(-1)!;
    expect(
      verifyWebhook(request.body, request.headers, { secrets: second, clock: wrong.made.clock }).ok,
    ).toBe(true);
    expect(
      verifyWebhook(request.body, request.headers, { secrets: first, clock: wrong.made.clock }).ok,
    ).toBe(false);
    expect(cipherErrors(wrong.made.errors).map((e) => e.subscriptionId)).toEqual([id]);
    await wrong.made.service.close();

    // With [B, A] every secret reads: nothing reported, both secrets sign during the grace.
    const both = await serviceOn(name, schema, [B, A]);
    await both.made.service.start();
    expect(cipherErrors(both.made.errors)).toEqual([]);
    const signed = await deliverOne(both.made, both.queue, id);
    expect(signed.report.outcome).toBe('delivered');
    const last = both.made.sent.at(-1)!;
    for (const secret of [first, second]) {
      expect(
        verifyWebhook(last.body, last.headers, { secrets: secret, clock: both.made.clock }).ok,
      ).toBe(true);
    }
    expect(cipherErrors(both.made.errors)).toEqual([]);
  });

  it('another key under the same id (a new random key for demo-1) is told as not authentic', async () => {
    const schema = databases.schema();
    const before = await serviceOn(name, schema, [A]);
    const created = await call(before.made.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(),
    });
    await before.made.service.close();
    const again = await serviceOn(name, schema, [A_AGAIN]);
    await again.made.service.start();
    expect(cipherErrors(again.made.errors).map((e) => [e.subscriptionId, e.code])).toEqual([
      [created.body.id, 'secret_not_authentic'],
    ]);
    const failed = await deliverOne(again.made, again.queue, created.body.id);
    expect(failed.report).toMatchObject({ outcome: 'failed', reason: 'secret_unreadable' });
  });

  it('without keys at all, encrypted secrets are reported (no_secret_keys), and a deleted subscription still ends no_secret', async () => {
    const schema = databases.schema();
    const before = await serviceOn(name, schema, [A]);
    const created = await call(before.made.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(),
    });
    await before.made.service.close();
    const repository = await PostgresSubscriptionRepository.open({
      database: databases.database(name),
      schema,
    });
    const queue = heldQueue();
    const made = closing({ repository, queue: queue.make, onWarning: () => undefined });
    await made.service.start();
    expect(cipherErrors(made.errors).map((e) => [e.subscriptionId, e.code])).toEqual([
      [created.body.id, 'no_secret_keys'],
    ]);
    const failed = await deliverOne(made, queue, created.body.id);
    expect(failed.report).toMatchObject({ outcome: 'failed', reason: 'secret_unreadable' });
    // Deleted: no secret at all, as before.
    const job = queue.held.jobs.at(-1)!;
    expect(
      (await call(made.service, 'DELETE', `/v1/subscriptions/${created.body.id}`)).status,
    ).toBe(204);
    const gone = await queue.held.deliverer!.attempt(job);
    expect(gone.report).toMatchObject({ outcome: 'failed', reason: 'no_secret' });
  });
});
