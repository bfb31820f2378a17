/**
 * Prepared statements on an embedded database (PGlite). PGlite's `query` parses and plans every
 * statement afresh, and its extended protocol cannot bind parameters to a statement prepared with
 * SQL's `PREPARE`; so each text is prepared once with `PREPARE` and run with `EXECUTE`, its
 * parameters written as quoted literals through the simple protocol (`exec`). A parameter that is
 * neither a plain value nor a flat array of them (a Buffer, a nested array, a string holding
 * U+0000) sends the statement the usual way instead. @module
 */
import { createHash } from 'node:crypto';
import type { SqlResult } from './sql-database.js';

/** An embedded database's simple-protocol entry: PGlite's `exec`. */
export interface SqlExec {
  /** Run `text` (one or more statements, no parameters): one result per statement. */
  exec(text: string): Promise<readonly SqlResult[]>;
}

// SQLSTATE invalid_sql_statement_name: EXECUTE of a name the session no longer holds (after a
// DEALLOCATE or DISCARD by other code on the same database).
const UNDEFINED_STATEMENT = '26000';
// SQLSTATE duplicate_prepared_statement: another repository on the same database prepared it.
const DUPLICATE_STATEMENT = '42P05';

/** The name a statement's text is prepared under: the same text, the same name. */
export function statementName(text: string): string {
  return `api_conventions_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
}

const sqlState = (error: unknown): unknown =>
  typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;

/**
 * A parameter as a quoted literal of unknown type, which takes the type the prepared statement
 * gives its parameter, as a bound parameter does; `undefined` where it is not a plain value or a
 * flat array of plain values. Strings are escape strings (`E'…'`, backslashes and quotes
 * doubled), read the same whatever `standard_conforming_strings` says; numbers are written as
 * `String(n)`, as PGlite's `query` sends them; an array is its text form (`{…}`: each string in
 * double quotes, its backslashes and double quotes escaped with a backslash; `NULL` for null),
 * written as such a string.
 */
export function parameterLiteral(value: unknown): string | undefined {
  if (Array.isArray(value)) {
    const text = arrayText(value);
    return text === undefined ? undefined : quoted(text);
  }
  const text = plainText(value);
  return text === undefined ? undefined : text === null ? 'NULL' : quoted(text);
}

/** A string as an escape string literal. */
const quoted = (text: string) => `E'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;

/**
 * A plain value's text, as PostgreSQL reads it for any type the statement gives it: `null` for
 * SQL's NULL, `undefined` for what is not a plain value. A text cannot hold U+0000: sent the usual
 * way, it is refused with PostgreSQL's own error.
 */
function plainText(value: unknown): string | null | undefined {
  switch (typeof value) {
    case 'string':
      return value.includes('\u0000') ? undefined : value;
    case 'number':
      return Number.isFinite(value) ? String(value) : undefined;
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      return value === null || value === undefined ? null : undefined;
  }
}

/** A flat array's text form (`{…}`), or `undefined` where an element is not a plain value. */
function arrayText(values: readonly unknown[]): string | undefined {
  let text = '{';
  for (let i = 0; i < values.length; i++) {
    const element = plainText(values[i]);
    if (element === undefined) return undefined;
    if (i > 0) text += ',';
    text +=
      element === null
        ? 'NULL'
        : typeof values[i] === 'string'
          ? `"${element.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
          : element;
  }
  return `${text}}`;
}

/** The statements an embedded database holds prepared, by their text. */
export class EmbeddedStatements {
  readonly #db: SqlExec;
  // Each text's prepared name, or null for a text PREPARE refused (sent the usual way).
  readonly #names = new Map<string, string | null>();

  constructor(db: SqlExec) {
    this.#db = db;
  }

  /**
   * Run `text` with `params` as a prepared statement: its rows, or `undefined` where a parameter
   * is not a plain value or the text cannot be prepared (the caller sends it the usual way).
   */
  async rows(text: string, params: readonly unknown[]): Promise<readonly unknown[] | undefined> {
    const literals: string[] = [];
    for (const param of params) {
      const literal = parameterLiteral(param);
      if (literal === undefined) return undefined;
      literals.push(literal);
    }
    // One lookup: a name, null for a text PREPARE refused, undefined for one not yet prepared.
    let name = this.#names.get(text);
    if (name === undefined) name = await this.#prepare(text);
    if (name === null) return undefined;
    const execute =
      literals.length === 0 ? `EXECUTE ${name}` : `EXECUTE ${name}(${literals.join(', ')})`;
    try {
      return await this.#run(execute);
    } catch (error) {
      if (sqlState(error) !== UNDEFINED_STATEMENT) throw error;
      // Prepared again once: another user of the database deallocated it.
      if ((await this.#prepare(text)) === null) return undefined;
      return await this.#run(execute);
    }
  }

  async #run(execute: string): Promise<readonly unknown[]> {
    const results = await this.#db.exec(execute);
    return results[results.length - 1]?.rows ?? [];
  }

  async #prepare(text: string): Promise<string | null> {
    const name = statementName(text);
    try {
      await this.#db.exec(`PREPARE ${name} AS ${text}`);
    } catch (error) {
      if (sqlState(error) !== DUPLICATE_STATEMENT) {
        // Sent the usual way from now on, which reports whatever is wrong with it.
        this.#names.set(text, null);
        return null;
      }
    }
    this.#names.set(text, name);
    return name;
  }
}
