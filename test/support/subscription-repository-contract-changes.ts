/**
 * The second half of the repository contract: signing secrets and their rotation, the change feed
 * (`changesSince`, `watch`); the delivery log is in the attempts part. Declared by `subscriptionRepositoryContract`.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { SubscriptionChange } from '../../src/index.js';
import { subscriptionAttemptsContract } from './subscription-repository-contract-attempts.js';
import {
  aSubscription,
  created,
  eventually,
  type RepositoryTest,
  T0,
} from './subscription-repository-fixtures.js';

const HOUR = 3_600_000;

/** Declares the tests of secrets, changes and the log with the contract's `test`. */
export function subscriptionChangesContract(test: RepositoryTest): void {
  describe('rotateSecret and signingSecrets', () => {
    test('a new subscription signs with its first secret', async (repository) => {
      const stored = await created(repository, aSubscription(), { secret: 'whsec_first' });
      expect(await repository.signingSecrets('acme', stored.id, T0)).toEqual(['whsec_first']);
      expect(await repository.signingSecrets('acme', stored.id, T0 + 1_000 * HOUR)).toEqual([
        'whsec_first',
      ]);
    });

    test('after a rotation both sign, newest first, until at + graceMs; then only the new', async (repository) => {
      const stored = await created(repository, aSubscription(), { secret: 'whsec_old' });
      const at = T0 + HOUR;
      const rotated = await repository.rotateSecret('acme', stored.id, 'whsec_new', {
        at,
        graceMs: 24 * HOUR,
      });
      expect(rotated).toBe(true);
      const signing = (t: number) => repository.signingSecrets('acme', stored.id, t);
      expect(await signing(at)).toEqual(['whsec_new', 'whsec_old']);
      expect(await signing(at + 24 * HOUR - 1)).toEqual(['whsec_new', 'whsec_old']);
      expect(await signing(at + 24 * HOUR)).toEqual(['whsec_new']);
      expect(await signing(at + 48 * HOUR)).toEqual(['whsec_new']);
    });

    test('a second rotation keeps an earlier expiry, and gives the later secrets theirs', async (repository) => {
      const stored = await created(repository, aSubscription(), { secret: 's1' });
      const rotate = (secret: string, at: number, graceMs: number) =>
        repository.rotateSecret('acme', stored.id, secret, { at, graceMs });
      const signing = (t: number) => repository.signingSecrets('acme', stored.id, t);
      expect(await rotate('s2', T0, 1_000)).toBe(true); // s1 until T0 + 1000
      expect(await rotate('s3', T0 + 100, 5_000)).toBe(true); // s2 until T0 + 5100; s1 stays
      expect(await signing(T0 + 999)).toEqual(['s3', 's2', 's1']);
      expect(await signing(T0 + 1_000)).toEqual(['s3', 's2']);
      expect(await signing(T0 + 5_099)).toEqual(['s3', 's2']);
      expect(await signing(T0 + 5_100)).toEqual(['s3']);
    });

    test('an ed25519 subscription keeps its whsk_ key as a secret, its public key shown by get, list and the change feed', async (repository) => {
      const subscription = aSubscription({ signatureType: 'ed25519' });
      const stored = await created(repository, subscription, {
        secret: 'whsk_key1',
        publicKey: 'whpk_key1',
      });
      expect(stored).toMatchObject({ signatureType: 'ed25519', publicKey: 'whpk_key1' });
      expect(await repository.signingSecrets('acme', stored.id, T0)).toEqual(['whsk_key1']);
      expect((await repository.get('acme', stored.id))?.publicKey).toBe('whpk_key1');
      const page = await repository.list('acme', { offset: 0, limit: 10 });
      expect(page.items.find((s) => s.id === stored.id)?.publicKey).toBe('whpk_key1');
      const changes = await repository.changesSince(0, 1_000);
      expect(changes.find((c) => c.id === stored.id)?.subscription?.publicKey).toBe('whpk_key1');
      // An HMAC subscription has none.
      const hmac = await created(repository, aSubscription());
      expect(hmac.publicKey).toBeUndefined();
      expect((await repository.get('acme', hmac.id))?.publicKey).toBeUndefined();
    });

    test('a rotation sets the public key of the new key (none for an HMAC secret) and the type it names, updatedAt moving only with the type', async (repository) => {
      const stored = await created(repository, aSubscription(), { secret: 'whsec_old' });
      const get = async () => {
        const found = await repository.get('acme', stored.id);
        if (found === undefined) throw new Error('gone');
        return found;
      };
      const at = T0 + HOUR;
      const to = { at, graceMs: HOUR, publicKey: 'whpk_a', signatureType: 'ed25519' } as const;
      expect(await repository.rotateSecret('acme', stored.id, 'whsk_a', to)).toBe(true);
      const switched = await get();
      expect(switched).toMatchObject({ signatureType: 'ed25519', publicKey: 'whpk_a' });
      expect(switched.updatedAt).toBe(new Date(at).toISOString());
      expect(switched.revision).toBeGreaterThan(stored.revision);
      expect(await repository.signingSecrets('acme', stored.id, at)).toEqual([
        'whsk_a',
        'whsec_old',
      ]);
      // Same type: a new public key, updatedAt stays.
      const again = { ...to, at: at + 10, publicKey: 'whpk_b' };
      expect(await repository.rotateSecret('acme', stored.id, 'whsk_b', again)).toBe(true);
      expect(await get()).toMatchObject({ publicKey: 'whpk_b', updatedAt: switched.updatedAt });
      // Back to HMAC: no public key.
      const back = { at: at + 20, graceMs: HOUR, signatureType: 'hmac-sha256' } as const;
      expect(await repository.rotateSecret('acme', stored.id, 'whsec_c', back)).toBe(true);
      const hmac = await get();
      expect(hmac.signatureType).toBe('hmac-sha256');
      expect(hmac.publicKey).toBeUndefined();
      expect(hmac.updatedAt).toBe(new Date(at + 20).toISOString());
      expect(await repository.signingSecrets('acme', stored.id, at + 20)).toEqual([
        'whsec_c',
        'whsk_b',
        'whsk_a',
        'whsec_old',
      ]);
    });

    test('a grace of 0 ends the old secrets at once', async (repository) => {
      const stored = await created(repository, aSubscription(), { secret: 'old' });
      await repository.rotateSecret('acme', stored.id, 'new', { at: T0 + 10, graceMs: 0 });
      expect(await repository.signingSecrets('acme', stored.id, T0 + 10)).toEqual(['new']);
    });

    test("another account cannot rotate or read a subscription's secrets", async (repository) => {
      const stored = await created(repository, aSubscription(), { secret: 'mine' });
      const options = { at: T0 + 1, graceMs: 0 };
      expect(await repository.rotateSecret('globex', stored.id, 'theirs', options)).toBe(false);
      expect(await repository.signingSecrets('globex', stored.id, T0 + 1)).toEqual([]);
      expect(await repository.signingSecrets('acme', stored.id, T0 + 2)).toEqual(['mine']);
    });

    test('one id in two accounts: each keeps its own secrets, rotation, delete and change', async (repository) => {
      const id = randomUUID();
      await created(repository, aSubscription({ id }), { secret: 'acme-secret' });
      await created(repository, aSubscription({ id, accountCode: 'globex' }), {
        secret: 'globex-secret',
      });
      await repository.rotateSecret('globex', id, 'globex-new', { at: T0, graceMs: 0 });
      expect(await repository.signingSecrets('acme', id, T0)).toEqual(['acme-secret']);
      expect(await repository.signingSecrets('globex', id, T0)).toEqual(['globex-new']);
      expect(await repository.delete('globex', id, T0)).toBe(true);
      expect(await repository.signingSecrets('acme', id, T0)).toEqual(['acme-secret']);
      const changes = await repository.changesSince(0, 10);
      const mine = changes.filter((c) => c.accountCode === 'acme');
      const theirs = changes.filter((c) => c.accountCode === 'globex');
      expect(mine.map((c) => c.subscription?.id)).toEqual([id]);
      expect(theirs.map((c) => c.subscription)).toEqual([undefined]);
    });

    test('an id nobody holds has no secrets and cannot be rotated', async (repository) => {
      const id = randomUUID();
      expect(await repository.rotateSecret('acme', id, 's', { at: T0, graceMs: 0 })).toBe(false);
      expect(await repository.signingSecrets('acme', id, T0)).toEqual([]);
    });

    test('rotating changes no field of the subscription, but is a change: a higher revision, told by changesSince', async (repository) => {
      const stored = await created(repository, aSubscription());
      const other = await created(repository, aSubscription());
      await repository.rotateSecret('acme', stored.id, 'next', { at: T0 + 1, graceMs: 10 });
      const after = await repository.get('acme', stored.id);
      expect(after).toEqual({ ...stored, revision: after?.revision });
      expect(after?.revision).toBeGreaterThan(other.revision);
      expect(await repository.changesSince(other.revision, 10)).toEqual([
        { revision: after?.revision, id: stored.id, accountCode: 'acme', subscription: after },
      ]);
    });

    test('a rotation refused (another account, no such id) is no change', async (repository) => {
      const stored = await created(repository, aSubscription());
      expect(await repository.rotateSecret('globex', stored.id, 'x', { at: T0, graceMs: 0 })).toBe(
        false,
      );
      expect(await repository.rotateSecret('acme', 'none', 'x', { at: T0, graceMs: 0 })).toBe(
        false,
      );
      expect(await repository.changesSince(stored.revision, 10)).toEqual([]);
    });
  });

  describe('changesSince', () => {
    test('tells the newest change of each id, deletes without a subscription, in ascending revisions', async (repository) => {
      const a = await created(repository, aSubscription());
      const b = await created(repository, aSubscription({ accountCode: 'globex' }));
      const c = await created(repository, aSubscription());
      const a2 = await repository.update('acme', a.id, { status: 'disabled' }, T0 + 1);
      expect(await repository.delete('globex', b.id, T0 + 2)).toBe(true);
      expect(a.revision).toBeLessThan(b.revision);
      expect(b.revision).toBeLessThan(c.revision);
      expect(c.revision).toBeLessThan(a2!.revision);
      const changes = await repository.changesSince(0, 100);
      expect(changes.map(withoutRevisionOfDelete)).toEqual([
        { revision: c.revision, id: c.id, accountCode: 'acme', subscription: c },
        { revision: a2!.revision, id: a.id, accountCode: 'acme', subscription: a2 },
        { id: b.id, accountCode: 'globex' },
      ]);
      expect(changes[2]).not.toHaveProperty('subscription');
      expect(changes[2]!.revision).toBeGreaterThan(a2!.revision);
    });

    test('gives only revisions above the one asked, at most limit, the lowest first', async (repository) => {
      const stored = [];
      for (let i = 0; i < 5; i++) stored.push(await created(repository, aSubscription()));
      const revisions = stored.map((s) => s.revision);
      const revisionsAfter = async (revision: number, limit: number) =>
        (await repository.changesSince(revision, limit)).map((c) => c.revision);
      expect(await revisionsAfter(0, 100)).toEqual(revisions);
      expect(await revisionsAfter(0, 2)).toEqual(revisions.slice(0, 2));
      expect(await revisionsAfter(revisions[1]!, 2)).toEqual(revisions.slice(2, 4));
      expect(await revisionsAfter(revisions[4]!, 10)).toEqual([]);
    });

    test('revisions grow strictly over every change, deletes included', async (repository) => {
      const a = await created(repository, aSubscription());
      await repository.update('acme', a.id, { endpointUrl: 'https://hooks.example.com/x' }, T0 + 1);
      await repository.delete('acme', a.id, T0 + 2);
      const deleted = (await repository.changesSince(0, 10))[0]!;
      const b = await created(repository, aSubscription());
      expect(b.revision).toBeGreaterThan(deleted.revision);
      const all = await repository.changesSince(0, 10);
      expect(all.map((c) => c.id)).toEqual([a.id, b.id]);
      expect(all.map((c) => c.revision)).toEqual([deleted.revision, b.revision]);
    });

    test('a refused create, a missing update and a missing delete are no changes', async (repository) => {
      await repository.create(aSubscription(), 's', { at: T0, maxPerAccount: 0 });
      await repository.update('acme', randomUUID(), { status: 'disabled' }, T0);
      await repository.delete('acme', randomUUID(), T0);
      expect(await repository.changesSince(0, 10)).toEqual([]);
    });
  });

  describe('watch', () => {
    test('calls onReconnect once open, and onChange with a revision at least the change’s', async (repository) => {
      if (repository.watch === undefined) return; // optional: a repository only this instance changes
      const heard: number[] = [];
      let reconnects = 0;
      const stop = await repository.watch({
        onChange: (revision) => heard.push(revision),
        onReconnect: () => {
          reconnects += 1;
        },
      });
      try {
        await eventually(() => expect(reconnects).toBeGreaterThanOrEqual(1));
        const stored = await created(repository, aSubscription());
        await eventually(() => expect(Math.max(...heard)).toBeGreaterThanOrEqual(stored.revision));
        await repository.delete('acme', stored.id, T0 + 1);
        const deleted = (await repository.changesSince(stored.revision, 10))[0]!;
        await eventually(() => expect(Math.max(...heard)).toBeGreaterThanOrEqual(deleted.revision));
      } finally {
        await stop();
      }
    });
  });

  describe('watch: stopping', () => {
    test('after stop resolves, changes reach other watchers but not the stopped one', async (repository) => {
      if (repository.watch === undefined) return;
      const stopped: number[] = [];
      const other: number[] = [];
      const stop = await repository.watch({
        onChange: (r) => stopped.push(r),
        onReconnect: () => {},
      });
      const stopOther = await repository.watch({
        onChange: (r) => other.push(r),
        onReconnect: () => {},
      });
      try {
        await stop();
        const heardBefore = stopped.length;
        const stored = await created(repository, aSubscription());
        await eventually(() => expect(Math.max(...other)).toBeGreaterThanOrEqual(stored.revision));
        expect(stopped.slice(heardBefore).filter((r) => r >= stored.revision)).toEqual([]);
      } finally {
        await stopOther();
      }
    });
  });
  subscriptionAttemptsContract(test);
}

/** A change with a delete's revision left out (its value is the repository's to choose). */
function withoutRevisionOfDelete(change: SubscriptionChange): Partial<SubscriptionChange> {
  if (change.subscription !== undefined) return change;
  const { revision: _, ...rest } = change;
  return rest;
}
