/**
 * Signing secrets at rest in PostgreSQL and PGlite: encrypted under the newest key, readable under
 * older ones, moved to the newest by reencryptSecrets, stored plain without keys, and a typed
 * error for text that was tampered with. The raw column is read with SQL. Each case runs with the
 * keys given as `secretKeys` (node:crypto, synchronous) and as `cipher: aesGcmSecretCipherAsync`
 * (WebCrypto, awaited), and the two read each other's rows.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isConfigurationError } from '../../src/errors/index.js';
import { SecretCipherError } from '../../src/errors/secret-cipher-error.js';
import {
  aesGcmSecretCipherAsync,
  type PostgresRepositoryOptions,
  PostgresSubscriptionRepository,
  type SecretCipher,
  type SecretKey,
} from '../../src/postgres/index.js';
import { DATABASES, subscription, TestDatabases } from './databases.js';

const dbs = new TestDatabases();
beforeAll(() => dbs.start());
afterAll(() => dbs.stop());

const OLD = { id: 'k-2024', key: randomBytes(32) };
const NEW = { id: 'k-2025', key: randomBytes(32).toString('base64') };
const LIMITS = { at: 0, maxPerAccount: 10 };

type Keyed = (keys: readonly SecretKey[]) => Partial<PostgresRepositoryOptions>;

/** How a repository is given its keys: the options that give them. */
const KEY_FORMS: Record<string, Keyed> = {
  secretKeys: (keys) => ({ secretKeys: keys }),
  'aesGcmSecretCipherAsync as cipher': (keys) => ({ cipher: aesGcmSecretCipherAsync({ keys }) }),
};

const CASES = DATABASES.flatMap((name) =>
  Object.entries(KEY_FORMS).map(([form, keyed]) => ({ name, form, keyed })),
);

describe.each(CASES)(
  'signing secrets at rest on $name, keys as $form',
  ({ name, keyed: keysAs }) => {
    const database = () => dbs.database(name);

    /** The raw rows of the secrets table. */
    async function raw(schema: string): Promise<{ secret: string; key_id: string | null }[]> {
      const { rows } = await database().query(
        `SELECT secret, key_id FROM "${schema}".signing_secrets ORDER BY sequence`,
      );
      return rows as { secret: string; key_id: string | null }[];
    }

    it('encrypts under the newest key: the secret is not in the column, and reads back', async () => {
      const schema = dbs.schema();
      const repo = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([NEW, OLD]),
      });
      expect(repo.secretsAtRest).toBe('encrypted');
      await repo.create(subscription('ACME', 's'), 'whsec_firstsecretvalue', LIMITS);
      await repo.rotateSecret('ACME', 's', 'whsec_secondsecretvalue', { at: 10, graceMs: 100 });
      const rows = await raw(schema);
      expect(rows).toHaveLength(2);
      for (const row of rows) {
        expect(row.secret).not.toContain('secretvalue');
        expect(row.key_id).toBe('k-2025');
        expect(row.secret.startsWith('gcm1.k-2025.')).toBe(true);
      }
      expect(await repo.signingSecrets('ACME', 's', 20)).toEqual([
        'whsec_secondsecretvalue',
        'whsec_firstsecretvalue',
      ]);
    });

    it('rotates keys: old keys decrypt, reencryptSecrets moves every secret to the newest', async () => {
      const schema = dbs.schema();
      const before = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([OLD]),
      });
      for (const id of ['a', 'b', 'c'])
        await before.create(subscription('ACME', id), `whsec_${id}`, LIMITS);
      expect((await raw(schema)).map((r) => r.key_id)).toEqual(['k-2024', 'k-2024', 'k-2024']);

      const after = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([NEW, OLD]),
      });
      expect(await after.signingSecrets('ACME', 'b', 0)).toEqual(['whsec_b']);
      expect(await after.reencryptSecrets()).toBe(3);
      expect((await raw(schema)).map((r) => r.key_id)).toEqual(['k-2025', 'k-2025', 'k-2025']);
      expect(await after.reencryptSecrets()).toBe(0);

      // The old key can go now.
      const newOnly = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([NEW]),
      });
      for (const id of ['a', 'b', 'c']) {
        expect(await newOnly.signingSecrets('ACME', id, 0)).toEqual([`whsec_${id}`]);
      }
      // Without the key that encrypted them, a typed error says which key is missing.
      const error = await before.signingSecrets('ACME', 'a', 0).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SecretCipherError);
      expect((error as SecretCipherError).code).toBe('unknown_secret_key');
    });

    it('stores plain without keys, and reencryptSecrets encrypts those once keys are given', async () => {
      const schema = dbs.schema();
      const plain = await PostgresSubscriptionRepository.open({ database: database(), schema });
      expect(plain.secretsAtRest).toBe('plain');
      await plain.create(subscription('ACME', 'p'), 'whsec_plainvalue', LIMITS);
      expect(await raw(schema)).toEqual([{ secret: 'whsec_plainvalue', key_id: null }]);
      const reencrypt = await plain.reencryptSecrets().catch((e: unknown) => e);
      expect(isConfigurationError(reencrypt)).toBe(true);
      expect((reencrypt as Error).message).toBe(
        'secretKeys must be given to PostgresSubscriptionRepository.open (newest first) for reencryptSecrets(), got undefined.',
      );

      const keyed = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([NEW]),
      });
      expect(await keyed.signingSecrets('ACME', 'p', 0)).toEqual(['whsec_plainvalue']);
      expect(await keyed.reencryptSecrets()).toBe(1);
      const [row] = await raw(schema);
      expect(row?.secret).not.toContain('plainvalue');
      expect(await keyed.signingSecrets('ACME', 'p', 0)).toEqual(['whsec_plainvalue']);
      // A repository without keys cannot read them, and says so, naming the subscription.
      const refused = await plain.signingSecrets('ACME', 'p', 0).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(SecretCipherError);
      expect(refused).toMatchObject({
        code: 'no_secret_keys',
        accountCode: 'ACME',
        subscriptionId: 'p',
      });
      expect((refused as Error).message).toMatch(/secretKeys/);
    });

    it('skips a secret the keys cannot read and tells onUnreadable, so that the readable ones still sign', async () => {
      const schema = dbs.schema();
      const before = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([OLD]),
      });
      await before.create(subscription('ACME', 's'), 'whsec_old', LIMITS);
      await before.create(subscription('ACME', 'none'), 'whsec_none', LIMITS);
      const after = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([NEW]),
      });
      await after.rotateSecret('ACME', 's', 'whsec_new', { at: 10, graceMs: 100 });
      const told: SecretCipherError[] = [];
      const onUnreadable = (error: SecretCipherError) => void told.push(error);
      expect(await after.signingSecrets('ACME', 's', 20, { onUnreadable })).toEqual(['whsec_new']);
      expect(told.map((e) => [e.code, e.subscriptionId, e.accountCode])).toEqual([
        ['unknown_secret_key', 's', 'ACME'],
      ]);
      // None readable: thrown, naming the subscription; onUnreadable is not told twice.
      const thrown = await after
        .signingSecrets('ACME', 'none', 20, { onUnreadable })
        .catch((e: unknown) => e);
      expect(thrown).toMatchObject({ code: 'unknown_secret_key', subscriptionId: 'none' });
      expect(told).toHaveLength(1);
      // The start check names the one none of whose secrets reads; past the grace, 's' too.
      expect((await after.unreadableSecrets(20)).map((e) => e.subscriptionId)).toEqual(['none']);
      expect((await after.unreadableSecrets(200)).map((e) => e.subscriptionId)).toEqual(['none']);
      // The first key reads the old secret, until its grace ends.
      expect(await before.unreadableSecrets(20)).toEqual([]);
      expect((await before.unreadableSecrets(200)).map((e) => e.subscriptionId)).toEqual(['s']);
      const both = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([NEW, OLD]),
      });
      expect(await both.unreadableSecrets(20)).toEqual([]);
    });

    it('checks every subscription at start, a batch at a time', async () => {
      const schema = dbs.schema();
      const before = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([OLD]),
      });
      // More than a batch (500), some deleted, some rotated to a key the next one reads.
      const ids = Array.from({ length: 520 }, (_, i) => `s${String(i).padStart(3, '0')}`);
      for (const id of ids) {
        await before.create(subscription('ACME', id), `whsec_${id}`, {
          at: 0,
          maxPerAccount: 1_000,
        });
      }
      const after = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([NEW]),
      });
      for (const id of ids.slice(0, 10)) await after.delete('ACME', id, 1);
      for (const id of ids.slice(10, 20)) {
        await after.rotateSecret('ACME', id, `whsec_new_${id}`, { at: 1, graceMs: 0 });
      }
      const reported = (await after.unreadableSecrets(2)).map((e) => e.subscriptionId);
      expect(reported).toEqual(ids.slice(20));
    });

    it('answers a typed error, not a crash, for text changed or moved in the database', async () => {
      const schema = dbs.schema();
      const repo = await PostgresSubscriptionRepository.open({
        database: database(),
        schema,
        ...keysAs([NEW]),
      });
      await repo.create(subscription('ACME', 'a'), 'whsec_a', LIMITS);
      await repo.create(subscription('ACME', 'b'), 'whsec_b', LIMITS);
      // b's text copied onto a: it does not authenticate for a.
      await database().query(
        `UPDATE "${schema}".signing_secrets SET secret = (SELECT secret FROM "${schema}".signing_secrets WHERE subscription_id = 'b') WHERE subscription_id = 'a'`,
      );
      const moved = await repo.signingSecrets('ACME', 'a', 0).catch((e: unknown) => e);
      expect((moved as SecretCipherError).code).toBe('secret_not_authentic');
      await database().query(
        `UPDATE "${schema}".signing_secrets SET secret = 'garbage' WHERE subscription_id = 'b'`,
      );
      const broken = await repo.signingSecrets('ACME', 'b', 0).catch((e: unknown) => e);
      expect((broken as SecretCipherError).code).toBe('malformed_stored_secret');
    });
  },
);

describe.each(DATABASES)('signing secrets at rest on %s, between the two forms', (name) => {
  it('a repository with aesGcmSecretCipherAsync reads the rows one with secretKeys wrote, and the other way', async () => {
    const schema = dbs.schema();
    const open = (options: Partial<PostgresRepositoryOptions>) =>
      PostgresSubscriptionRepository.open({ database: dbs.database(name), schema, ...options });
    const sync = await open({ secretKeys: [OLD] });
    const webCrypto = await open({ cipher: aesGcmSecretCipherAsync({ keys: [NEW, OLD] }) });
    await sync.create(subscription('ACME', 'a'), 'whsec_from_sync', LIMITS);
    await webCrypto.create(subscription('ACME', 'b'), 'whsec_from_webcrypto', LIMITS);
    expect(await webCrypto.signingSecrets('ACME', 'a', 0)).toEqual(['whsec_from_sync']);
    // The WebCrypto form moves the old key's secret to the new key; node:crypto reads it there.
    expect(await webCrypto.reencryptSecrets()).toBe(1);
    const both = await open({ secretKeys: [NEW, OLD] });
    expect(await both.signingSecrets('ACME', 'a', 0)).toEqual(['whsec_from_sync']);
    expect(await both.signingSecrets('ACME', 'b', 0)).toEqual(['whsec_from_webcrypto']);
    expect(await both.unreadableSecrets(0)).toEqual([]);
  });

  it("awaits a cipher of one's own that answers in a promise, and throws its failure that is no SecretCipherError", async () => {
    const schema = dbs.schema();
    const keys = aesGcmSecretCipherAsync({ keys: [NEW] });
    let serviceDown = false;
    // A key service's cipher: it answers later, and may be unreachable.
    const cipher: SecretCipher = {
      keyId: keys.keyId,
      keyIdOf: (stored) => keys.keyIdOf(stored),
      encrypt: async (secret, context) => keys.encrypt(secret, context),
      decrypt: async (stored, context) => {
        if (serviceDown) throw new Error('key service unreachable');
        return keys.decrypt(stored, context);
      },
    };
    const repo = await PostgresSubscriptionRepository.open({
      database: dbs.database(name),
      schema,
      cipher,
    });
    await repo.create(subscription('ACME', 'a'), 'whsec_a', LIMITS);
    expect(await repo.signingSecrets('ACME', 'a', 0)).toEqual(['whsec_a']);
    serviceDown = true;
    const told: SecretCipherError[] = [];
    const down = await repo
      .signingSecrets('ACME', 'a', 0, { onUnreadable: (e) => void told.push(e) })
      .catch((e: unknown) => e);
    expect(down).toEqual(new Error('key service unreachable'));
    expect(told).toEqual([]);
    await expect(repo.unreadableSecrets(0)).rejects.toThrow('key service unreachable');
  });
});
