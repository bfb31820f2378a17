/**
 * The outbox part of the repository contract, one test per sentence of the doc comments of
 * `recordMessage`, `claimDeliveries`, `recordAttempt` (how it moves a delivery and the endpoint's
 * health), `replay`, `deliveryStatus`, `deleteMessagesBefore` and of a disable's reason. Claims
 * made at once run at once where the repository can (a PostgreSQL pool). Declared by
 * `subscriptionRepositoryContract`.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type {
  DeliveryAttempt,
  OutboxMessage,
  PendingDelivery,
  SubscriptionRepository,
} from '../../src/index.js';
import {
  anAttempt,
  aSubscription,
  created,
  iso,
  type RepositoryTest,
  T0,
} from './subscription-repository-fixtures.js';

const MINUTE = 60_000;
const LEASE = 5 * MINUTE;

/** A message of `acme` published at T0, with a fresh id. */
function aMessage(fields: Partial<OutboxMessage> = {}): OutboxMessage {
  const id = fields.id ?? `msg_${randomUUID()}`;
  return {
    accountCode: 'acme',
    id,
    kind: 'folio/created',
    propertyId: 'MUC',
    body: JSON.stringify({ type: 'folio/created', id }),
    createdAt: T0,
    ...fields,
  };
}

/** The delivery of a message to a subscription, to the endpoint it had then. */
const to = (subscriptionId: string) => ({
  subscriptionId,
  endpointUrl: `https://hooks.example.com/${subscriptionId}`,
});

/** An attempt of a message to a subscription whose request was sent and failed (503). */
function failedSend(
  messageId: string,
  subscriptionId: string,
  fields: Partial<DeliveryAttempt> = {},
): DeliveryAttempt {
  return anAttempt(subscriptionId, {
    id: messageId,
    status: 503,
    durationMs: 12,
    outcome: 'retry',
    nextAttemptAt: (fields.at ?? T0) + MINUTE,
    ...fields,
  });
}

/** An attempt as `fields` say, without a receiver's status (none answered). */
function unanswered(attempt: DeliveryAttempt): DeliveryAttempt {
  const { status: _, ...rest } = attempt;
  return rest;
}

/** An attempt that was sent and delivered. */
const deliveredSend = (
  messageId: string,
  subscriptionId: string,
  fields: Partial<DeliveryAttempt> = {},
): DeliveryAttempt =>
  anAttempt(subscriptionId, { id: messageId, durationMs: 8, outcome: 'delivered', ...fields });

/**
 * The deliveries a claim at `dueBy` takes, leased only until `dueBy`: a later claim takes them
 * again, so looking at non-decreasing times changes nothing a test looks at.
 */
const claimable = (repository: SubscriptionRepository, dueBy: number) =>
  repository.claimDeliveries({ dueBy, leaseUntil: dueBy, limit: 1_000 });

/** Message and subscription of each delivery, to compare sets. */
const keys = (deliveries: readonly PendingDelivery[]) =>
  deliveries.map((d) => `${d.accountCode}/${d.messageId}/${d.subscriptionId}`);

/** Live subscriptions of acme, created enabled. */
async function subscriptions(repository: SubscriptionRepository, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await created(repository, aSubscription())).id);
  return ids;
}

/** Declares the outbox's tests with the contract's `test`. */
export function subscriptionOutboxContract(test: RepositoryTest): void {
  describe('recordMessage', () => {
    test('keeps the message and one pending delivery per subscription, due at createdAt and leased until leaseUntil', async (repository) => {
      const message = aMessage({ createdAt: T0 + 1_000 });
      await repository.recordMessage(message, [to('a'), to('b')], { leaseUntil: T0 + LEASE });
      expect(await repository.deliveryStatus('acme', message.id, 'a')).toBe('pending');
      expect(await repository.deliveryStatus('acme', message.id, 'b')).toBe('pending');
      // Leased: no claim takes them before the lease, whatever their due time.
      expect(await claimable(repository, T0 + LEASE - 1)).toEqual([]);
      // Not due before createdAt, even with its lease given back.
      expect(await repository.releaseLeases?.(T0 + 999)).toBe(0);
      expect(await claimable(repository, T0 + 999)).toEqual([]);
      const taken = await claimable(repository, T0 + LEASE);
      expect([...taken].sort((x, y) => x.subscriptionId.localeCompare(y.subscriptionId))).toEqual(
        ['a', 'b'].map((id) => ({
          accountCode: 'acme',
          messageId: message.id,
          subscriptionId: id,
          endpointUrl: `https://hooks.example.com/${id}`,
          body: message.body,
          attempts: 0,
          replay: 0,
          nextAttemptAt: T0 + 1_000,
        })),
      );
      expect(taken[0]).not.toHaveProperty('firstAttemptAt');
    });

    test('recording the account’s message id again changes nothing', async (repository) => {
      const message = aMessage();
      await repository.recordMessage(message, [to('a')], { leaseUntil: T0 });
      await repository.recordAttempt('acme', deliveredSend(message.id, 'a'));
      await repository.recordMessage(
        { ...message, body: '{"changed":true}', createdAt: T0 - MINUTE },
        [to('a'), to('b')],
        { leaseUntil: T0 - MINUTE },
      );
      expect(await repository.deliveryStatus('acme', message.id, 'a')).toBe('delivered');
      expect(await repository.deliveryStatus('acme', message.id, 'b')).toBeUndefined();
      expect(await claimable(repository, T0 + LEASE)).toEqual([]);
    });

    test('the same message id in another account is another message', async (repository) => {
      const message = aMessage();
      await repository.recordMessage(message, [to('a')], { leaseUntil: T0 });
      await repository.recordMessage({ ...message, accountCode: 'globex', body: '{}' }, [to('a')], {
        leaseUntil: T0,
      });
      const taken = await claimable(repository, T0);
      expect(keys(taken).sort()).toEqual([`acme/${message.id}/a`, `globex/${message.id}/a`]);
      expect(taken.find((d) => d.accountCode === 'globex')?.body).toBe('{}');
    });

    test('two recordings of one message at once keep one of them whole, never a mix', async (repository) => {
      const message = aMessage();
      const first = ['a', 'b', 'c'];
      const second = ['d', 'e'];
      await Promise.all([
        repository.recordMessage(message, first.map(to), { leaseUntil: T0 }),
        repository.recordMessage({ ...message, body: '{"second":true}' }, second.map(to), {
          leaseUntil: T0,
        }),
      ]);
      const taken = await claimable(repository, T0);
      const ids = taken.map((d) => d.subscriptionId).sort();
      expect([first, second]).toContainEqual(ids);
      expect(new Set(taken.map((d) => d.body)).size).toBe(1);
    });

    test('a message owing no delivery is kept all the same', async (repository) => {
      const message = aMessage();
      await repository.recordMessage(message, [], { leaseUntil: T0 });
      expect(await claimable(repository, T0 + LEASE)).toEqual([]);
      expect(await repository.replay('acme', { messageId: message.id }, plan())).toEqual({
        found: true,
        total: 0,
        due: [],
      });
    });
  });

  describe('recordMessage with an idempotency key', () => {
    const DAY = 24 * 60 * MINUTE;
    /** The key `order-1` of a message published at `createdAt`, held for a day. */
    const keyOf = (createdAt: number, fingerprint = 'f1', key = 'order-1') => ({
      key,
      fingerprint,
      expiresAt: createdAt + DAY,
    });

    test('a key the account does not hold takes the message, its deliveries recorded, and answers it', async (repository) => {
      const message = aMessage();
      const kept = await repository.recordMessage(message, [to('a'), to('b')], {
        leaseUntil: T0,
        key: keyOf(T0),
      });
      expect(kept).toEqual({ messageId: message.id, fingerprint: 'f1', deliveries: ['a', 'b'] });
      expect(keys(await claimable(repository, T0)).sort()).toEqual([
        `acme/${message.id}/a`,
        `acme/${message.id}/b`,
      ]);
    });

    test('a key that holds a message until after createdAt answers that message and records nothing, whatever the fingerprint', async (repository) => {
      const first = aMessage();
      await repository.recordMessage(first, [to('a')], { leaseUntil: T0, key: keyOf(T0) });
      for (const fingerprint of ['f1', 'f2']) {
        const again = aMessage({ createdAt: T0 + DAY - 1 });
        const kept = await repository.recordMessage(again, [to('a'), to('b')], {
          leaseUntil: T0,
          key: keyOf(again.createdAt, fingerprint),
        });
        expect(kept).toEqual({ messageId: first.id, fingerprint: 'f1', deliveries: ['a'] });
        expect(await repository.deliveryStatus('acme', again.id, 'a')).toBeUndefined();
        expect(await repository.replay('acme', { messageId: again.id }, plan())).toMatchObject({
          found: false,
        });
      }
      expect(keys(await claimable(repository, T0 + DAY))).toEqual([`acme/${first.id}/a`]);
    });

    test('a key expired by createdAt takes the new message, which is recorded; the old one stays', async (repository) => {
      const first = aMessage();
      await repository.recordMessage(first, [to('a')], { leaseUntil: T0, key: keyOf(T0) });
      const later = aMessage({ createdAt: T0 + DAY });
      const kept = await repository.recordMessage(later, [to('b')], {
        leaseUntil: T0 + DAY,
        key: keyOf(later.createdAt, 'f2'),
      });
      expect(kept).toEqual({ messageId: later.id, fingerprint: 'f2', deliveries: ['b'] });
      expect(await repository.deliveryStatus('acme', first.id, 'a')).toBe('pending');
      expect(await repository.deliveryStatus('acme', later.id, 'b')).toBe('pending');
      // And the new message holds the key for its own window.
      const third = aMessage({ createdAt: T0 + DAY + 1 });
      expect(
        await repository.recordMessage(third, [], { leaseUntil: T0, key: keyOf(third.createdAt) }),
      ).toEqual(kept);
    });

    test('a message owing no delivery takes the key all the same, and is kept', async (repository) => {
      const message = aMessage();
      const kept = await repository.recordMessage(message, [], { leaseUntil: T0, key: keyOf(T0) });
      expect(kept).toEqual({ messageId: message.id, fingerprint: 'f1', deliveries: [] });
      expect(await repository.replay('acme', { messageId: message.id }, plan())).toMatchObject({
        found: true,
      });
    });

    test('keys are the account’s own, and a message without a key answers undefined', async (repository) => {
      const acme = aMessage();
      const globex = aMessage({ accountCode: 'globex' });
      await repository.recordMessage(acme, [to('a')], { leaseUntil: T0, key: keyOf(T0) });
      const kept = await repository.recordMessage(globex, [to('a')], {
        leaseUntil: T0,
        key: keyOf(T0),
      });
      expect(kept?.messageId).toBe(globex.id);
      expect(await repository.recordMessage(aMessage(), [to('a')], { leaseUntil: T0 })).toBe(
        undefined,
      );
    });

    test('recordings at once with one key record one message, and every one answers it', async (repository) => {
      const messages = Array.from({ length: 8 }, () => aMessage());
      const answers = await Promise.all(
        messages.map((message, i) =>
          repository.recordMessage(message, [to(`s${i}`)], { leaseUntil: T0, key: keyOf(T0) }),
        ),
      );
      const winner = answers[0];
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
      expect(messages.map((m) => m.id)).toContain(winner?.messageId);
      const taken = await claimable(repository, T0);
      expect(keys(taken)).toEqual([`acme/${winner?.messageId}/${winner?.deliveries[0]}`]);
    });

    test('deleteExpiredKeys deletes the keys expired by at, at most limit; a deleted key is free again', async (repository) => {
      if (repository.deleteExpiredKeys === undefined) return;
      const messages = [0, 1, 2].map((i) => aMessage({ createdAt: T0 + i }));
      for (const [i, message] of messages.entries()) {
        await repository.recordMessage(message, [], {
          leaseUntil: T0,
          key: keyOf(message.createdAt, 'f1', `k${i}`),
        });
      }
      expect(await repository.deleteExpiredKeys(T0 + DAY + 1, 1)).toBe(1);
      expect(await repository.deleteExpiredKeys(T0 + DAY + 1, 10)).toBe(1);
      expect(await repository.deleteExpiredKeys(T0 + DAY + 1, 10)).toBe(0);
      // k2 is held still, even by a message published before it expired.
      const again = aMessage({ createdAt: T0 });
      expect(
        (await repository.recordMessage(again, [], { leaseUntil: T0, key: keyOf(T0, 'f', 'k2') }))
          ?.messageId,
      ).toBe(messages[2]?.id);
      // k0 is free: a message published before its old expiry takes it.
      expect(
        (await repository.recordMessage(again, [], { leaseUntil: T0, key: keyOf(T0, 'f', 'k0') }))
          ?.messageId,
      ).toBe(again.id);
    });
  });

  describe('claimDeliveries', () => {
    test('takes those due at or before dueBy whose lease has passed, those due first first, at most limit', async (repository) => {
      const times = [T0 + 3_000, T0 + 1_000, T0 + 2_000, T0 + 4_000];
      const messages = times.map((createdAt) => aMessage({ createdAt }));
      for (const message of messages) {
        await repository.recordMessage(message, [to('a')], { leaseUntil: message.createdAt });
      }
      const claim = { dueBy: T0 + 3_000, leaseUntil: T0 + LEASE };
      const firstTwo = await repository.claimDeliveries({ ...claim, limit: 2 });
      expect(firstTwo.map((d) => d.nextAttemptAt)).toEqual([T0 + 1_000, T0 + 2_000]);
      // Those are leased now: the next claim takes the one due after them, and not the one due
      // after dueBy.
      const rest = await repository.claimDeliveries({ ...claim, limit: 10 });
      expect(rest.map((d) => d.nextAttemptAt)).toEqual([T0 + 3_000]);
      expect(await repository.claimDeliveries({ ...claim, limit: 10 })).toEqual([]);
    });

    test('leases what it takes until leaseUntil: no claim takes it before, one at leaseUntil does', async (repository) => {
      const message = aMessage();
      await repository.recordMessage(message, [to('a')], { leaseUntil: T0 });
      expect(
        await repository.claimDeliveries({ dueBy: T0, leaseUntil: T0 + LEASE, limit: 10 }),
      ).toHaveLength(1);
      expect(await claimable(repository, T0 + LEASE - 1)).toEqual([]);
      expect(keys(await claimable(repository, T0 + LEASE))).toEqual([`acme/${message.id}/a`]);
    });

    test('releaseLeases gives back the lease of every pending delivery due by then, whoever held it; a claim takes each once', async (repository) => {
      const due = aMessage({ createdAt: T0 });
      const later = aMessage({ createdAt: T0 + MINUTE });
      await repository.recordMessage(due, [to('a'), to('b')], { leaseUntil: T0 + LEASE });
      await repository.recordMessage(later, [to('a')], { leaseUntil: T0 + LEASE });
      expect(repository.releaseLeases).toBeTypeOf('function');
      expect(await repository.releaseLeases?.(T0)).toBe(2);
      // Given back already: counted once.
      expect(await repository.releaseLeases?.(T0)).toBe(0);
      const first = await repository.claimDeliveries({
        dueBy: T0,
        leaseUntil: T0 + 2 * LEASE,
        limit: 1,
      });
      const second = await repository.claimDeliveries({
        dueBy: T0,
        leaseUntil: T0 + 2 * LEASE,
        limit: 10,
      });
      expect(keys([...first, ...second]).sort()).toEqual([`acme/${due.id}/a`, `acme/${due.id}/b`]);
      // The one not due keeps its lease; the claimed ones hold the claim's.
      expect(await claimable(repository, T0 + LEASE - 1)).toEqual([]);
      expect(keys(await claimable(repository, T0 + LEASE))).toEqual([`acme/${later.id}/a`]);
      expect((await claimable(repository, T0 + 2 * LEASE)).length).toBe(3);
    });

    test('a released claim takes only deliveries whose lease was given back, due or not, each once; a record after the release keeps its lease', async (repository) => {
      const due = aMessage({ createdAt: T0 });
      const later = aMessage({ createdAt: T0 + 10 * MINUTE });
      await repository.recordMessage(due, [to('a'), to('b')], { leaseUntil: T0 + LEASE });
      await repository.recordMessage(later, [to('a')], { leaseUntil: T0 + 10 * MINUTE + LEASE });
      expect(await repository.releaseLeases?.(Number.MAX_SAFE_INTEGER)).toBe(3);
      // Recorded after the release (this process's own publish): not the predecessor's.
      const own = aMessage({ createdAt: T0 });
      await repository.recordMessage(own, [to('c')], { leaseUntil: T0 + LEASE });
      const sweep = {
        dueBy: Number.MAX_SAFE_INTEGER,
        leaseUntil: T0 + LEASE,
        limit: 2,
        released: true,
      };
      const first = await repository.claimDeliveries(sweep);
      const second = await repository.claimDeliveries(sweep);
      expect(first).toHaveLength(2);
      expect(keys([...first, ...second]).sort()).toEqual(
        [`acme/${due.id}/a`, `acme/${due.id}/b`, `acme/${later.id}/a`].sort(),
      );
      expect(await repository.claimDeliveries(sweep)).toEqual([]);
      // The not-yet-due one comes back with its due time, for the queue to wait for it.
      expect([...first, ...second].find((p) => p.messageId === later.id)?.nextAttemptAt).toBe(
        T0 + 10 * MINUTE,
      );
    });

    test('releaseDeliveries gives back the lease it names, from the due time; another lease is kept', async (repository) => {
      const message = aMessage({ createdAt: T0 });
      await repository.recordMessage(message, [to('a'), to('b')], { leaseUntil: T0 + LEASE });
      const key = (subscriptionId: string) => ({
        accountCode: 'acme',
        messageId: message.id,
        subscriptionId,
      });
      expect(repository.releaseDeliveries).toBeTypeOf('function');
      // Another lease than the delivery's: nothing changes.
      await repository.releaseDeliveries?.([key('a'), key('b')], T0 + LEASE + 1);
      expect(await claimable(repository, T0)).toEqual([]);
      await repository.releaseDeliveries?.([key('a')], T0 + LEASE);
      expect(keys(await claimable(repository, T0))).toEqual([`acme/${message.id}/a`]);
    });

    test('takes the due deliveries of every account', async (repository) => {
      await repository.recordMessage(aMessage(), [to('a')], { leaseUntil: T0 });
      await repository.recordMessage(aMessage({ accountCode: 'globex' }), [to('a')], {
        leaseUntil: T0,
      });
      const taken = await claimable(repository, T0);
      expect(taken.map((d) => d.accountCode).sort()).toEqual(['acme', 'globex']);
    });

    test('claims at once never take the same delivery', async (repository) => {
      const expected: string[] = [];
      for (let i = 0; i < 12; i++) {
        const message = aMessage({ createdAt: T0 + i });
        const targets = [to('a'), to('b'), to('c'), to('d')];
        await repository.recordMessage(message, targets, { leaseUntil: T0 });
        expected.push(...targets.map((d) => `acme/${message.id}/${d.subscriptionId}`));
      }
      const claim = { dueBy: T0 + 100, leaseUntil: T0 + LEASE, limit: 10 };
      const claims = await Promise.all(
        Array.from({ length: 6 }, () => repository.claimDeliveries(claim)),
      );
      const taken = claims.flatMap(keys);
      expect(new Set(taken).size).toBe(taken.length);
      // Every claim took no more than its limit; whatever they skipped is still there to take.
      for (const c of claims) expect(c.length).toBeLessThanOrEqual(10);
      const rest = keys(await repository.claimDeliveries({ ...claim, limit: 100 }));
      expect([...taken, ...rest].sort()).toEqual(expected.sort());
    });

    test('takes nothing with limit 0, and nothing delivered or failed', async (repository) => {
      const [a, b] = await subscriptions(repository, 2);
      const message = aMessage();
      await repository.recordMessage(message, [to(a!), to(b!), to('c')], { leaseUntil: T0 });
      expect(await repository.claimDeliveries({ dueBy: T0, leaseUntil: T0, limit: 0 })).toEqual([]);
      await repository.recordAttempt('acme', deliveredSend(message.id, a!));
      await repository.recordAttempt(
        'acme',
        failedSend(message.id, b!, { outcome: 'failed', reason: 'attempts_exhausted' }),
      );
      expect(keys(await claimable(repository, T0 + LEASE))).toEqual([`acme/${message.id}/c`]);
    });
  });

  describe('recordAttempt moves the delivery', () => {
    /** One message to one subscription, claimed; its id. */
    const published = async (repository: SubscriptionRepository, subscriptionId: string) => {
      const message = aMessage();
      await repository.recordMessage(message, [to(subscriptionId)], { leaseUntil: T0 });
      return message.id;
    };

    test('retry leaves it pending, due at nextAttemptAt, leased until leaseUntil, with the attempt’s count and first attempt time', async (repository) => {
      const id = await published(repository, 'a');
      await repository.recordAttempt(
        'acme',
        failedSend(id, 'a', { attempt: 1, at: T0 + 10, nextAttemptAt: T0 + MINUTE }),
        { leaseUntil: T0 + LEASE },
      );
      expect(await repository.deliveryStatus('acme', id, 'a')).toBe('pending');
      expect(await claimable(repository, T0 + MINUTE)).toEqual([]);
      const [retry] = await claimable(repository, T0 + LEASE);
      expect(retry).toMatchObject({
        attempts: 1,
        firstAttemptAt: T0 + 10,
        nextAttemptAt: T0 + MINUTE,
        replay: 0,
      });
      // A second retry keeps the round's first attempt time.
      await repository.recordAttempt(
        'acme',
        failedSend(id, 'a', { attempt: 2, at: T0 + LEASE, nextAttemptAt: T0 + 2 * LEASE }),
      );
      // Without leaseUntil, leased until nextAttemptAt: due and taken then.
      expect(await claimable(repository, T0 + 2 * LEASE - 1)).toEqual([]);
      const [again] = await claimable(repository, T0 + 2 * LEASE);
      expect(again).toMatchObject({
        attempts: 2,
        firstAttemptAt: T0 + 10,
        nextAttemptAt: T0 + 2 * LEASE,
      });
    });

    test('delivered marks it delivered; failed, disabled and lost mark it failed', async (repository) => {
      const outcomes = ['delivered', 'failed', 'disabled', 'lost'] as const;
      for (const outcome of outcomes) {
        const id = await published(repository, outcome);
        const { entry } = await repository.recordAttempt(
          'acme',
          anAttempt(outcome, { id, outcome, ...(outcome === 'delivered' ? {} : { status: 500 }) }),
        );
        expect(entry.outcome).toBe(outcome);
        expect(await repository.deliveryStatus('acme', id, outcome)).toBe(
          outcome === 'delivered' ? 'delivered' : 'failed',
        );
      }
      expect(await claimable(repository, T0 + LEASE)).toEqual([]);
    });

    test('only a pending delivery moves: a late attempt leaves one delivered or failed as it is', async (repository) => {
      const done = await published(repository, 'a');
      await repository.recordAttempt('acme', deliveredSend(done, 'a'));
      await repository.recordAttempt('acme', failedSend(done, 'a', { attempt: 2 }));
      await repository.recordAttempt('acme', failedSend(done, 'a', { outcome: 'failed' }));
      expect(await repository.deliveryStatus('acme', done, 'a')).toBe('delivered');
      const given = await published(repository, 'b');
      await repository.recordAttempt('acme', failedSend(given, 'b', { outcome: 'failed' }));
      await repository.recordAttempt('acme', failedSend(given, 'b', { attempt: 2 }));
      await repository.recordAttempt('acme', deliveredSend(given, 'b'));
      expect(await repository.deliveryStatus('acme', given, 'b')).toBe('failed');
      expect(await claimable(repository, T0 + LEASE)).toEqual([]);
    });

    test('only an attempt of the delivery’s replay round moves it', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const id = await published(repository, a!);
      await repository.recordAttempt('acme', failedSend(id, a!, { outcome: 'failed' }));
      await repository.replay('acme', { messageId: id }, plan({ at: T0 + MINUTE }));
      // An attempt of the publish's round, late, leaves the replay's delivery pending.
      await repository.recordAttempt('acme', deliveredSend(id, a!, { at: T0 + MINUTE }));
      expect(await repository.deliveryStatus('acme', id, a!)).toBe('pending');
      await repository.recordAttempt('acme', deliveredSend(id, a!, { replay: 2 }));
      expect(await repository.deliveryStatus('acme', id, a!)).toBe('pending');
      await repository.recordAttempt('acme', deliveredSend(id, a!, { replay: 1 }));
      expect(await repository.deliveryStatus('acme', id, a!)).toBe('delivered');
    });

    test('an attempt of another account’s message moves nothing of this one', async (repository) => {
      const id = await published(repository, 'a');
      await repository.recordAttempt('globex', deliveredSend(id, 'a'));
      expect(await repository.deliveryStatus('acme', id, 'a')).toBe('pending');
    });

    test('an attempt of a message the outbox does not hold is logged all the same', async (repository) => {
      const { entry } = await repository.recordAttempt('acme', deliveredSend('msg_unknown', 'a'));
      expect(await repository.attempts('acme', { limit: 10 })).toEqual([entry]);
      expect(await repository.deliveryStatus('acme', 'msg_unknown', 'a')).toBeUndefined();
    });
  });

  describe('recordAttempt and the endpoint’s health', () => {
    test('an attempt sent and not delivered starts the streak; later ones extend it; each message counts once', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const [m1, m2] = [aMessage(), aMessage()];
      for (const m of [m1, m2]) await repository.recordMessage(m, [to(a!)], { leaseUntil: T0 });
      const first = await repository.recordAttempt('acme', failedSend(m1.id, a!, { at: T0 + 5 }));
      expect(first.health).toEqual({ failingSince: T0 + 5, failedMessages: 1 });
      const again = await repository.recordAttempt(
        'acme',
        failedSend(m1.id, a!, { attempt: 2, at: T0 + MINUTE }),
      );
      expect(again.health).toEqual({ failingSince: T0 + 5, failedMessages: 1 });
      const other = await repository.recordAttempt(
        'acme',
        failedSend(m2.id, a!, { at: T0 + 2 * MINUTE, outcome: 'failed', status: 500 }),
      );
      expect(other.health).toEqual({ failingSince: T0 + 5, failedMessages: 2 });
    });

    test('a timeout, an error answer and a 410 are failures when the request was sent', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const messages = [aMessage(), aMessage(), aMessage()];
      for (const m of messages) await repository.recordMessage(m, [to(a!)], { leaseUntil: T0 });
      const sent: Partial<DeliveryAttempt>[] = [
        { error: { code: 'timeout', message: 'No answer.' }, durationMs: 15 },
        { status: 500, outcome: 'failed', reason: 'attempts_exhausted' },
        { status: 410, outcome: 'disabled', reason: 'gone' },
      ];
      let health: unknown;
      for (const [i, fields] of sent.entries()) {
        const m = messages[i]!;
        const attempt = failedSend(m.id, a!, { at: T0 + i, ...fields });
        ({ health } = await repository.recordAttempt(
          'acme',
          fields.status === undefined ? unanswered(attempt) : attempt,
        ));
      }
      expect(health).toEqual({ failingSince: T0, failedMessages: 3 });
    });

    test('an attempt that sent nothing leaves the health as it is', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const [m1, m2] = [aMessage(), aMessage()];
      for (const m of [m1, m2]) await repository.recordMessage(m, [to(a!)], { leaseUntil: T0 });
      const unsent = (id: string, at: number) =>
        unanswered(
          anAttempt(a!, {
            id,
            at,
            error: { code: 'forbidden_address', message: 'Refused.' },
            outcome: 'failed',
            reason: 'forbidden_address',
          }),
        );
      expect((await repository.recordAttempt('acme', unsent(m1.id, T0))).health).toEqual({
        failedMessages: 0,
      });
      await repository.recordAttempt('acme', failedSend(m2.id, a!, { at: T0 + 1 }));
      const after = await repository.recordAttempt(
        'acme',
        unanswered(anAttempt(a!, { id: m2.id, at: T0 + 2, outcome: 'lost' })),
      );
      expect(after.health).toEqual({ failingSince: T0 + 1, failedMessages: 1 });
    });

    test('a delivered attempt ends the streak; the next failure starts another, counting its messages afresh', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const [m1, m2] = [aMessage(), aMessage()];
      for (const m of [m1, m2]) await repository.recordMessage(m, [to(a!)], { leaseUntil: T0 });
      await repository.recordAttempt('acme', failedSend(m1.id, a!, { at: T0 }));
      const ended = await repository.recordAttempt(
        'acme',
        deliveredSend(m2.id, a!, { at: T0 + MINUTE }),
      );
      expect(ended.health).toEqual({ failedMessages: 0 });
      const next = await repository.recordAttempt(
        'acme',
        failedSend(m1.id, a!, { attempt: 2, at: T0 + 2 * MINUTE }),
      );
      expect(next.health).toEqual({ failingSince: T0 + 2 * MINUTE, failedMessages: 1 });
    });

    test('a delivered attempt that ends a streak tells the streak as it stood; one that ends none tells nothing', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const [m1, m2, m3] = [aMessage(), aMessage(), aMessage()];
      for (const m of [m1, m2, m3]) {
        await repository.recordMessage(m, [to(a!)], { leaseUntil: T0 });
      }
      const failed = [
        await repository.recordAttempt('acme', failedSend(m1.id, a!, { at: T0 + 5 })),
        await repository.recordAttempt('acme', failedSend(m2.id, a!, { at: T0 + MINUTE })),
      ];
      for (const record of failed) expect(record).not.toHaveProperty('ended');
      const recovered = await repository.recordAttempt(
        'acme',
        deliveredSend(m3.id, a!, { at: T0 + 2 * MINUTE }),
      );
      expect(recovered.ended).toEqual({ failingSince: T0 + 5, failedMessages: 2 });
      expect(recovered.health).toEqual({ failedMessages: 0 });
      const healthy = await repository.recordAttempt(
        'acme',
        deliveredSend(m1.id, a!, { attempt: 2, at: T0 + 3 * MINUTE }),
      );
      expect(healthy).not.toHaveProperty('ended');
    });

    test('attempts recorded at once each tell the streak they ended, if any', async (repository) => {
      const [a, b, c] = await subscriptions(repository, 3);
      const [m1, m2, m3] = [aMessage(), aMessage(), aMessage()];
      for (const m of [m1, m2, m3]) {
        await repository.recordMessage(m, [to(a!), to(b!), to(c!)], { leaseUntil: T0 });
      }
      await repository.recordAttempt('acme', failedSend(m1.id, a!, { at: T0 }));
      await repository.recordAttempt('acme', failedSend(m2.id, a!, { at: T0 + 1 }));
      const [endsA, healthyB, failsC, endsC] = await Promise.all([
        repository.recordAttempt('acme', deliveredSend(m3.id, a!, { at: T0 + MINUTE })),
        repository.recordAttempt('acme', deliveredSend(m3.id, b!, { at: T0 + MINUTE })),
        repository.recordAttempt('acme', failedSend(m1.id, c!, { at: T0 + MINUTE })),
        repository.recordAttempt('acme', deliveredSend(m2.id, c!, { at: T0 + MINUTE + 1 })),
      ]);
      expect(endsA?.ended).toEqual({ failingSince: T0, failedMessages: 2 });
      expect(healthyB).not.toHaveProperty('ended');
      expect(failsC).not.toHaveProperty('ended');
      expect(endsC?.ended).toEqual({ failingSince: T0 + MINUTE, failedMessages: 1 });
      for (const record of [endsA, healthyB, endsC]) {
        expect(record?.health).toEqual({ failedMessages: 0 });
      }
    });

    test('each subscription has its own streak, in each account', async (repository) => {
      const [a, b] = await subscriptions(repository, 2);
      await created(repository, aSubscription({ id: a!, accountCode: 'globex' }));
      const m = aMessage();
      await repository.recordMessage(m, [to(a!), to(b!)], { leaseUntil: T0 });
      await repository.recordAttempt('acme', failedSend(m.id, a!, { at: T0 }));
      const theirs = await repository.recordAttempt(
        'globex',
        deliveredSend(m.id, a!, { at: T0 + 1 }),
      );
      expect(theirs.health).toEqual({ failedMessages: 0 });
      expect((await repository.recordAttempt('acme', deliveredSend(m.id, b!))).health).toEqual({
        failedMessages: 0,
      });
      const mine = await repository.recordAttempt(
        'acme',
        failedSend(m.id, a!, { attempt: 2, at: T0 + 2 }),
      );
      expect(mine.health).toEqual({ failingSince: T0, failedMessages: 1 });
    });

    test('enabling the subscription starts the streak afresh; disabling keeps it', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const m = aMessage();
      await repository.recordMessage(m, [to(a!)], { leaseUntil: T0 });
      await repository.recordAttempt('acme', failedSend(m.id, a!, { at: T0 }));
      await repository.update('acme', a!, { status: 'disabled' }, T0 + 1);
      const kept = await repository.recordAttempt(
        'acme',
        failedSend(m.id, a!, { attempt: 2, at: T0 + 2 }),
      );
      expect(kept.health).toEqual({ failingSince: T0, failedMessages: 1 });
      await repository.update('acme', a!, { status: 'enabled' }, T0 + 3);
      const fresh = await repository.recordAttempt(
        'acme',
        failedSend(m.id, a!, { attempt: 3, at: T0 + 4 }),
      );
      expect(fresh.health).toEqual({ failingSince: T0 + 4, failedMessages: 1 });
    });

    test('deleting the subscription clears its streak', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const m = aMessage();
      await repository.recordMessage(m, [to(a!)], { leaseUntil: T0 });
      await repository.recordAttempt('acme', failedSend(m.id, a!, { at: T0 }));
      await repository.delete('acme', a!, T0 + 1);
      await created(repository, aSubscription({ id: a! }), { at: T0 + 2 });
      const fresh = await repository.recordAttempt(
        'acme',
        failedSend(m.id, a!, { attempt: 2, at: T0 + 3 }),
      );
      expect(fresh.health).toEqual({ failingSince: T0 + 3, failedMessages: 1 });
    });
  });

  describe('replay', () => {
    /**
     * A message of acme to subscriptions whose deliveries end `failed`, `delivered` or stay
     * pending, as `ends` says (in order, one subscription each).
     */
    const deliveries = async (
      repository: SubscriptionRepository,
      ends: readonly ('failed' | 'delivered' | 'pending')[],
      message = aMessage(),
    ) => {
      const ids = await subscriptions(repository, ends.length);
      await repository.recordMessage(message, ids.map(to), { leaseUntil: T0 });
      for (const [i, end] of ends.entries()) {
        const id = ids[i]!;
        if (end === 'failed') {
          await repository.recordAttempt(
            message.accountCode,
            failedSend(message.id, id, { attempt: 3, outcome: 'failed' }),
          );
        }
        if (end === 'delivered') {
          await repository.recordAttempt(message.accountCode, deliveredSend(message.id, id));
        }
      }
      return { message, ids };
    };

    test('of a message: sets its failed deliveries pending again, in the next round, with no attempts', async (repository) => {
      const { message, ids } = await deliveries(repository, ['failed', 'delivered', 'pending']);
      const [failed, delivered, pending] = ids;
      const result = await repository.replay(
        'acme',
        { messageId: message.id },
        plan({ at: T0 + MINUTE }),
      );
      expect(result).toEqual({
        found: true,
        total: 1,
        due: [
          {
            accountCode: 'acme',
            messageId: message.id,
            subscriptionId: failed,
            endpointUrl: `https://hooks.example.com/${failed}`,
            body: message.body,
            attempts: 0,
            replay: 1,
            nextAttemptAt: T0 + MINUTE,
          },
        ],
      });
      expect(await repository.deliveryStatus('acme', message.id, failed!)).toBe('pending');
      expect(await repository.deliveryStatus('acme', message.id, delivered!)).toBe('delivered');
      expect(await repository.deliveryStatus('acme', message.id, pending!)).toBe('pending');
      // Failed again and replayed again: replay 2.
      await repository.recordAttempt(
        'acme',
        failedSend(message.id, failed!, { replay: 1, outcome: 'failed' }),
      );
      const again = await repository.replay(
        'acme',
        { messageId: message.id },
        plan({ at: T0 + 2 * MINUTE }),
      );
      expect(again.due.map((d) => d.replay)).toEqual([2]);
    });

    test('of a message: only to enabled subscriptions that are not deleted', async (repository) => {
      const { message, ids } = await deliveries(repository, ['failed', 'failed', 'failed']);
      const [live, disabled, deleted] = ids;
      await repository.update('acme', disabled!, { status: 'disabled' }, T0 + 1);
      await repository.delete('acme', deleted!, T0 + 1);
      const result = await repository.replay('acme', { messageId: message.id }, plan());
      expect(result.total).toBe(1);
      expect(result.due.map((d) => d.subscriptionId)).toEqual([live]);
      expect(await repository.deliveryStatus('acme', message.id, disabled!)).toBe('failed');
      expect(await repository.deliveryStatus('acme', message.id, deleted!)).toBe('failed');
    });

    test('of a message: found false for a message the account does not have, true with nothing failed', async (repository) => {
      const { message } = await deliveries(repository, ['delivered']);
      expect(await repository.replay('acme', { messageId: 'msg_unknown' }, plan())).toEqual({
        found: false,
        total: 0,
        due: [],
      });
      expect(await repository.replay('globex', { messageId: message.id }, plan())).toEqual({
        found: false,
        total: 0,
        due: [],
      });
      expect(await repository.replay('acme', { messageId: message.id }, plan())).toEqual({
        found: true,
        total: 0,
        due: [],
      });
    });

    test('never touches another account’s deliveries', async (repository) => {
      const { message, ids } = await deliveries(repository, ['failed']);
      const [id] = ids;
      await created(repository, aSubscription({ id: id!, accountCode: 'globex' }));
      const theirs = { ...message, accountCode: 'globex' };
      await repository.recordMessage(theirs, [to(id!)], { leaseUntil: T0 });
      await repository.recordAttempt('globex', failedSend(message.id, id!, { outcome: 'failed' }));
      expect((await repository.replay('acme', { messageId: message.id }, plan())).total).toBe(1);
      expect(
        (await repository.replay('acme', { subscriptionId: id!, since: 0 }, plan())).total,
      ).toBe(0);
      expect(await repository.deliveryStatus('globex', message.id, id!)).toBe('failed');
    });

    test('of a subscription: its failed deliveries of messages published at or after since, oldest first', async (repository) => {
      const [a, b] = await subscriptions(repository, 2);
      const times = [T0 + 3 * MINUTE, T0 - MINUTE, T0 + MINUTE, T0, T0 + 2 * MINUTE];
      const messages = times.map((createdAt) => aMessage({ createdAt }));
      for (const m of messages) {
        await repository.recordMessage(m, [to(a!), to(b!)], { leaseUntil: T0 });
        for (const id of [a!, b!]) {
          await repository.recordAttempt('acme', failedSend(m.id, id, { outcome: 'failed' }));
        }
      }
      // The one at T0 + 2 minutes was delivered on a replay already.
      const delivered = messages[4]!;
      await repository.replay('acme', { messageId: delivered.id }, plan());
      await repository.recordAttempt('acme', deliveredSend(delivered.id, a!, { replay: 1 }));
      const result = await repository.replay(
        'acme',
        { subscriptionId: a!, since: T0 },
        plan({ at: T0 + LEASE, inline: 10 }),
      );
      expect(result.found).toBe(true);
      expect(result.total).toBe(3);
      expect(result.due.map((d) => [d.messageId, d.nextAttemptAt])).toEqual(
        [T0, T0 + MINUTE, T0 + 3 * MINUTE].map((t) => [messages[times.indexOf(t)]!.id, T0 + LEASE]),
      );
      expect(result.due.every((d) => d.subscriptionId === a)).toBe(true);
      expect(await repository.deliveryStatus('acme', messages[1]!.id, a!)).toBe('failed');
      expect(await repository.deliveryStatus('acme', messages[0]!.id, b!)).toBe('failed');
    });

    test('of a subscription: found, and nothing set, when it is disabled, deleted or unknown', async (repository) => {
      const { ids, message } = await deliveries(repository, ['failed', 'failed']);
      const [disabled, deleted] = ids;
      await repository.update('acme', disabled!, { status: 'disabled' }, T0 + 1);
      await repository.delete('acme', deleted!, T0 + 1);
      for (const id of [disabled!, deleted!, randomUUID()]) {
        expect(await repository.replay('acme', { subscriptionId: id, since: 0 }, plan())).toEqual({
          found: true,
          total: 0,
          due: [],
        });
      }
      expect(await repository.deliveryStatus('acme', message.id, disabled!)).toBe('failed');
    });

    test('the first inline are due now and leased; the k-th of the rest is due at at + k * paceMs, not leased', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const messages = [0, 1, 2, 3].map((i) => aMessage({ createdAt: T0 + i }));
      for (const m of messages) {
        await repository.recordMessage(m, [to(a!)], { leaseUntil: T0 });
        await repository.recordAttempt('acme', failedSend(m.id, a!, { outcome: 'failed' }));
      }
      const at = T0 + LEASE;
      const result = await repository.replay(
        'acme',
        { subscriptionId: a!, since: T0 },
        { at, inline: 1, leaseUntil: at + LEASE, paceMs: 100 },
      );
      expect(result.total).toBe(4);
      expect(result.due.map((d) => [d.messageId, d.nextAttemptAt])).toEqual([
        [messages[0]!.id, at],
      ]);
      // The inline one is leased; the paced ones come due one by one, oldest first.
      expect(await claimable(repository, at)).toEqual([]);
      expect(keys(await claimable(repository, at + 100))).toEqual([`acme/${messages[1]!.id}/${a}`]);
      expect((await claimable(repository, at + 300)).map((d) => d.nextAttemptAt)).toEqual([
        at + 100,
        at + 200,
        at + 300,
      ]);
      expect((await claimable(repository, at + LEASE)).map((d) => d.messageId)).toEqual(
        messages.map((m) => m.id),
      );
    });

    test('inline 0 paces every one; the round starts afresh', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const m = aMessage();
      await repository.recordMessage(m, [to(a!)], { leaseUntil: T0 });
      await repository.recordAttempt(
        'acme',
        failedSend(m.id, a!, { attempt: 1, at: T0 + 1, nextAttemptAt: T0 + 2 }),
      );
      await repository.recordAttempt(
        'acme',
        failedSend(m.id, a!, { attempt: 2, at: T0 + 2, outcome: 'failed' }),
      );
      const at = T0 + MINUTE;
      const result = await repository.replay(
        'acme',
        { messageId: m.id },
        { at, inline: 0, leaseUntil: at + LEASE, paceMs: 50 },
      );
      expect(result).toEqual({ found: true, total: 1, due: [], pacedUntil: at + 50 });
      const [paced] = await claimable(repository, at + 50);
      expect(paced).toEqual({
        accountCode: 'acme',
        messageId: m.id,
        subscriptionId: a,
        endpointUrl: `https://hooks.example.com/${a}`,
        body: m.body,
        attempts: 0,
        replay: 1,
        nextAttemptAt: at + 50,
      });
    });
  });

  describe('replay pacing, per subscription across calls', () => {
    /** `n` messages of acme, oldest first, whose deliveries to `ids` all failed. */
    const failedMessages = async (repository: SubscriptionRepository, ids: string[], n: number) => {
      const messages = Array.from({ length: n }, (_, i) => aMessage({ createdAt: T0 + i }));
      for (const m of messages) {
        await repository.recordMessage(m, ids.map(to), { leaseUntil: T0 });
        for (const id of ids) {
          await repository.recordAttempt('acme', failedSend(m.id, id, { outcome: 'failed' }));
        }
      }
      return messages;
    };
    const pace = (at: number, inline: number) => ({
      at,
      inline,
      leaseUntil: at + LEASE,
      paceMs: 100,
    });

    test('a second replay continues after the first one’s paced deliveries, with no allowance afresh', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const messages = await failedMessages(repository, [a!], 5);
      const at = T0 + MINUTE;
      const first = await repository.replay('acme', { subscriptionId: a!, since: T0 }, pace(at, 2));
      expect(first.due.map((d) => [d.messageId, d.nextAttemptAt])).toEqual([
        [messages[0]!.id, at],
        [messages[1]!.id, at],
      ]);
      expect(first).toMatchObject({ total: 5, pacedUntil: at + 300 });
      // The two sent at once fail again; replayed 50 ms later, they are paced after the three.
      for (const d of first.due) {
        await repository.recordAttempt(
          'acme',
          failedSend(d.messageId, a!, { replay: 1, outcome: 'failed', at: at + 10 }),
        );
      }
      const second = await repository.replay(
        'acme',
        { subscriptionId: a!, since: T0 },
        pace(at + 50, 2),
      );
      // Its allowance of 2 was used at `at` and 0.5 of one is back: the first is due when it
      // is whole again, 100 ms after the first call's last.
      expect(second).toEqual({ found: true, total: 2, due: [], pacedUntil: at + 500 });
      expect((await claimable(repository, at + 400)).map((d) => d.nextAttemptAt)).toEqual([
        at + 100,
        at + 200,
        at + 300,
        at + 400,
      ]);
      expect((await claimable(repository, at + 500)).map((d) => d.nextAttemptAt)).toContain(
        at + 500,
      );
    });

    test('the allowance comes back one every paceMs', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      const messages = await failedMessages(repository, [a!], 4);
      const at = T0 + MINUTE;
      const first = await repository.replay('acme', { messageId: messages[0]!.id }, pace(at, 2));
      expect(first.due).toHaveLength(1);
      // Both used at `at`; 150 ms later one and a half are back: one due at once, the next when
      // the second is whole.
      await repository.replay('acme', { messageId: messages[1]!.id }, pace(at, 2));
      const third = await repository.replay(
        'acme',
        { messageId: messages[2]!.id },
        pace(at + 150, 2),
      );
      expect(third.due.map((d) => d.nextAttemptAt)).toEqual([at + 150]);
      const fourth = await repository.replay(
        'acme',
        { messageId: messages[3]!.id },
        pace(at + 150, 2),
      );
      expect(fourth).toEqual({ found: true, total: 1, due: [], pacedUntil: at + 200 });
      // Past when it is all back, the whole allowance again.
      for (const m of messages.slice(0, 3)) {
        await repository.recordAttempt(
          'acme',
          failedSend(m.id, a!, { replay: 1, outcome: 'failed', at: at + 160 }),
        );
      }
      const again = await repository.replay(
        'acme',
        { subscriptionId: a!, since: T0 },
        pace(at + 400, 2),
      );
      expect(again.due.map((d) => d.nextAttemptAt)).toEqual([at + 400, at + 400]);
      expect(again.pacedUntil).toBe(at + 500);
    });

    test('a message replay paces each subscription by its own allowance', async (repository) => {
      const [a, b] = await subscriptions(repository, 2);
      const messages = await failedMessages(repository, [a!, b!], 3);
      const at = T0 + MINUTE;
      // a's allowance of 1 is used by a replay of a alone.
      await repository.replay('acme', { subscriptionId: a!, since: T0 + 2 }, pace(at, 1));
      const result = await repository.replay('acme', { messageId: messages[0]!.id }, pace(at, 1));
      expect(result.total).toBe(2);
      expect(result.due.map((d) => [d.subscriptionId, d.nextAttemptAt])).toEqual([[b, at]]);
      expect(result.pacedUntil).toBe(at + 100);
    });
  });

  describe('deliveryStatus', () => {
    test('is undefined for a message, subscription or account without such a delivery', async (repository) => {
      const m = aMessage();
      await repository.recordMessage(m, [to('a')], { leaseUntil: T0 });
      expect(await repository.deliveryStatus('acme', m.id, 'a')).toBe('pending');
      expect(await repository.deliveryStatus('acme', m.id, 'b')).toBeUndefined();
      expect(await repository.deliveryStatus('acme', 'msg_unknown', 'a')).toBeUndefined();
      expect(await repository.deliveryStatus('globex', m.id, 'a')).toBeUndefined();
    });
  });

  describe('deleteMessagesBefore', () => {
    test('deletes messages of every account published before the time and owing no pending delivery, at most limit a call', async (repository) => {
      const old: OutboxMessage[] = [];
      for (const accountCode of ['acme', 'globex']) {
        for (let i = 0; i < 3; i++) {
          const m = aMessage({ accountCode, createdAt: T0 + i });
          await repository.recordMessage(m, [to('a'), to('b')], { leaseUntil: T0 });
          await repository.recordAttempt(accountCode, deliveredSend(m.id, 'a'));
          await repository.recordAttempt(accountCode, failedSend(m.id, 'b', { outcome: 'lost' }));
          old.push(m);
        }
      }
      const owing = aMessage({ createdAt: T0 });
      await repository.recordMessage(owing, [to('a'), to('b')], { leaseUntil: T0 });
      await repository.recordAttempt('acme', deliveredSend(owing.id, 'a'));
      const none = aMessage({ createdAt: T0 + 1 });
      await repository.recordMessage(none, [], { leaseUntil: T0 });
      const recent = aMessage({ createdAt: T0 + MINUTE });
      await repository.recordMessage(recent, [to('a')], { leaseUntil: T0 });
      await repository.recordAttempt('acme', deliveredSend(recent.id, 'a'));

      expect(await repository.deleteMessagesBefore(T0 + MINUTE, 4)).toBe(4);
      expect(await repository.deleteMessagesBefore(T0 + MINUTE, 4)).toBe(3);
      expect(await repository.deleteMessagesBefore(T0 + MINUTE, 4)).toBe(0);
      for (const m of old) {
        expect(await repository.deliveryStatus(m.accountCode, m.id, 'a')).toBeUndefined();
        expect(await repository.deliveryStatus(m.accountCode, m.id, 'b')).toBeUndefined();
        expect((await repository.replay(m.accountCode, { messageId: m.id }, plan())).found).toBe(
          false,
        );
      }
      expect((await repository.replay('acme', { messageId: none.id }, plan())).found).toBe(false);
      expect(await repository.deliveryStatus('acme', owing.id, 'b')).toBe('pending');
      expect(await repository.deliveryStatus('acme', recent.id, 'a')).toBe('delivered');
    });

    test('a message deleted may be recorded again', async (repository) => {
      const m = aMessage();
      await repository.recordMessage(m, [], { leaseUntil: T0 });
      expect(await repository.deleteMessagesBefore(T0 + 1, 10)).toBe(1);
      await repository.recordMessage(m, [to('a')], { leaseUntil: T0 });
      expect(await repository.deliveryStatus('acme', m.id, 'a')).toBe('pending');
    });
  });

  describe('disabled reasons', () => {
    test('disabling records the reason (requested by default) and the time; get, list and the changes show them', async (repository) => {
      const [a, b] = await subscriptions(repository, 2);
      const requested = await repository.update('acme', a!, { status: 'disabled' }, T0 + 1);
      expect(requested).toMatchObject({
        status: 'disabled',
        disabledReason: 'requested',
        disabledAt: iso(T0 + 1),
      });
      const failing = await repository.update(
        'acme',
        b!,
        { status: 'disabled', disabledReason: 'endpoint_failing' },
        T0 + 2,
      );
      expect(failing).toMatchObject({
        disabledReason: 'endpoint_failing',
        disabledAt: iso(T0 + 2),
      });
      expect(await repository.get('acme', a!)).toEqual(requested);
      expect((await repository.list('acme', { offset: 0, limit: 10 })).items).toEqual([
        requested,
        failing,
      ]);
      const changes = await repository.changesSince(0, 10);
      expect(changes.map((c) => c.subscription)).toEqual([requested, failing]);
    });

    test('other changes while disabled keep the reason and time; disabling again replaces them', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      await repository.update(
        'acme',
        a!,
        { status: 'disabled', disabledReason: 'endpoint_gone' },
        T0 + 1,
      );
      const moved = await repository.update(
        'acme',
        a!,
        { endpointUrl: 'https://hooks.example.com/moved', events: ['folio/closed'] },
        T0 + 2,
      );
      expect(moved).toMatchObject({
        disabledReason: 'endpoint_gone',
        disabledAt: iso(T0 + 1),
        updatedAt: iso(T0 + 2),
      });
      expect(await repository.get('acme', a!)).toEqual(moved);
      const again = await repository.update('acme', a!, { status: 'disabled' }, T0 + 3);
      expect(again).toMatchObject({ disabledReason: 'requested', disabledAt: iso(T0 + 3) });
    });

    test('enabling clears both; an enabled subscription has neither', async (repository) => {
      const [a] = await subscriptions(repository, 1);
      expect(await repository.get('acme', a!)).not.toHaveProperty('disabledReason');
      await repository.update(
        'acme',
        a!,
        { status: 'disabled', disabledReason: 'endpoint_failing' },
        T0 + 1,
      );
      const enabled = await repository.update('acme', a!, { status: 'enabled' }, T0 + 2);
      expect(enabled).not.toHaveProperty('disabledReason');
      expect(enabled).not.toHaveProperty('disabledAt');
      expect(await repository.get('acme', a!)).toEqual(enabled);
      const [change] = await repository.changesSince(enabled!.revision - 1, 10);
      expect(change?.subscription).toEqual(enabled);
    });
  });
}

/** A replay plan: now at T0, all inline, leased for LEASE, paced by 100 ms. */
function plan(fields: { at?: number; inline?: number } = {}) {
  const at = fields.at ?? T0;
  return { at, inline: fields.inline ?? 100, leaseUntil: at + LEASE, paceMs: 100 };
}
