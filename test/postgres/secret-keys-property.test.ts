/**
 * Property, on PGlite and PostgreSQL: whatever keys wrote a subscription's secrets and whatever keys
 * read them, the secrets that sign are exactly those in force that a configured key wrote, newest
 * first; each other one in force is told to `onUnreadable`; none readable of some in force is a
 * SecretCipherError naming the subscription (never an empty list, which means "no secret"), and
 * the start check names exactly those subscriptions. Times are explicit (a fake clock's values).
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSecretCipherError, type SecretCipherError } from '../../src/index.js';
import { PostgresSubscriptionRepository, type SecretKey } from '../../src/postgres/index.js';
import { DATABASES, subscription, TestDatabases } from './databases.js';

const dbs = new TestDatabases();
beforeAll(() => dbs.start());
afterAll(() => dbs.stop());

const KEYS: Record<'A' | 'B', SecretKey> = {
  A: { id: 'key-a', key: randomBytes(32) },
  B: { id: 'key-b', key: randomBytes(32) },
};
type KeyName = keyof typeof KEYS;

/** One secret written: under which key, when, and how long the ones before it keep signing. */
interface Written {
  readonly key: KeyName;
  readonly at: number;
  readonly graceMs: number;
}

const write = fc.record({
  key: fc.constantFrom<KeyName>('A', 'B'),
  at: fc.integer({ min: 0, max: 1_000 }),
  graceMs: fc.integer({ min: 0, max: 500 }),
});

const scenario = fc.record({
  // Per subscription: its create, then its rotations (times sorted, as a clock gives them).
  subscriptions: fc.array(fc.array(write, { minLength: 1, maxLength: 4 }), {
    minLength: 1,
    maxLength: 3,
  }),
  readers: fc.constantFrom<KeyName[]>([], ['A'], ['B'], ['A', 'B'], ['B', 'A']),
  // Read after the last write, as a clock that never goes back reads.
  readAfter: fc.integer({ min: 0, max: 1_000 }),
});

describe.each(DATABASES)('secrets read with other keys on %s (property)', (name) => {
  it('signs with exactly the readable secrets in force, tells the others, and throws only when none is readable', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ subscriptions, readers, readAfter }) => {
        const readAt = Math.max(...subscriptions.flat().map((w) => w.at)) + readAfter;
        const schema = dbs.schema();
        const open = (keys: readonly KeyName[]) =>
          PostgresSubscriptionRepository.open({
            database: dbs.database(name),
            schema,
            ...(keys.length === 0 ? {} : { secretKeys: keys.map((k) => KEYS[k]) }),
          });
        const writers = { A: await open(['A']), B: await open(['B']) };
        const expected = new Map<string, { inForce: Written[]; readable: string[] }>();
        for (const [index, writes] of subscriptions.entries()) {
          const id = `s${index}`;
          const sorted = [...writes].sort((x, y) => x.at - y.at);
          const [created, ...rotations] = sorted as [Written, ...Written[]];
          await writers[created.key].create(subscription('ACME', id), `whsec_${id}_0`, {
            at: created.at,
            maxPerAccount: 10,
          });
          for (const [n, rotation] of rotations.entries()) {
            await writers[rotation.key].rotateSecret('ACME', id, `whsec_${id}_${n + 1}`, rotation);
          }
          // The oracle, from the rotation rule: a secret signs until a later rotation's
          // at + graceMs has passed (the earliest such time).
          const inForce = sorted
            .map((w, n) => ({ ...w, n }))
            .filter(
              ({ n }) => !sorted.slice(n + 1).some((later) => later.at + later.graceMs <= readAt),
            )
            .reverse();
          expected.set(id, {
            inForce,
            readable: inForce
              .filter((w) => readers.includes(w.key))
              .map((w) => `whsec_${id}_${(w as Written & { n: number }).n}`),
          });
        }
        const reader = await open(readers);
        for (const [id, { inForce, readable }] of expected) {
          const told: SecretCipherError[] = [];
          const got = await reader
            .signingSecrets('ACME', id, readAt, { onUnreadable: (e) => void told.push(e) })
            .catch((error: unknown) => error);
          if (inForce.length > 0 && readable.length === 0) {
            expect(isSecretCipherError(got)).toBe(true);
            expect(got).toMatchObject({ subscriptionId: id, accountCode: 'ACME' });
            expect(told).toEqual([]);
          } else {
            expect(got).toEqual(readable);
            expect(told.map((e) => e.subscriptionId)).toEqual(
              Array(inForce.length - readable.length).fill(id),
            );
          }
        }
        const unreadable = (await reader.unreadableSecrets(readAt)).map((e) => e.subscriptionId);
        expect(unreadable).toEqual(
          [...expected]
            .filter(([, e]) => e.inForce.length > 0 && e.readable.length === 0)
            .map(([id]) => id),
        );
      }),
      { numRuns: 25 },
    );
  });
});
