/**
 * Statistics kept current on PGlite, which has no autovacuum: the repository analyses the tables of
 * subscriptions once it has written `MIN_ROWS` rows to them, then each time it has written a tenth
 * of the rows they held at the last analysis; never two at once, none after close. On a real
 * PGlite they are analysed, and a batch of updates then finds each subscription by its key rather
 * than by reading every subscription; a batch of creates does so even before any analysis.
 */
import type { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parameterLiteral } from '../../src/postgres/embedded-statements.js';
import {
  EmbeddedUpkeep,
  OUTBOX_TABLES,
  SUBSCRIPTION_TABLES,
} from '../../src/postgres/embedded-upkeep.js';
import { PostgresSubscriptionRepository } from '../../src/postgres/index.js';
import { outboxStatements } from '../../src/postgres/outbox-statements.js';
import { createColumns, updateColumns } from '../../src/postgres/rows.js';
import type { SqlResult } from '../../src/postgres/sql-database.js';
import { statements } from '../../src/postgres/statements.js';
import { pgliteInMemory } from '../support/pglite-template.js';
import { subscription } from './databases.js';

/**
 * An exec that answers the tables' sizes with `reltuples` rows (and one never analysed) and holds
 * each ANALYZE.
 */
function fakeDatabase(reltuples: () => number) {
  const analyses: string[] = [];
  const held: (() => void)[] = [];
  let failNext = false;
  const exec = async (text: string): Promise<readonly SqlResult[]> => {
    if (text.startsWith('ANALYZE')) {
      analyses.push(text);
      await new Promise<void>((resolve) => held.push(resolve));
      if (failNext) {
        failNext = false;
        throw new Error('the database closed');
      }
      return [{ rows: [] }];
    }
    return [{ rows: [{ reltuples: reltuples() }, { reltuples: -1 }] }];
  };
  return {
    exec,
    analyses,
    /** End the analysis under way. */
    async finish(fail = false) {
      failNext = fail;
      await settle();
      held.shift()?.();
      await settle();
    },
  };
}

/** Let every promise chain that can move, move: the microtasks all run before the next turn. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('EmbeddedUpkeep', () => {
  it('analyses its tables once the fewest rows are written, quoting their names', async () => {
    const db = fakeDatabase(() => 0);
    const rule = {
      tables: { subscriptions: [], 'x"y': ['a', 'b"c'] },
      minRows: 1_000,
      fraction: 0.5,
    };
    const upkeep = new EmbeddedUpkeep(db.exec, 'my_schema', rule);
    upkeep.wrote(999);
    await settle();
    expect(db.analyses).toEqual([]);
    upkeep.wrote(1);
    await settle();
    expect(db.analyses).toEqual([
      'ANALYZE "my_schema"."subscriptions", "my_schema"."x""y" ("a", "b""c")',
    ]);
    await db.finish();
    await upkeep.close();
  });

  it('follows the rule for any writes: an analysis starts when the rows since the last start reach the due count, never two at once, none after close', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ write: fc.integer({ min: -5, max: 3_000 }) }),
            fc.record({ fail: fc.boolean(), rows: fc.integer({ min: 0, max: 200_000 }) }),
          ),
          { maxLength: 60 },
        ),
        fc.oneof(
          fc.constantFrom(SUBSCRIPTION_TABLES, OUTBOX_TABLES),
          fc.record({
            tables: fc.constant({ t: [] }),
            minRows: fc.integer({ min: 1, max: 5_000 }),
            fraction: fc.double({ min: 0.01, max: 2, noNaN: true }),
          }),
        ),
        async (steps, rule) => {
          let rows = 0;
          const db = fakeDatabase(() => rows);
          const upkeep = new EmbeddedUpkeep(db.exec, 's', rule);
          // The rule, from the module's contract: the first analysis is due after `minRows` rows;
          // after one that succeeds, the next after max(minRows, fraction x the tables' rows);
          // after one that fails, after as many as before. Rows written while one runs count
          // towards the next, which a write of rows starts.
          let since = 0;
          let due = rule.minRows;
          let running = false;
          let started = 0;
          for (const step of steps) {
            if ('write' in step) {
              upkeep.wrote(step.write);
              // A write of no rows (or of a count that is not one) is no write.
              if (step.write > 0) {
                since += step.write;
                if (!running && since >= due) {
                  running = true;
                  since = 0;
                  started++;
                }
              }
            } else if (running) {
              rows = step.rows;
              await db.finish(step.fail);
              running = false;
              if (!step.fail) due = Math.max(rule.minRows, rule.fraction * rows);
            }
            await settle();
            // Started exactly when due; each is held until finished, so never two at once.
            expect(db.analyses.length).toBe(started);
          }
          const closing = upkeep.close();
          if (running) await db.finish();
          await closing;
          upkeep.wrote(1_000_000);
          await settle();
          expect(db.analyses.length).toBe(started);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('PostgresSubscriptionRepository on PGlite', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await pgliteInMemory();
  });
  afterAll(() => db.close());

  /** Rows each scan of `relation` in the plan read, in all its loops. */
  function rowsRead(plan: Record<string, unknown>, relation: string): number[] {
    const own =
      plan['Relation Name'] === relation
        ? [Number(plan['Actual Rows']) * Number(plan['Actual Loops'])]
        : [];
    const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
    return [...own, ...children.flatMap((child) => rowsRead(child, relation))];
  }

  /** Rows each scan of `relation` read in the generic plan of `text` run with `params`. */
  async function genericReads(
    name: string,
    text: string,
    params: readonly unknown[],
    relation = 'subscriptions',
  ): Promise<number[]> {
    const literals = params.map((column) => parameterLiteral(column));
    await db.exec(`PREPARE ${name} AS ${text}`);
    await db.exec('SET plan_cache_mode = force_generic_plan');
    await db.exec('BEGIN');
    try {
      const [explained] = await db.exec(
        `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}(${literals.join(', ')})`,
      );
      const json = explained?.rows[0]?.['QUERY PLAN'] as { Plan: Record<string, unknown> }[];
      return rowsRead(json[0]?.Plan ?? {}, relation);
    } finally {
      await db.exec('ROLLBACK');
      await db.exec(`RESET plan_cache_mode; DEALLOCATE ${name}`);
    }
  }

  it('looks up a batch of creates’ subscriptions by key even with no statistics', async () => {
    const repository = await PostgresSubscriptionRepository.open({ database: db, schema: 'fresh' });
    try {
      // Fewer rows than make an analysis due: the tables keep no statistics.
      for (let turn = 0; turn < 20; turn++) {
        await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            repository.create(subscription(`A${i}`, `s${turn}_${i}`), 'whsec_x', {
              at: 1_000,
              maxPerAccount: 1_000,
            }),
          ),
        );
      }
    } finally {
      await repository.close();
    }
    const { rows } = await db.query<{ reltuples: number }>(
      "SELECT reltuples FROM pg_class WHERE oid = 'fresh.subscriptions'::regclass",
    );
    expect(Number(rows[0]?.reltuples)).toBeLessThan(0); // never analysed
    const sql = statements('"fresh"', 'fresh_changes');
    const batch = ['s5_3', 'new_1'].map((id, i) => ({
      subscription: subscription(`A${i === 0 ? 3 : 1}`, id),
      secret: 'whsec_y',
      keyId: null,
      at: 2_000,
      max: 1_000,
      publicKey: null,
    }));
    const reads = await genericReads('fresh_create', sql.createSubscriptions, createColumns(batch));
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) expect(read).toBeLessThanOrEqual(10);
  });

  it('analyses the tables of subscriptions as it writes them, so that a batch of updates reads each subscription by its key, not all of them', async () => {
    const repository = await PostgresSubscriptionRepository.open({ database: db, schema: 'kept' });
    try {
      for (let turn = 0; turn < 75; turn++) {
        await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            repository.create(subscription(`A${i}`, `s${turn}_${i}`), 'whsec_x', {
              at: 1_000,
              maxPerAccount: 1_000,
            }),
          ),
        );
      }
    } finally {
      await repository.close(); // lets the analysis under way end
    }
    const { rows } = await db.query<{ reltuples: number }>(
      "SELECT reltuples FROM pg_class WHERE oid = 'kept.subscriptions'::regclass",
    );
    // Never analysed reads -1; an analysis ran once the fewest rows had been written.
    expect(Number(rows[0]?.reltuples)).toBeGreaterThanOrEqual(SUBSCRIPTION_TABLES.minRows);
    const sql = statements('"kept"', 'kept_changes');
    const batch = ['s3_3', 's70_9'].map((id) => ({
      accountCode: `A${id.split('_')[1]}`,
      id,
      changes: { description: 'moved' },
      at: 2_000,
    }));
    // As the repository runs it: prepared once, its plan kept for any batch (a generic plan).
    const reads = await genericReads('kept_update', sql.updateSubscriptions, updateColumns(batch));
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) expect(read).toBeLessThanOrEqual(10);
  });

  it('analyses the outbox’s tables once they have grown, so that retention and a page of attempts read only what they return', async () => {
    const repository = await PostgresSubscriptionRepository.open({ database: db, schema: 'grown' });
    const delivery = { subscriptionId: 'sub_1', endpointUrl: 'https://hooks.example.com/a' };
    try {
      // 4 rows a delivered message: the message, its delivery, the attempt and the delivery moved.
      for (let turn = 0; turn < 260; turn++) {
        const ids = Array.from({ length: 20 }, (_, i) => `msg_${turn * 20 + i}`);
        await Promise.all(
          ids.map((id, i) =>
            repository.recordMessage(
              { accountCode: 'ACME', id, kind: 'k', body: '{}', createdAt: 10_000 + turn * 20 + i },
              [delivery],
              { leaseUntil: 1 },
            ),
          ),
        );
        await Promise.all(
          ids.map((id) =>
            repository.recordAttempt('ACME', {
              id,
              ...delivery,
              attempt: 1,
              at: 10_000 + turn,
              durationMs: 1,
              status: 204,
              outcome: 'delivered',
            }),
          ),
        );
      }
    } finally {
      await repository.close();
    }
    const { rows } = await db.query<{ reltuples: number }>(
      "SELECT reltuples FROM pg_class WHERE oid = 'grown.delivery_log'::regclass",
    );
    expect(Number(rows[0]?.reltuples)).toBeGreaterThan(0);
    const sql = outboxStatements('"grown"');
    // Nothing is old enough: retention finds that without reading every message or attempt.
    for (const read of await genericReads(
      'grown_messages',
      sql.deleteMessagesBefore,
      [1, 500],
      'messages',
    )) {
      expect(read).toBeLessThanOrEqual(10);
    }
    for (const read of await genericReads(
      'grown_log',
      sql.deleteAttemptsBefore,
      [1, 500],
      'delivery_log',
    )) {
      expect(read).toBeLessThanOrEqual(10);
    }
    // The newest 50 of the account's 5,200 attempts.
    const page = ['ACME', 2 ** 62, null, null, null, null, 50];
    for (const read of await genericReads('grown_page', sql.attempts, page, 'delivery_log')) {
      expect(read).toBeLessThanOrEqual(60);
    }
  });
});
