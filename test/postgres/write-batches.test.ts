/**
 * Creates, updates, deletes and rotations under group commit, on a pg Pool and on PGlite: the
 * creates in flight at once share one statement, each of another account, and so do updates,
 * deletes and rotations, each of another subscription. Against what a write promises its caller, whatever the batches: one that answered
 * is committed with its revision the moment it answers; revisions are distinct, with no gap, and
 * an account's creates (a subscription's updates) take them in the order they were made; an
 * account's bound refuses exactly the creates beyond it, in that order; an update leaves what the
 * memory repository leaves making the same updates one by one; one the database refuses fails its
 * own caller only, with the database's error, and one whose statement was lost on the way (no
 * answer from the database) fails with that error, nothing of it written; every change is
 * announced to another instance's `watch`. The times come from a fake clock, moved on between
 * turns; the database is the only thing the test waits for.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.js';
import { PostgresSubscriptionRepository, type SqlDatabase } from '../../src/postgres/index.js';
import { MemorySubscriptionRepository } from '../../src/webhooks/store/memory-repository.js';
import type {
  RotateSecretOptions,
  SubscriptionRepository,
} from '../../src/webhooks/store/repository.js';
import type {
  StoredSubscription,
  SubscriptionChanges,
} from '../../src/webhooks/subscriptions/subscription.js';
import { eventually } from '../support/eventually.js';
import { arrayElements, PreparedTexts } from '../support/prepared-exec.js';
import { T0 } from '../support/subscription-repository-fixtures.js';
import { DATABASES, subscription, TestDatabases } from './databases.js';

const dbs = new TestDatabases();
beforeAll(() => dbs.start());
afterAll(() => dbs.stop());

const ACCOUNTS = ['ACME', 'BETA', 'GAMMA'];

/** One create of a turn: its account, whether the database refuses it, whether its statement is lost. */
interface Call {
  readonly account: number;
  readonly refused: boolean;
}

/** The outcome of a create as its caller saw it. */
type Outcome =
  | {
      readonly kind: 'stored';
      readonly stored: StoredSubscription;
      readonly presentAtOnce: unknown;
    }
  | { readonly kind: 'bound' }
  | { readonly kind: 'error'; readonly error: unknown };

/**
 * The database as the repository sees it, with each statement that creates (`create` alone,
 * `createSubscriptions` for a batch) lost on the way when the test says: not run, and failed with
 * an error that is not the database's (as a connection lost before the statement reached it). The
 * ids each lost statement held are kept. A pg Pool is wrapped; a PGlite keeps its kind (the test
 * replaces its `query` and puts it back).
 */
/**
 * The database with the statements `writes` picks lost while `losses` says so; PGlite keeps its
 * own object with its query replaced for the run (it stays an embedded database), a pool is
 * wrapped, as the repository takes any pool.
 */
function losing(
  name: string,
  database: SqlDatabase,
  losses: boolean[],
  writes: (text: string) => boolean,
) {
  const lost = new Set<string>();
  const inner = database.query.bind(database) as (config: unknown, params?: unknown[]) => unknown;
  // Text and parameters, or a pg config with a statement name (prepared statements on a pool).
  const query = async (config: unknown, params?: unknown[]) => {
    const text = typeof config === 'string' ? config : (config as { text: string }).text;
    const values = params ?? (config as { values?: unknown[] }).values ?? [];
    if (writes(text) && losses.shift() === true) {
      const ids = values[1];
      for (const id of Array.isArray(ids) ? ids : [ids]) lost.add(String(id));
      throw new Error('connection lost before the statement ran');
    }
    return inner(config, params);
  };
  // PGlite runs a statement whose parameters are plain values or arrays of them as
  // `EXECUTE name(literals)` through exec, after `PREPARE name AS text`: lost the same way, by the text prepared under that name.
  const exec = (database as { exec?: (text: string) => Promise<unknown> }).exec?.bind(database);
  const prepared = new PreparedTexts();
  const execLosing = async (text: string) => {
    const run = prepared.read(text);
    if (run !== undefined && writes(run.statement) && losses.shift() === true) {
      // The id, or the batch's ids, is the second parameter.
      const id = run.params[1] ?? null;
      for (const one of arrayElements(id) ?? [id]) lost.add(String(one));
      throw new Error('connection lost before the statement ran');
    }
    return exec?.(text);
  };
  const wrapped =
    name === 'pglite'
      ? Object.assign(database, { query, exec: execLosing })
      : ({
          query,
          connect: () => (database as unknown as { connect: () => unknown }).connect(),
        } as never);
  return { wrapped, lost };
}

/**
 * A repository on a fresh schema whose subscription writes' statements (`WITH batch AS`,
 * `WITH rev AS`) are lost as `losses` says once armed, and what drops it and its schema.
 */
async function lossyRepository(
  name: (typeof DATABASES)[number],
  losses: readonly boolean[],
  groupCommit: object,
) {
  const database = dbs.database(name);
  const schema = dbs.schema();
  let armed = false;
  const { wrapped, lost } = losing(
    name,
    database,
    [...losses],
    (text) => armed && (text.startsWith('WITH batch AS') || text.startsWith('WITH rev AS')),
  );
  const repository = await PostgresSubscriptionRepository.open({
    database: wrapped,
    schema,
    ...groupCommit,
  });
  return {
    repository,
    lost,
    arm: (on: boolean) => {
      armed = on;
    },
    drop: async () => {
      await repository.close();
      if (name === 'pglite') {
        Reflect.deleteProperty(database, 'query');
        Reflect.deleteProperty(database, 'exec');
      }
      await database.query(`DROP SCHEMA ${schema} CASCADE`);
    },
  };
}

/** The account of subscription `s<i>`: two accounts, taking turns. */
const accountOf = (i: number): string => (i % 2 === 0 ? 'ACME' : 'BETA');

/**
 * Subscriptions s0 to s3 (by {@link accountOf}) made in each repository, s3 then deleted.
 * @returns the revision after them in the first
 */
async function fourWithOneDeleted(
  ...repositories: readonly SubscriptionRepository[]
): Promise<number> {
  for (const r of repositories) {
    for (let i = 0; i < 4; i++) {
      await r.create(subscription(accountOf(i), `s${i}`), `whsec_${i}`, {
        at: T0,
        maxPerAccount: 10,
      });
    }
    await r.delete(accountOf(3), 's3', T0);
  }
  return (await repositories[0]?.changesSince(0, 100))?.at(-1)?.revision ?? 0;
}

// The defaults, and batches allowed side by side at once: creates and updates still go one batch
// at a time, in order.
const GROUP_COMMIT = fc.constantFrom({}, { groupCommit: { concurrency: 3, minBatch: 1 } });

// Each property takes 10 to 17 s on a quiet 2-core machine, up to 40 s when other work keeps it
// busy.
const TIMEOUT = { timeout: 180_000 };

describe.each(DATABASES)('creates in batches on %s', TIMEOUT, (name) => {
  it('every create answers as alone: committed with a revision, in order per account, bound kept, a refusal its own', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(
            fc.record({
              account: fc.nat(ACCOUNTS.length - 1),
              refused: fc.constantFrom(false, false, true),
            }),
            { minLength: 1, maxLength: 10 },
          ),
          { minLength: 1, maxLength: 4 },
        ),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.boolean(), { maxLength: 6 }),
        GROUP_COMMIT,
        async (turns: Call[][], maxPerAccount, losses, groupCommit) => {
          const database = dbs.database(name);
          const schema = dbs.schema();
          const { wrapped, lost } = losing(
            name,
            database,
            [...losses],
            (text) => text.startsWith('WITH batch AS') || text.startsWith('WITH guard AS'),
          );
          const repository = await PostgresSubscriptionRepository.open({
            database: wrapped,
            schema,
            ...groupCommit,
          });
          const watcher = await PostgresSubscriptionRepository.open({ database, schema });
          const heard: number[] = [];
          const stop = await watcher.watch({
            onChange: (revision) => heard.push(revision),
            onReconnect: () => undefined,
          });
          const clock = new FakeClock(T0);
          try {
            let n = 0;
            const made: Array<{ id: string; call: Call; outcome: Promise<Outcome> }> = [];
            for (const turn of turns) {
              // One turn's creates are made together: they share batches as the group forms them.
              const at = clock.now();
              const outcomes = turn.map((call) => {
                const id = `s${n++}`;
                const account = ACCOUNTS[call.account] as string;
                const made = subscription(account, id, new Date(at).toISOString(), {
                  // PostgreSQL refuses a NUL in text: the database's own refusal of this create.
                  ...(call.refused ? { description: 'refused\u0000' } : {}),
                });
                const outcome = repository.create(made, `whsec_${id}`, { at, maxPerAccount }).then(
                  async (stored): Promise<Outcome> =>
                    stored === undefined
                      ? { kind: 'bound' }
                      : // Read back the moment it answers: a crash now would find it.
                        {
                          kind: 'stored',
                          stored,
                          presentAtOnce: await repository.get(account, id),
                        },
                  (error: unknown): Outcome => ({ kind: 'error', error }),
                );
                return { id, call, outcome };
              });
              made.push(...outcomes);
              await Promise.all(outcomes.map((o) => o.outcome));
              clock.advance(1_000);
            }
            // The model: per account, in the order made, a create the database refused or whose
            // statement was lost writes nothing; the others are stored up to the bound, then
            // refused by it.
            const held = new Map<string, number>();
            const revisions: number[] = [];
            const lastOf = new Map<string, number>();
            for (const { id, call, outcome } of made) {
              const account = ACCOUNTS[call.account] as string;
              const seen = await outcome;
              if (lost.has(id)) {
                expect(seen, id).toMatchObject({ kind: 'error' });
                expect((seen as { error: Error }).error.message).toMatch(/^connection lost/);
                continue;
              }
              if (call.refused) {
                expect(seen, id).toMatchObject({ kind: 'error', error: { code: '22021' } });
                continue;
              }
              const count = held.get(account) ?? 0;
              if (count >= maxPerAccount) {
                expect(seen, id).toEqual({ kind: 'bound' });
                continue;
              }
              held.set(account, count + 1);
              expect(seen.kind, id).toBe('stored');
              const { stored, presentAtOnce } = seen as Extract<Outcome, { kind: 'stored' }>;
              expect(presentAtOnce).toEqual(stored);
              expect(stored).toMatchObject({ id, accountCode: account, status: 'enabled' });
              // An account's creates take revisions in the order they were made.
              expect(stored.revision).toBeGreaterThan(lastOf.get(account) ?? 0);
              lastOf.set(account, stored.revision);
              revisions.push(stored.revision);
            }
            // Distinct, and no gap: nothing refused or lost took a revision.
            const sorted = [...revisions].sort((a, b) => a - b);
            expect(sorted).toEqual(sorted.map((_, i) => i + 1));
            // The changes on record are those answered, nothing more.
            const changes = await repository.changesSince(0, 1_000);
            expect(changes.map((c) => c.revision)).toEqual(sorted);
            // Every change announced to another instance.
            const all = new Set(sorted);
            await eventually('every revision heard', () =>
              [...all].every((r) => heard.includes(r)),
            );
          } finally {
            await stop();
            await watcher.close();
            await repository.close();
            if (name === 'pglite') {
              Reflect.deleteProperty(database, 'query');
              Reflect.deleteProperty(database, 'exec');
            }
            await database.query(`DROP SCHEMA ${schema} CASCADE`);
          }
        },
      ),
      { numRuns: 25 },
    );
  });
  it('every update answers as alone: what one by one leaves, revisions in order per subscription, a refusal its own', async () => {
    const change: fc.Arbitrary<SubscriptionChanges> = fc.record(
      {
        endpointUrl: fc.nat(9).map((i) => `https://hooks.example.com/changed/${i}`),
        events: fc.subarray(['folio/created', 'folio/*', 'reservation/*'], { minLength: 1 }),
        propertyIds: fc.option(fc.subarray(['MUC', 'BER', 'HAM']), { nil: null }),
        status: fc.constantFrom('enabled' as const, 'disabled' as const),
        disabledReason: fc.constantFrom('requested' as const, 'endpoint_failing' as const),
        description: fc.option(fc.constantFrom('first', 'second'), { nil: null }),
        rateLimit: fc.option(fc.integer({ min: 1, max: 100 }), { nil: null }),
        headers: fc.option(fc.constant({ 'X-Team': 'ops' }), { nil: null }),
        metadata: fc.option(fc.constant({ owner: 'billing' }), { nil: null }),
        signatureType: fc.constantFrom('hmac-sha256' as const, 'ed25519' as const),
      },
      { requiredKeys: [] },
    );
    // Subscriptions s0 to s3 of two accounts; s3 is deleted, s4 never was.
    const target = fc.record({
      subscription: fc.nat(4),
      change,
      refused: fc.constantFrom(false, false, true),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(target, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.boolean(), { maxLength: 6 }),
        GROUP_COMMIT,
        async (turns, losses, groupCommit) => {
          // Once the subscriptions are set up: the updates' statements (delete's too, unused).
          const { repository, lost, arm, drop } = await lossyRepository(name, losses, groupCommit);
          const model = new MemorySubscriptionRepository();
          const clock = new FakeClock(T0);
          try {
            const base = await fourWithOneDeleted(repository, model);
            arm(true);
            let n = 0;
            const made: Array<{
              key: string;
              i: number;
              refused: boolean;
              changes: SubscriptionChanges;
              at: number;
              outcome: Promise<{ stored?: StoredSubscription | undefined; error?: unknown }>;
            }> = [];
            for (const turn of turns) {
              clock.advance(1_000);
              const at = clock.now();
              const outcomes = turn.map(({ subscription: i, change: c, refused }) => {
                const key = `u${n++}`;
                // PostgreSQL refuses a NUL in text: the database's own refusal of this update.
                const changes = refused ? { ...c, description: 'refused\u0000' } : c;
                const outcome = repository.update(accountOf(i), `s${i}`, changes, at).then(
                  (stored) => ({ stored }),
                  (error: unknown) => ({ error }),
                );
                return { key, i, refused, changes, at, outcome };
              });
              made.push(...outcomes);
              await Promise.all(outcomes.map((o) => o.outcome));
            }
            // The model: the updates one by one in the order made, but those refused or lost.
            const revisions: number[] = [];
            const lastOf = new Map<number, number>();
            for (const { i, refused, changes, at, outcome } of made) {
              const seen = await outcome;
              const account = accountOf(i);
              // A lost statement held this update (its subscription's key in the statement).
              if (
                seen.error !== undefined &&
                (seen.error as Error).message.startsWith('connection lost')
              ) {
                expect(lost.has(`s${i}`)).toBe(true);
                continue;
              }
              if (refused) {
                expect(seen.error, `s${i}`).toMatchObject({ code: '22021' });
                continue;
              }
              expect(seen.error).toBeUndefined();
              const expected = await model.update(account, `s${i}`, changes, at);
              if (expected === undefined) {
                expect(seen.stored).toBeUndefined();
                continue;
              }
              const stored = seen.stored as StoredSubscription;
              const { revision, ...rest } = stored;
              const { revision: _modelRevision, ...wanted } = expected;
              expect(rest).toEqual(wanted);
              expect(revision).toBeGreaterThan(lastOf.get(i) ?? base);
              lastOf.set(i, revision);
              revisions.push(revision);
            }
            const sorted = [...revisions].sort((a, b) => a - b);
            expect(sorted).toEqual(sorted.map((_, k) => base + k + 1));
            for (let i = 0; i < 5; i++) {
              const held = await repository.get(accountOf(i), `s${i}`);
              const { revision: _a, ...got } = held ?? ({} as StoredSubscription);
              const wantedNow = await model.get(accountOf(i), `s${i}`);
              const { revision: _b, ...want } = wantedNow ?? ({} as StoredSubscription);
              expect(got, `s${i}`).toEqual(want);
            }
          } finally {
            await drop();
          }
        },
      ),
      { numRuns: 25 },
    );
  });
  it('every delete answers as alone: a tombstone with a revision, in order, the account counted down, a lost statement its own', async () => {
    // Subscriptions s0 to s5 of two accounts, three each at a bound of three; s6 never was.
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.nat(6), { minLength: 1, maxLength: 8 }), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.array(fc.boolean(), { maxLength: 6 }),
        GROUP_COMMIT,
        async (turns, losses, groupCommit) => {
          // Once the subscriptions are set up: the deletes' statements.
          const { repository, lost, arm, drop } = await lossyRepository(name, losses, groupCommit);
          const model = new MemorySubscriptionRepository();
          const clock = new FakeClock(T0);
          const bound = { at: T0, maxPerAccount: 3 };
          try {
            for (const r of [repository, model]) {
              for (let i = 0; i < 6; i++) {
                await r.create(subscription(accountOf(i), `s${i}`), `whsec_${i}`, bound);
              }
            }
            const base = (await repository.changesSince(0, 100)).at(-1)?.revision ?? 0;
            arm(true);
            const made: Array<{ i: number; at: number; outcome: Promise<unknown> }> = [];
            for (const turn of turns) {
              clock.advance(1_000);
              const at = clock.now();
              // One turn's deletes are made together: they share batches as the group forms them.
              const outcomes = turn.map((i) => ({
                i,
                at,
                outcome: repository.delete(accountOf(i), `s${i}`, at).then(
                  (deleted) => ({ deleted }),
                  (error: unknown) => ({ error }),
                ),
              }));
              made.push(...outcomes);
              await Promise.all(outcomes.map((o) => o.outcome));
            }
            arm(false);
            // The model: the deletes one by one in the order made, but those whose statement was
            // lost, which delete nothing.
            let deletes = 0;
            for (const { i, at, outcome } of made) {
              const seen = (await outcome) as { deleted?: boolean; error?: Error };
              if (seen.error !== undefined) {
                expect(seen.error.message).toMatch(/^connection lost/);
                expect(lost.has(`s${i}`)).toBe(true);
                continue;
              }
              const expected = await model.delete(accountOf(i), `s${i}`, at);
              expect(seen.deleted, `s${i}`).toBe(expected);
              if (expected) deletes++;
            }
            // Each delete that answered true is a tombstone with the next revision, no gap.
            const changes = await repository.changesSince(base, 100);
            expect(changes.map((c) => c.revision)).toEqual(
              Array.from({ length: deletes }, (_, k) => base + k + 1),
            );
            expect(changes.every((c) => c.subscription === undefined)).toBe(true);
            for (let i = 0; i < 7; i++) {
              const account = accountOf(i);
              expect(await repository.get(account, `s${i}`), `s${i}`).toEqual(
                (await model.get(account, `s${i}`)) === undefined ? undefined : expect.anything(),
              );
              expect(await repository.signingSecrets(account, `s${i}`, clock.now())).toEqual(
                await model.signingSecrets(account, `s${i}`, clock.now()),
              );
            }
            // Each account was counted down by its deletes: it takes creates up to the bound again.
            for (const account of ['ACME', 'BETA']) {
              const live = (await model.list(account, { offset: 0, limit: 10 })).totalItems;
              const answers: boolean[] = [];
              for (let k = 0; k < 4; k++) {
                const made = subscription(account, `${account}-new-${k}`);
                answers.push((await repository.create(made, 'whsec_new', bound)) !== undefined);
              }
              expect(answers, account).toEqual([0, 1, 2, 3].map((k) => live + k < 3));
            }
          } finally {
            await drop();
          }
        },
      ),
      { numRuns: 25 },
    );
  });
  it('every rotation answers as alone: the secrets one by one leave, revisions in order, a refusal its own', async () => {
    // Subscriptions s0 to s3 of two accounts; s3 is deleted, s4 never was.
    const rotation = fc.record({
      subscription: fc.nat(4),
      graceMs: fc.constantFrom(0, 500, 5_000),
      ed25519: fc.boolean(),
      refused: fc.constantFrom(false, false, true),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(rotation, { minLength: 1, maxLength: 8 }), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.array(fc.boolean(), { maxLength: 6 }),
        GROUP_COMMIT,
        async (turns, losses, groupCommit) => {
          // Once the subscriptions are set up: the rotations' statements.
          const { repository, lost, arm, drop } = await lossyRepository(name, losses, groupCommit);
          const model = new MemorySubscriptionRepository();
          const clock = new FakeClock(T0);
          try {
            const base = await fourWithOneDeleted(repository, model);
            arm(true);
            let n = 0;
            const made: Array<{
              i: number;
              secret: string;
              options: RotateSecretOptions;
              refused: boolean;
              outcome: Promise<{ rotated?: boolean; error?: unknown }>;
            }> = [];
            for (const turn of turns) {
              clock.advance(1_000);
              const at = clock.now();
              const outcomes = turn.map(({ subscription: i, graceMs, ed25519, refused }) => {
                const k = n++;
                // PostgreSQL refuses a NUL in text: the database's own refusal of this rotation.
                const secret = `${ed25519 ? 'whsk' : 'whsec'}_r${k}${refused ? '\u0000' : ''}`;
                const options: RotateSecretOptions = ed25519
                  ? { at, graceMs, publicKey: `whpk_r${k}`, signatureType: 'ed25519' }
                  : { at, graceMs, signatureType: 'hmac-sha256' };
                const outcome = repository
                  .rotateSecret(accountOf(i), `s${i}`, secret, options)
                  .then(
                    (rotated) => ({ rotated }),
                    (error: unknown) => ({ error }),
                  );
                return { i, secret, options, refused, outcome };
              });
              made.push(...outcomes);
              await Promise.all(outcomes.map((o) => o.outcome));
            }
            arm(false);
            // The model: the rotations one by one in the order made, but those refused or lost.
            let rotations = 0;
            for (const { i, secret, options, refused, outcome } of made) {
              const seen = await outcome;
              if (
                seen.error !== undefined &&
                (seen.error as Error).message.startsWith('connection lost')
              ) {
                expect(lost.has(`s${i}`)).toBe(true);
                continue;
              }
              if (refused) {
                expect(seen.error, `s${i}`).toMatchObject({ code: '22021' });
                continue;
              }
              expect(seen.error).toBeUndefined();
              const expected = await model.rotateSecret(accountOf(i), `s${i}`, secret, options);
              expect(seen.rotated, `s${i}`).toBe(expected);
              if (expected) rotations++;
            }
            // Each rotation took a revision, no gap: the newest on record is the last of them
            // (a subscription's row keeps its newest revision only).
            const changes = await repository.changesSince(base, 100);
            expect(changes.at(-1)?.revision ?? base).toBe(base + rotations);
            for (let i = 0; i < 5; i++) {
              const account = accountOf(i);
              const { revision: _a, ...got } =
                (await repository.get(account, `s${i}`)) ?? ({} as StoredSubscription);
              const { revision: _b, ...want } =
                (await model.get(account, `s${i}`)) ?? ({} as StoredSubscription);
              expect(got, `s${i}`).toEqual(want);
              for (const later of [0, 400, 1_000, 6_000]) {
                const at = clock.now() + later;
                expect(
                  await repository.signingSecrets(account, `s${i}`, at),
                  `s${i} +${later}`,
                ).toEqual(await model.signingSecrets(account, `s${i}`, at));
              }
            }
          } finally {
            await drop();
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
