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
    const upkeep = new EmbeddedUpkeep(db, 'my_schema', rule);
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
          const upkeep = new EmbeddedUpkeep(db, 's', rule);
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

  /**
   * The most rows one scan of `relation` read in the generic plan of `text` run with `params`
   * (the plan must scan it).
   */
  async function mostRead(
    name: string,
    text: string,
    params: readonly unknown[],
    relation = 'subscriptions',
  ): Promise<number> {
    const literals = params.map((column) => parameterLiteral(column));
    await db.exec(`PREPARE ${name} AS ${text}`);
    await db.exec('SET plan_cache_mode = force_generic_plan');
    await db.exec('BEGIN');
    try {
      const [explained] = await db.exec(
        `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}(${literals.join(', ')})`,
      );
      const json = explained?.rows[0]?.['QUERY PLAN'] as { Plan: Record<string, unknown> }[];
      const reads = rowsRead(json[0]?.Plan ?? {}, relation);
      expect(reads.length).toBeGreaterThan(0);
      return Math.max(...reads);
    } finally {
      await db.exec('ROLLBACK');
      await db.exec(`RESET plan_cache_mode; DEALLOCATE ${name}`);
    }
  }

  /**
   * `turns` batches of 40 creates (one per account) through a repository on `schema`, closed
   * after: closing lets an analysis under way end.
   */
  async function createInTurns(schema: string, turns: number): Promise<void> {
    const repository = await PostgresSubscriptionRepository.open({ database: db, schema });
    try {
      for (let turn = 0; turn < turns; turn++) {
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
  }

  /** The rows the planner takes `table` to hold: -1 for a table never analysed. */
  async function reltuples(table: string): Promise<number> {
    const { rows } = await db.query<{ reltuples: number }>(
      'SELECT reltuples FROM pg_class WHERE oid = $1::regclass',
      [table],
    );
    return Number(rows[0]?.reltuples);
  }

  it('looks up a batch of creates’ subscriptions by key even with no statistics', async () => {
    // Fewer rows than make an analysis due: the tables keep no statistics.
    await createInTurns('fresh', 20);
    expect(await reltuples('fresh.subscriptions')).toBeLessThan(0); // never analysed
    const sql = statements('"fresh"', 'fresh_changes');
    const batch = ['s5_3', 'new_1'].map((id, i) => ({
      subscription: subscription(`A${i === 0 ? 3 : 1}`, id),
      secret: 'whsec_y',
      keyId: null,
      at: 2_000,
      max: 1_000,
      publicKey: null,
    }));
    expect(
      await mostRead('fresh_create', sql.createSubscriptions, createColumns(batch)),
    ).toBeLessThanOrEqual(10);
  });

  it('analyses the tables of subscriptions as it writes them, so that a batch of updates reads each subscription by its key, not all of them', async () => {
    await createInTurns('kept', 75);
    // Never analysed reads -1; an analysis ran once the fewest rows had been written.
    expect(await reltuples('kept.subscriptions')).toBeGreaterThanOrEqual(
      SUBSCRIPTION_TABLES.minRows,
    );
    const sql = statements('"kept"', 'kept_changes');
    const batch = ['s3_3', 's70_9'].map((id) => ({
      accountCode: `A${id.split('_')[1]}`,
      id,
      changes: { description: 'moved' },
      at: 2_000,
    }));
    // As the repository runs it: prepared once, its plan kept for any batch (a generic plan).
    expect(
      await mostRead('kept_update', sql.updateSubscriptions, updateColumns(batch)),
    ).toBeLessThanOrEqual(10);
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
    expect(await reltuples('grown.delivery_log')).toBeGreaterThan(0);
    const sql = outboxStatements('"grown"');
    // Nothing is old enough: retention finds that without reading every message or attempt.
    const old = [1, 500];
    expect(
      await mostRead('old_messages', sql.deleteMessagesBefore, old, 'messages'),
    ).toBeLessThanOrEqual(10);
    expect(
      await mostRead('old_attempts', sql.deleteAttemptsBefore, old, 'delivery_log'),
    ).toBeLessThanOrEqual(10);
    // The newest 50 of the account's 5,200 attempts.
    const page = ['ACME', 2 ** 62, null, null, null, null, 50];
    expect(await mostRead('grown_page', sql.attempts, page, 'delivery_log')).toBeLessThanOrEqual(
      60,
    );
  });
});
