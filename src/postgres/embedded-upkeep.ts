/**
 * Statistics kept current on an embedded database (PGlite), which has no autovacuum: without
 * them the planner believes every table small and reads the whole table where a key would do (a
 * batch of creates or updates looked up each subscription by scanning them all, a cost that grew
 * with the table). The repository tells how many rows it wrote to the tables of a rule; once they
 * reach the rule's share of the rows those tables held at the last `ANALYZE` (and at least its
 * fewest), they are analysed again, as autovacuum does on a server, if less often: a plan goes
 * wrong when a table is many times the size its statistics tell, and each analysis holds the
 * thread. `ANALYZE` reads a sample of each table, so its cost stops growing with the table.
 * @module
 */
import type { SqlExec } from './embedded-statements.js';
import { quoteIdentifier } from './migrations.js';

/** When the tables of one {@link EmbeddedUpkeep} are analysed again. @internal */
export interface UpkeepRule {
  /**
   * The tables of the schema, and for each the columns whose statistics are kept (none named:
   * every column), plain identifiers. Leaving out a long text (a message's body) halves an
   * analysis, and no plan reads its statistics.
   */
  readonly tables: Readonly<Record<string, readonly string[]>>;
  /** The fewest rows written to them between two analyses (and before the first). */
  readonly minRows: number;
  /** The share of the rows they held at the last analysis that, written since, makes one due. */
  readonly fraction: number;
}

/**
 * The subscription tables: their batches of writes find each subscription by key once analysed.
 * Analysed after 1,000 rows, then after half their rows.
 */
export const SUBSCRIPTION_TABLES: UpkeepRule = {
  tables: { subscriptions: [], signing_secrets: [], accounts: [] },
  minRows: 1_000,
  fraction: 0.5,
};

/**
 * The outbox's tables: retention then reads only the old rows, and a page of attempts the newest
 * ones, rather than every row. They grow by four rows a delivery, and analysing them holds the
 * thread (63 ms at 40,000 deliveries, the columns below), so they are analysed after 20,000 rows,
 * then each time they have doubled.
 */
export const OUTBOX_TABLES: UpkeepRule = {
  tables: {
    messages: ['account_code', 'id', 'created_ms'],
    deliveries: [
      'account_code',
      'message_id',
      'subscription_id',
      'status',
      'next_attempt_ms',
      'lease_until_ms',
      'published_ms',
    ],
    delivery_log: ['sequence', 'account_code', 'subscription_id', 'at_ms', 'outcome'],
    idempotency_keys: [],
  },
  minRows: 20_000,
  fraction: 1,
};

/** Analyses tables of an embedded database's schema as its repository writes to them. @internal */
export class EmbeddedUpkeep {
  readonly #db: SqlExec;
  readonly #schema: string;
  readonly #rule: UpkeepRule;
  #written = 0;
  #due: number;
  #running: Promise<void> | undefined;
  #closed = false;

  /** @param schema - the schema's name, a plain identifier (the options check it) */
  constructor(db: SqlExec, schema: string, rule: UpkeepRule) {
    this.#db = db;
    this.#schema = schema;
    this.#rule = rule;
    this.#due = rule.minRows;
  }

  /** Note `rows` written to the tables; start an analysis once enough have been since the last. */
  wrote(rows: number): void {
    if (!(rows > 0) || this.#closed) return;
    this.#written += rows;
    if (this.#written < this.#due || this.#running !== undefined) return;
    this.#written = 0;
    this.#running = this.#analyze().finally(() => {
      this.#running = undefined;
    });
  }

  /**
   * `ANALYZE` the tables, then make the next one due after the rule's share of their rows. One
   * that fails (the database closed under it) changes nothing: the next is due after as many
   * writes again.
   */
  async #analyze(): Promise<void> {
    const schema = quoteIdentifier(this.#schema);
    const { tables, minRows, fraction } = this.#rule;
    const names = Object.keys(tables).map((table) => `${schema}.${quoteIdentifier(table)}`);
    const analysed = Object.values(tables).map((columns, i) =>
      columns.length === 0
        ? names[i]
        : `${names[i]} (${columns.map((column) => quoteIdentifier(column)).join(', ')})`,
    );
    const sizes = `SELECT c.reltuples FROM pg_class AS c
      WHERE c.oid IN (${names.map((name) => `to_regclass('${name.replaceAll("'", "''")}')`).join(', ')})`;
    try {
      await this.#db.exec(`ANALYZE ${analysed.join(', ')}`);
      const [after] = await this.#db.exec(sizes);
      let rows = 0;
      for (const row of after?.rows ?? []) {
        rows += Math.max(0, Number((row as { reltuples: number }).reltuples));
      }
      this.#due = Math.max(minRows, fraction * rows);
    } catch {
      // Plans stay as good as the last statistics; nothing written is at stake.
    }
  }

  /** Let the analysis under way end; start none after. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#running;
  }
}
