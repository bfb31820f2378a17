/**
 * The behaviour every `SubscriptionRepository` must show, one test per sentence of its doc
 * comments, run against any repository a factory opens. Each test opens a fresh, empty repository
 * and closes it after, so the tests may read `changesSince(0)` whole; they assume nothing of the
 * revisions' or sequences' values beyond what the interface says (growing, from 1).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { StoredSubscription, Subscription, SubscriptionRepository } from '../../src/index.js';
import { subscriptionChangesContract } from './subscription-repository-contract-changes.js';
import { subscriptionOutboxContract } from './subscription-repository-contract-outbox.js';
import { subscriptionSettingsContract } from './subscription-repository-contract-settings.js';
import {
  aSubscription,
  created,
  iso,
  type OpenRepository,
  T0,
  withRepository,
} from './subscription-repository-fixtures.js';

export type { OpenedRepository, OpenRepository } from './subscription-repository-fixtures.js';

/** What a create must store: the subscription, enabled, changed at `at`. */
function storedFrom(subscription: Subscription, at: number): Omit<StoredSubscription, 'revision'> {
  return { signatureType: 'hmac-sha256', ...subscription, status: 'enabled', updatedAt: iso(at) };
}

/** Declares the contract's tests for a repository that `open` gives fresh and empty. */
export function subscriptionRepositoryContract(name: string, open: OpenRepository): void {
  const test = (title: string, body: (repository: SubscriptionRepository) => Promise<void>) =>
    it(title, withRepository(open, body));

  describe(`${name}: the SubscriptionRepository contract`, () => {
    test('says how secrets are kept, if it keeps them at rest', async (repository) => {
      expect([undefined, 'encrypted', 'plain']).toContain(repository.secretsAtRest);
    });

    describe('create', () => {
      test('stores the subscription enabled, with updatedAt its time and a revision', async (repository) => {
        const subscription = aSubscription({ createdAt: iso(T0 - 5_000) });
        const stored = await created(repository, subscription, { at: T0 });
        expect(stored).toEqual({ ...storedFrom(subscription, T0), revision: stored.revision });
        expect(stored).not.toHaveProperty('propertyIds');
        expect(Number.isSafeInteger(stored.revision)).toBe(true);
        expect(await repository.get('acme', subscription.id)).toEqual(stored);
      });

      test('keeps propertyIds and events in their order', async (repository) => {
        const subscription = aSubscription({
          events: ['reservation/*', 'folio/created', 'folio/charges-changed'],
          propertyIds: ['MUC', 'BER'],
        });
        const stored = await created(repository, subscription);
        expect(stored.events).toEqual(['reservation/*', 'folio/created', 'folio/charges-changed']);
        expect(stored.propertyIds).toEqual(['MUC', 'BER']);
        expect(await repository.get('acme', subscription.id)).toEqual(stored);
      });

      test('refuses with undefined when the account holds maxPerAccount already, storing nothing', async (repository) => {
        const first = await created(repository, aSubscription(), { maxPerAccount: 2 });
        await created(repository, aSubscription(), { maxPerAccount: 2 });
        const before = await repository.changesSince(0, 100);
        const third = aSubscription();
        expect(await repository.create(third, 's', { at: T0, maxPerAccount: 2 })).toBeUndefined();
        expect(await repository.get('acme', third.id)).toBeUndefined();
        expect(await repository.signingSecrets('acme', third.id, T0)).toEqual([]);
        expect((await repository.list('acme', { offset: 0, limit: 10 })).totalItems).toBe(2);
        expect(await repository.changesSince(0, 100)).toEqual(before);
        // The limit is per account, and counts what is held now.
        await created(repository, aSubscription({ accountCode: 'globex' }), { maxPerAccount: 2 });
        expect(await repository.delete('acme', first.id, T0)).toBe(true);
        await created(repository, third, { maxPerAccount: 2 });
      });

      test('a maxPerAccount of 0 refuses every create', async (repository) => {
        const subscription = aSubscription();
        expect(
          await repository.create(subscription, 's', { at: T0, maxPerAccount: 0 }),
        ).toBeUndefined();
        expect(await repository.changesSince(0, 10)).toEqual([]);
      });

      test('what it returns does not change when the caller changes its arrays later', async (repository) => {
        const events = ['folio/created', 'reservation/*'];
        const propertyIds = ['BER'];
        const subscription = aSubscription({ events, propertyIds });
        const stored = await created(repository, subscription);
        events.push('folio/closed');
        events[0] = 'unit/created';
        propertyIds.push('MUC');
        expect(stored.events).toEqual(['folio/created', 'reservation/*']);
        expect(stored.propertyIds).toEqual(['BER']);
        const read = await repository.get('acme', subscription.id);
        expect(read?.events).toEqual(['folio/created', 'reservation/*']);
        expect(read?.propertyIds).toEqual(['BER']);
      });
    });

    describe('get', () => {
      test("returns the account's own subscription", async (repository) => {
        const stored = await created(repository, aSubscription());
        expect(await repository.get('acme', stored.id)).toEqual(stored);
      });

      test("returns undefined for another account's id", async (repository) => {
        const stored = await created(repository, aSubscription());
        expect(await repository.get('globex', stored.id)).toBeUndefined();
      });

      test('returns undefined for an id nobody holds', async (repository) => {
        await created(repository, aSubscription());
        expect(await repository.get('acme', randomUUID())).toBeUndefined();
      });
    });

    describe('list', () => {
      test('gives the order of creation, whatever createdAt says, and only the account’s own', async (repository) => {
        // Created in this order: one stamped late first, three at one time in descending id order,
        // then one stamped early (an instance whose clock is behind).
        const ids = [randomUUID(), randomUUID(), randomUUID()].sort().reverse();
        const late = await created(repository, aSubscription({ createdAt: iso(T0 + 1_000) }));
        const tied = [];
        for (const id of ids) tied.push(await created(repository, aSubscription({ id })));
        const early = await created(repository, aSubscription({ createdAt: iso(T0 - 1_000) }));
        await created(repository, aSubscription({ accountCode: 'globex' }));
        const page = await repository.list('acme', { offset: 0, limit: 10 });
        expect(page.items).toEqual([late, ...tied, early]);
        expect(page.totalItems).toBe(5);
      });

      test('pages by offset and limit, with totalItems the whole count', async (repository) => {
        const all: StoredSubscription[] = [];
        for (let i = 0; i < 5; i++) {
          all.push(await created(repository, aSubscription({ createdAt: iso(T0 + i) })));
        }
        expect(await repository.list('acme', { offset: 0, limit: 2 })).toEqual({
          items: all.slice(0, 2),
          totalItems: 5,
        });
        expect(await repository.list('acme', { offset: 2, limit: 2 })).toEqual({
          items: all.slice(2, 4),
          totalItems: 5,
        });
        expect(await repository.list('acme', { offset: 4, limit: 2 })).toEqual({
          items: all.slice(4),
          totalItems: 5,
        });
        expect(await repository.list('acme', { offset: 5, limit: 2 })).toEqual({
          items: [],
          totalItems: 5,
        });
      });

      test('an account holding nothing has an empty page', async (repository) => {
        await created(repository, aSubscription());
        expect(await repository.list('globex', { offset: 0, limit: 20 })).toEqual({
          items: [],
          totalItems: 0,
        });
      });
    });

    describe('update', () => {
      test('changes each field given, keeps the others, and stamps updatedAt and a higher revision', async (repository) => {
        const original = await created(repository, aSubscription({ propertyIds: ['BER'] }));
        const steps = [
          { endpointUrl: 'https://hooks.example.com/moved' },
          { events: ['reservation/*', 'folio/closed'] },
          { propertyIds: ['MUC', 'LON'] },
          { status: 'disabled' as const },
          { status: 'enabled' as const },
        ];
        let expected: StoredSubscription = original;
        for (const [i, changes] of steps.entries()) {
          const at = T0 + 1_000 * (i + 1);
          const next = await repository.update('acme', original.id, changes, at);
          // Disabling records why and when; enabling clears both.
          const { disabledReason: _, disabledAt: __, ...kept } = expected;
          expected = {
            ...(changes.status === 'enabled' ? kept : expected),
            ...changes,
            ...(changes.status === 'disabled'
              ? { disabledReason: 'requested' as const, disabledAt: iso(at) }
              : {}),
            updatedAt: iso(at),
            revision: expected.revision,
          };
          expect(next).toEqual({ ...expected, revision: next?.revision });
          expect(next!.revision).toBeGreaterThan(expected.revision);
          expected = next!;
          expect(await repository.get('acme', original.id)).toEqual(expected);
        }
        expect(expected.createdAt).toBe(original.createdAt);
      });

      test('propertyIds null means every property again: the field is gone', async (repository) => {
        const original = await created(repository, aSubscription({ propertyIds: ['BER'] }));
        const next = await repository.update('acme', original.id, { propertyIds: null }, T0 + 1);
        expect(next).not.toHaveProperty('propertyIds');
        expect(next?.propertyIds).toBeUndefined();
        expect(await repository.get('acme', original.id)).toEqual(next);
        const { propertyIds: _, ...rest } = original;
        expect(next).toEqual({ ...rest, updatedAt: iso(T0 + 1), revision: next?.revision });
      });

      test('a disabled subscription is kept: read, listed and in the changes', async (repository) => {
        const original = await created(repository, aSubscription());
        const disabled = await repository.update(
          'acme',
          original.id,
          { status: 'disabled' },
          T0 + 1,
        );
        expect(disabled?.status).toBe('disabled');
        expect(await repository.get('acme', original.id)).toEqual(disabled);
        expect((await repository.list('acme', { offset: 0, limit: 10 })).items).toEqual([disabled]);
        const changes = await repository.changesSince(0, 10);
        expect(changes.map((c) => c.subscription)).toEqual([disabled]);
      });

      test("returns undefined for another account's id, and nothing changes", async (repository) => {
        const original = await created(repository, aSubscription());
        const before = await repository.changesSince(0, 100);
        const changes = { endpointUrl: 'https://evil.example.com/', status: 'disabled' as const };
        expect(await repository.update('globex', original.id, changes, T0 + 1)).toBeUndefined();
        expect(await repository.get('acme', original.id)).toEqual(original);
        expect(await repository.get('globex', original.id)).toBeUndefined();
        expect(await repository.changesSince(0, 100)).toEqual(before);
      });

      test('returns undefined for an id nobody holds', async (repository) => {
        expect(
          await repository.update('acme', randomUUID(), { status: 'disabled' }, T0),
        ).toBeUndefined();
        expect(await repository.changesSince(0, 100)).toEqual([]);
      });

      test('what it returns does not change when the caller changes its arrays later', async (repository) => {
        const original = await created(repository, aSubscription());
        const events = ['folio/closed'];
        const propertyIds = ['LON'];
        const next = await repository.update('acme', original.id, { events, propertyIds }, T0 + 1);
        events.push('folio/created');
        propertyIds[0] = 'BER';
        expect(next?.events).toEqual(['folio/closed']);
        expect(next?.propertyIds).toEqual(['LON']);
        const read = await repository.get('acme', original.id);
        expect(read?.events).toEqual(['folio/closed']);
        expect(read?.propertyIds).toEqual(['LON']);
      });
    });

    describe('delete', () => {
      test('removes the subscription and its secrets, and tells whether there was one', async (repository) => {
        const gone = await created(repository, aSubscription());
        const kept = await created(repository, aSubscription());
        expect(await repository.delete('acme', gone.id, T0 + 1)).toBe(true);
        expect(await repository.get('acme', gone.id)).toBeUndefined();
        expect(await repository.signingSecrets('acme', gone.id, T0 + 1)).toEqual([]);
        expect(
          await repository.rotateSecret('acme', gone.id, 'new', { at: T0 + 2, graceMs: 10 }),
        ).toBe(false);
        expect(
          await repository.update('acme', gone.id, { status: 'disabled' }, T0 + 2),
        ).toBeUndefined();
        expect(await repository.list('acme', { offset: 0, limit: 10 })).toEqual({
          items: [kept],
          totalItems: 1,
        });
        expect(await repository.delete('acme', gone.id, T0 + 3)).toBe(false);
      });

      test("returns false for another account's id, and leaves it and its secrets alone", async (repository) => {
        const theirs = await created(repository, aSubscription(), { secret: 'whsec_theirs' });
        const before = await repository.changesSince(0, 100);
        expect(await repository.delete('globex', theirs.id, T0 + 1)).toBe(false);
        expect(await repository.get('acme', theirs.id)).toEqual(theirs);
        expect(await repository.signingSecrets('acme', theirs.id, T0 + 1)).toEqual([
          'whsec_theirs',
        ]);
        expect(await repository.changesSince(0, 100)).toEqual(before);
      });

      test('returns false for an id nobody holds', async (repository) => {
        expect(await repository.delete('acme', randomUUID(), T0)).toBe(false);
        expect(await repository.changesSince(0, 100)).toEqual([]);
      });
    });

    subscriptionChangesContract(test);
    subscriptionOutboxContract(test);
    subscriptionSettingsContract(test);
  });
}
