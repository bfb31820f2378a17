/**
 * Statistics kept current on an embedded database (PGlite), which has no autovacuum: without
 * them the planner believes every table small and reads the whole table where a key would do (a
 * batch of creates or updates looked up each subscription by scanning them all, a cost that grew
 * with the table). The repository tells how many rows it wrote to the tables it names; once they
 * reach half the rows those tables held at the last `ANALYZE` (and at least {@link MIN_ROWS}),
 * they are analysed again, as autovacuum does on a server, if less often: a plan goes wrong when
 * a table is many times the size its statistics tell, and each analysis holds the thread.
 * `ANALYZE` reads a sample of each table, so its cost stops growing with the table. @module
 */
import { quoteIdentifier } from './migrations.js';
import type { SqlResult } from './sql-database.js';

/** The simple-protocol entry of an embedded database: PGlite's `exec`. */
type Exec = (text: string) => Promise<readonly SqlResult[]>;

/** The fewest rows written between two analyses. */
export const MIN_ROWS = 1_000;
/** The share of the tables' rows written since the last analysis that makes the next one due. */
export const FRACTION = 0.5;

/** Analyses an embedded database's schema as its repository writes to it. @internal */
export class EmbeddedUpkeep {
  readonly #exec: Exec;
  readonly #schema: string;
  readonly #tables: readonly string[];
  #written = 0;
  #due = MIN_ROWS;
  #running: Promise<void> | undefined;
  #closed = false;

  /**
   * @param schema - the schema's name, a plain identifier (the options check it)
   * @param tables - the tables of the schema to analyse, plain identifiers
   */
  constructor(exec: Exec, schema: string, tables: readonly string[]) {
    this.#exec = exec;
    this.#schema = schema;
    this.#tables = tables;
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
   * `ANALYZE` the tables, then make the next one due after half their rows. One that fails
   * (the database closed under it) changes nothing: the next is due after as many writes again.
   */
  async #analyze(): Promise<void> {
    const schema = quoteIdentifier(this.#schema);
    const names = this.#tables.map((table) => `${schema}.${quoteIdentifier(table)}`);
    const sizes = `SELECT c.reltuples FROM pg_class AS c
      WHERE c.oid IN (${names.map((name) => `to_regclass('${name.replaceAll("'", "''")}')`).join(', ')})`;
    try {
      await this.#exec(`ANALYZE ${names.join(', ')}`);
      const [after] = await this.#exec(sizes);
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
