/**
 * The repository contract for a subscription's optional settings (description, rateLimit,
 * headers, metadata, signatureType): stored as given, returned by every read and by the change
 * feed, set and removed by `update`. Declared by `subscriptionRepositoryContract`.
 */
import { describe, expect } from 'vitest';
import type { StoredSubscription } from '../../src/index.js';
import {
  aSubscription,
  created,
  iso,
  type RepositoryTest,
  T0,
} from './subscription-repository-fixtures.js';

const SETTINGS = {
  description: 'Billing team — prod ✓ 😀',
  rateLimit: 250,
  headers: { 'X-Team': 'billing', authorization: 'Bearer abc def', 'X-Empty': '' },
  metadata: { owner: 'ops', ключ: 'значение', '': 'empty key kept by the store' },
  signatureType: 'ed25519' as const,
};

/** Declares the tests of the settings with the contract's `test`. */
export function subscriptionSettingsContract(test: RepositoryTest): void {
  describe('optional settings', () => {
    test('a create keeps each setting as given; get, list and changesSince return them', async (repository) => {
      const subscription = aSubscription(SETTINGS);
      const stored = await created(repository, subscription);
      expect(stored).toEqual({
        ...subscription,
        status: 'enabled',
        updatedAt: iso(T0),
        revision: stored.revision,
      });
      expect(await repository.get('acme', stored.id)).toEqual(stored);
      expect((await repository.list('acme', { offset: 0, limit: 10 })).items).toEqual([stored]);
      const [change] = await repository.changesSince(0, 10);
      expect(change?.subscription).toEqual(stored);
    });

    test('a create without settings has none, and signatureType hmac-sha256', async (repository) => {
      const stored = await created(repository, aSubscription());
      for (const name of ['description', 'rateLimit', 'headers', 'metadata']) {
        expect(stored).not.toHaveProperty(name);
      }
      expect(stored.signatureType).toBe('hmac-sha256');
      const [change] = await repository.changesSince(0, 10);
      expect(change?.subscription).toEqual(stored);
    });

    test('empty headers and metadata objects are kept as empty objects', async (repository) => {
      const stored = await created(repository, aSubscription({ headers: {}, metadata: {} }));
      expect(stored.headers).toEqual({});
      expect(stored.metadata).toEqual({});
      expect(await repository.get('acme', stored.id)).toEqual(stored);
    });

    test('prototype names are data like any other, on every read', async (repository) => {
      const headers = JSON.parse('{"__proto__":"x","constructor":"y"}');
      const metadata = JSON.parse('{"__proto__":"a","toString":"b"}');
      const stored = await created(repository, aSubscription({ headers, metadata }));
      const [change] = await repository.changesSince(0, 10);
      for (const read of [stored, await repository.get('acme', stored.id), change?.subscription]) {
        expect(Object.keys(read?.headers ?? {}).sort()).toEqual(['__proto__', 'constructor']);
        expect(Object.getOwnPropertyDescriptor(read?.headers, '__proto__')?.value).toBe('x');
        expect(Object.getOwnPropertyDescriptor(read?.metadata, '__proto__')?.value).toBe('a');
        expect(read?.metadata?.toString).toBe('b');
      }
    });

    test('update sets each setting given and keeps the others', async (repository) => {
      const original = await created(repository, aSubscription(SETTINGS));
      const steps = [
        { description: 'renamed' },
        { rateLimit: 1 },
        { headers: { 'X-Other': '2' } },
        { metadata: { fresh: 'yes' } },
        { signatureType: 'hmac-sha256' as const },
      ];
      let expected: StoredSubscription = original;
      for (const [i, changes] of steps.entries()) {
        const at = T0 + 1_000 * (i + 1);
        const next = await repository.update('acme', original.id, changes, at);
        // An object replaces the whole set: nothing of the previous one is kept.
        expected = { ...expected, ...changes, updatedAt: iso(at), revision: next?.revision ?? -1 };
        expect(next).toEqual(expected);
        expect(await repository.get('acme', original.id)).toEqual(expected);
        const changed = await repository.changesSince(expected.revision - 1, 10);
        expect(changed.at(-1)?.subscription).toEqual(expected);
      }
    });

    test('update with null removes description, rateLimit, headers and metadata', async (repository) => {
      const original = await created(repository, aSubscription(SETTINGS));
      const next = await repository.update(
        'acme',
        original.id,
        { description: null, rateLimit: null, headers: null, metadata: null },
        T0 + 1,
      );
      const { description: _, rateLimit: __, headers: ___, metadata: ____, ...rest } = original;
      expect(next).toEqual({ ...rest, updatedAt: iso(T0 + 1), revision: next?.revision });
      for (const name of ['description', 'rateLimit', 'headers', 'metadata']) {
        expect(next).not.toHaveProperty(name);
      }
      expect(await repository.get('acme', original.id)).toEqual(next);
      const changes = await repository.changesSince(0, 10);
      expect(changes.at(-1)?.subscription).toEqual(next);
    });

    test('an update of other fields keeps the settings, and a status change too', async (repository) => {
      const original = await created(repository, aSubscription(SETTINGS));
      const moved = await repository.update(
        'acme',
        original.id,
        { endpointUrl: 'https://hooks.example.com/moved', status: 'disabled' },
        T0 + 1,
      );
      for (const name of Object.keys(SETTINGS) as (keyof typeof SETTINGS)[]) {
        expect(moved?.[name]).toEqual(SETTINGS[name]);
      }
    });

    test('what it returns does not change when the caller changes its objects later', async (repository) => {
      const headers: Record<string, string> = { 'X-A': '1' };
      const metadata: Record<string, string> = { a: '1' };
      const stored = await created(repository, aSubscription({ headers, metadata }));
      headers['X-A'] = '2';
      metadata.b = '2';
      expect(stored.headers).toEqual({ 'X-A': '1' });
      expect(stored.metadata).toEqual({ a: '1' });
      const newHeaders: Record<string, string> = { 'X-B': '1' };
      const next = await repository.update('acme', stored.id, { headers: newHeaders }, T0 + 1);
      newHeaders['X-B'] = '9';
      expect(next?.headers).toEqual({ 'X-B': '1' });
      expect((await repository.get('acme', stored.id))?.headers).toEqual({ 'X-B': '1' });
    });
  });
}
