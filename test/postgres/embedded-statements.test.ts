/**
 * Statements prepared on PGlite and run with their parameters as literals: each answer is the one
 * PostgreSQL gives the same statement with bound parameters (PGlite's `query`), for any text,
 * number and boolean and flat arrays of them, whatever the text holds; what cannot be written as a
 * literal, or prepared, is left to `query`; a statement deallocated by other code is prepared again.
 */
import type { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedStatements, parameterLiteral } from '../../src/postgres/embedded-statements.js';
import { PostgresSubscriptionRepository } from '../../src/postgres/index.js';
import { pgliteInMemory } from '../support/pglite-template.js';
import { subscription } from './databases.js';

let db: PGlite;
beforeAll(async () => {
  db = await pgliteInMemory();
});
afterAll(() => db.close());

const ROW = 'SELECT $1::text AS t, $2::float8 AS d, $3::bigint AS n, $4::boolean AS b';

/** PostgreSQL's own answer, the parameters bound. */
const bound = async (text: string, params: unknown[]) => (await db.query(text, params)).rows;

/** Strings that would end or escape a literal written carelessly. */
const HOSTILE = [
  "'",
  "''",
  "\\'",
  '\\',
  "'); DROP TABLE victims; --",
  "E'\\x41'",
  '$$',
  '$q$ ) ; SELECT 1; $q$',
  '\\\\',
  '\\n',
  '"',
  '{"a", NULL}',
  'NULL',
  '',
  'ünïcödé 🎉',
  '\uD800',
];

const TEXT = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => !s.includes('\u0000')),
  fc.constantFrom(...HOSTILE),
  fc
    .array(fc.constantFrom("'", '\\', '"', 'E', '$', ';', ')', '{', '}', ',', ' ', 'NULL', 'x'), {
      maxLength: 12,
    })
    .map((a) => a.join('')),
);

/** No lone surrogate (a high one not followed by a low one, or a low one alone). */
const WELL_FORMED = TEXT.filter((s) => !/\p{Surrogate}/u.test(s));

describe('EmbeddedStatements on PGlite', () => {
  it('answers as the bound statement does, for any string, number, integer and boolean', async () => {
    await db.exec('CREATE TABLE IF NOT EXISTS victims (x int)');
    const statements = new EmbeddedStatements(db);
    await fc.assert(
      fc.asyncProperty(
        fc.option(TEXT, { nil: null }),
        fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: null }),
        fc.option(fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }), { nil: null }),
        fc.option(fc.boolean(), { nil: null }),
        async (...params) => {
          expect(await statements.rows(ROW, params)).toEqual(await bound(ROW, params));
        },
      ),
      { numRuns: 300 },
    );
    // No literal ended early: the table a hostile string names is still there.
    expect((await db.query("SELECT to_regclass('victims') IS NOT NULL AS kept")).rows).toEqual([
      { kept: true },
    ]);
  });

  it('answers as the bound statement does for flat arrays of strings, numbers, integers and booleans, nulls among them', async () => {
    const ARRAYS =
      'SELECT $1::text[] AS t, $2::float8[] AS d, $3::bigint[] AS n, $4::boolean[] AS b, ' +
      'cardinality($1::text[]) AS size, array_position($1::text[], NULL) AS first_null';
    const statements = new EmbeddedStatements(db);
    const arrayOf = <T>(element: fc.Arbitrary<T>) =>
      fc.array(fc.option(element, { nil: null }), { maxLength: 6 });
    await fc.assert(
      fc.asyncProperty(
        arrayOf(TEXT),
        arrayOf(fc.double({ noNaN: true, noDefaultInfinity: true })),
        arrayOf(fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 })),
        arrayOf(fc.boolean()),
        async (...params) => {
          expect(await statements.rows(ARRAYS, params)).toEqual(await bound(ARRAYS, params));
        },
      ),
      { numRuns: 300 },
    );
    // The string "NULL", braces, commas and quotes are elements, not syntax.
    const tricky = ['NULL', '{', '}', ',', '"', '\\', "'", ' ', '', '{"a",NULL}'];
    const rows = await statements.rows('SELECT $1::text[] AS t', [tricky]);
    expect(rows).toEqual([{ t: tricky }]);
  });

  it('writes strings as escape strings, read the same with standard_conforming_strings off', async () => {
    const statements = new EmbeddedStatements(db);
    await db.exec('SET standard_conforming_strings = off');
    try {
      for (const text of HOSTILE) {
        expect(await statements.rows('SELECT $1::text AS t', [text])).toEqual(
          await bound('SELECT $1::text AS t', [text]),
        );
      }
      expect(await statements.rows('SELECT $1::text[] AS t', [HOSTILE])).toEqual(
        await bound('SELECT $1::text[] AS t', [HOSTILE]),
      );
    } finally {
      await db.exec('RESET standard_conforming_strings');
    }
  });

  it('leaves to query what is not a plain value, and a text PREPARE refuses', async () => {
    const statements = new EmbeddedStatements(db);
    for (const value of [
      [['a']],
      [Buffer.from('a')],
      [1n],
      [Number.NaN],
      ['a\u0000b'],
      [{}],
      Buffer.from('a'),
      new Date(0),
      1n,
      Number.NaN,
      Infinity,
      'a\u0000b',
      {},
    ]) {
      expect(parameterLiteral(value)).toBeUndefined();
      expect(await statements.rows('SELECT $1::text AS t', [value])).toBeUndefined();
    }
    // Refused once, then sent the usual way without trying again.
    const prepares: string[] = [];
    const counting = {
      exec: (text: string) => {
        prepares.push(text);
        return db.exec(text);
      },
    };
    const counted = new EmbeddedStatements(counting);
    expect(await counted.rows('SELECT FROM no_such_table WHERE $1::int = 1', [1])).toBeUndefined();
    expect(await counted.rows('SELECT FROM no_such_table WHERE $1::int = 1', [1])).toBeUndefined();
    expect(prepares).toHaveLength(1);
  });

  it('prepares each text once, and again after other code deallocates it', async () => {
    const executed: string[] = [];
    const statements = new EmbeddedStatements({
      exec: (text: string) => {
        executed.push(text.split(' ')[0] ?? '');
        return db.exec(text);
      },
    });
    const one = 'SELECT $1::int + 1 AS n';
    expect(await statements.rows(one, [1])).toEqual([{ n: 2 }]);
    expect(await statements.rows(one, [2])).toEqual([{ n: 3 }]);
    expect(executed).toEqual(['PREPARE', 'EXECUTE', 'EXECUTE']);
    await db.exec('DEALLOCATE ALL');
    expect(await statements.rows(one, [3])).toEqual([{ n: 4 }]);
    expect(executed).toEqual(['PREPARE', 'EXECUTE', 'EXECUTE', 'EXECUTE', 'PREPARE', 'EXECUTE']);
    // A second holder of the same database finds the name taken by the same text, and uses it.
    const other = new EmbeddedStatements(db);
    expect(await other.rows(one, [4])).toEqual([{ n: 5 }]);
  });

  it('reports an error the statement raises, as query does', async () => {
    const statements = new EmbeddedStatements(db);
    const text = 'SELECT $1::text::int AS n';
    const ours = await statements.rows(text, ['nope']).catch((e: { code?: string }) => e.code);
    const theirs = await bound(text, ['nope']).catch((e: { code?: string }) => e.code);
    expect(ours).toBe('22P02');
    expect(ours).toBe(theirs);
  });
});

describe('PostgresSubscriptionRepository on PGlite', () => {
  it('reads back what it wrote under any account code and id, quotes and backslashes included', async () => {
    const repository = await PostgresSubscriptionRepository.open({
      database: db,
      schema: 'hostile_ids',
    });
    try {
      await fc.assert(
        // Well-formed: a lone surrogate is stored as U+FFFD, by either way of sending it.
        fc.asyncProperty(WELL_FORMED, WELL_FORMED, async (accountCode, id) => {
          const created = await repository.create(subscription(accountCode, id), 'whsec_x', {
            at: 1_000,
            maxPerAccount: 1_000,
          });
          expect(created?.accountCode).toBe(accountCode);
          expect(await repository.get(accountCode, id)).toEqual(created);
          const page = await repository.list(accountCode, { offset: 0, limit: 1_000 });
          expect(page.items.filter((s) => s.id === id)).toEqual([created]);
          expect(page.totalItems).toBe(page.items.length);
          expect(await repository.delete(accountCode, id, 2_000)).toBe(true);
          expect(await repository.get(accountCode, id)).toBeUndefined();
        }),
        { numRuns: 100 },
      );
    } finally {
      await repository.close();
    }
  });

  it('prepares the statements it runs with plain parameters, unless told not to', async () => {
    const prepared = async (preparedStatements: boolean, schema: string) => {
      await db.exec('DEALLOCATE ALL');
      const repository = await PostgresSubscriptionRepository.open({
        database: db,
        schema,
        preparedStatements,
      });
      try {
        for (let i = 0; i < 3; i++) {
          await repository.create(subscription('ACME', `s${i}`), 'whsec_x', {
            at: 1_000,
            maxPerAccount: 100,
          });
          expect((await repository.get('ACME', `s${i}`))?.id).toBe(`s${i}`);
          expect((await repository.list('ACME', { offset: 0, limit: 10 })).totalItems).toBe(i + 1);
        }
        // The outbox's writes, whose parameters are arrays.
        const message = { accountCode: 'ACME', id: 'msg_1', kind: 'k', body: '{}', createdAt: 1 };
        const delivery = { subscriptionId: 's0', endpointUrl: 'https://example.com/hook' };
        await repository.recordMessage(message, [delivery], { leaseUntil: 2 });
        const attempt = { id: 'msg_1', ...delivery, attempt: 1, at: 3, durationMs: 1 };
        await repository.recordAttempt('ACME', { ...attempt, status: 204, outcome: 'delivered' });
        expect((await repository.attempts('ACME', { limit: 10 })).map((a) => a.outcome)).toEqual([
          'delivered',
        ]);
        const { rows } = await db.query<{ statement: string }>(
          "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'api_conventions_%'",
        );
        return rows.map((r) => r.statement.replace(/\s+/g, ' '));
      } finally {
        await repository.close();
      }
    };
    const on = await prepared(true, 'prepared_on');
    // The list and the get, whose parameters are a text and numbers.
    expect(on.some((s) => s.includes('json_agg(page ORDER BY page.created_revision)'))).toBe(true);
    const get =
      /^PREPARE api_conventions_\w+ AS SELECT account_code, .* FROM "prepared_on"\.subscriptions WHERE account_code = \$1::text AND id = \$2::text AND deleted_at IS NULL$/;
    expect(on.filter((s) => get.test(s))).toHaveLength(1);
    expect(on.some((s) => s.includes('FROM "prepared_on".record_attempts($1::text[]'))).toBe(true);
    expect(on.some((s) => s.includes('INSERT INTO "prepared_on".messages'))).toBe(true);
    expect(await prepared(false, 'prepared_off')).toEqual([]);
  });
});
