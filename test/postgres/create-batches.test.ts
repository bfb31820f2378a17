/**
 * Creates under group commit, on a pg Pool and on PGlite: the creates in flight at once share one
 * statement, each of another account. Against what a create promises its caller, whatever the
 * batches: one that answered is committed with its revision the moment it answers; revisions are
 * distinct, with no gap, and an account's creates take them in the order they were made; an
 * account's bound refuses exactly the creates beyond it, in that order; one the database refuses
 * fails its own caller only, with the database's error, and one whose statement was lost on the way
 * (no answer from the database) fails with that error, nothing of it written; every change is
 * announced to another instance's `watch`. The times come from a fake clock, moved on between
 * turns; the database is the only thing the test waits for.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.js';
import { PostgresSubscriptionRepository, type SqlDatabase } from '../../src/postgres/index.js';
import type { StoredSubscription } from '../../src/webhooks/subscriptions/subscription.js';
import { eventually } from '../support/eventually.js';
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
function losing(database: SqlDatabase, losses: boolean[]) {
  const lost = new Set<string>();
  const inner = database.query.bind(database) as (config: unknown, params?: unknown[]) => unknown;
  // Text and parameters, or a pg config with a statement name (prepared statements on a pool).
  const query = async (config: unknown, params?: unknown[]) => {
    const text = typeof config === 'string' ? config : (config as { text: string }).text;
    const values = params ?? (config as { values?: unknown[] }).values ?? [];
    const creates = text.startsWith('WITH batch AS') || text.startsWith('WITH guard AS');
    if (creates && losses.shift() === true) {
      const ids = values[1];
      for (const id of Array.isArray(ids) ? ids : [ids]) lost.add(String(id));
      throw new Error('connection lost before the statement ran');
    }
    return inner(config, params);
  };
  return { query, lost };
}

describe.each(DATABASES)('creates in batches on %s', (name) => {
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
        async (turns: Call[][], maxPerAccount, losses) => {
          const database = dbs.database(name);
          const schema = dbs.schema();
          const { query, lost } = losing(database, [...losses]);
          // PGlite: its own query replaced for the run (it stays an embedded database); a pool:
          // wrapped, as the repository takes any pool.
          const wrapped =
            name === 'pglite'
              ? Object.assign(database, { query })
              : ({
                  query,
                  connect: () => (database as unknown as { connect: () => unknown }).connect(),
                } as never);
          const repository = await PostgresSubscriptionRepository.open({
            database: wrapped,
            schema,
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
            if (name === 'pglite') Reflect.deleteProperty(database, 'query');
            await database.query(`DROP SCHEMA ${schema} CASCADE`);
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
