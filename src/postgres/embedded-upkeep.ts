/**
 * Statistics kept current on an embedded database (PGlite), which has no autovacuum: without
 * them the planner believes every table small and reads the whole table where a key would do (a
 * batch of creates or updates looked up each subscription by scanning them all, a cost that grew
 * with the table). The repository tells how many rows it wrote; once they reach a tenth of the
 * rows its tables held at the last `ANALYZE` (and at least {@link MIN_ROWS}), the schema's tables
 * are analysed again, as autovacuum would on a server. `ANALYZE` reads a sample of each table, so
 * its cost stops growing with the table (0.1 to 0.2 s at 30,000 to 100,000 subscriptions in
 * process). @module
 */
import { quoteIdentifier } from './migrations.js';
import type { SqlResult } from './sql-database.js';

/** The simple-protocol entry of an embedded database: PGlite's `exec`. */
type Exec = (text: string) => Promise<readonly SqlResult[]>;

/** The fewest rows written between two analyses. */
export const MIN_ROWS = 500;
/** The share of the tables' rows written since the last analysis that makes the next one due. */
export const FRACTION = 0.1;

/** Analyses an embedded database's schema as its repository writes to it. @internal */
export class EmbeddedUpkeep {
  readonly #exec: Exec;
  readonly #schema: string;
  #written = 0;
  #due = MIN_ROWS;
  #running: Promise<void> | undefined;
  #closed = false;

  /** @param schema - the schema's name, a plain identifier (the options check it) */
  constructor(exec: Exec, schema: string) {
    this.#exec = exec;
    this.#schema = schema;
  }

  /** Note `rows` written; start an analysis once enough have been since the last. */
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
   * `ANALYZE` the schema's tables, then make the next one due after a tenth of their rows. One
   * that fails (the database closed under it) changes nothing: the next is due after as many
   * writes again.
   */
  async #analyze(): Promise<void> {
    const tables = `SELECT c.relname, c.reltuples FROM pg_class AS c
      JOIN pg_namespace AS n ON n.oid = c.relnamespace
      WHERE n.nspname = '${this.#schema}' AND c.relkind = 'r'`;
    try {
      const [listed] = await this.#exec(tables);
      const schema = quoteIdentifier(this.#schema);
      const names = (listed?.rows ?? []).map(
        (row) => `${schema}.${quoteIdentifier((row as { relname: string }).relname)}`,
      );
      if (names.length === 0) return;
      await this.#exec(`ANALYZE ${names.join(', ')}`);
      const [after] = await this.#exec(tables);
      let rows = 0;
      for (const row of after?.rows ?? []) {
        rows += Math.max(0, Number((row as { reltuples: number }).reltuples));
      }
      this.#due = Math.max(MIN_ROWS, FRACTION * rows);
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
