/**
 * The PostgreSQL server a test run shares (started once by postgres-global-setup.ts): each file
 * creates a database of its own, empty, and drops it when done, so that files running at the same
 * time never see each other's schemas, rows or notifications. The drop never ends a connection: a
 * database still in use once PostgreSQL has waited its five seconds for the file's last
 * connections to close is left to the server's teardown. Only for files that leave the server
 * running: a file that stops or restarts its server, ends backends of other databases, changes a
 * server-wide setting or reads server-wide counters starts its own with `PostgresServer.start()`.
 * A query of a server-wide view (`pg_stat_activity`) names the file's database.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { inject } from 'vitest';

/** A file's share of the server: a database of its own. */
export interface SharedPostgres {
  /** The URL of the file's database (trust authentication, user `postgres`). */
  readonly url: string;
  /** The name of the file's database. */
  readonly database: string;
  /** Another empty database of the file's, dropped with the first: its URL. */
  createDatabase(): Promise<string>;
  /** Drop the file's databases once their connections are closed, or leave them to the teardown. */
  release(): Promise<void>;
}

/** How long a file waits for the server to start (`initdb` and `pg_ctl` on a busy machine). */
const START_DEADLINE_MS = 50_000;

/** Wait until the setup has written the status file: return once ready, throw the reason if not. */
async function ready(status: string): Promise<void> {
  const deadline = Date.now() + START_DEADLINE_MS;
  for (;;) {
    const text = await readFile(status, 'utf8').catch(() => undefined);
    if (text !== undefined) {
      const state = JSON.parse(text) as { ready: true } | { error: string };
      if ('error' in state) {
        throw new Error(`the shared PostgreSQL server did not start: ${state.error}`);
      }
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(`the shared PostgreSQL server was not ready within ${START_DEADLINE_MS} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** "database is being accessed by other users": DROP DATABASE found connections still open. */
const IN_USE = '55006';

/** Run `sql` on the server's database `postgres`, on a connection of its own. */
async function administer(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Create a database of the shared server for this file, once the server is ready. */
export async function sharedPostgres(): Promise<SharedPostgres> {
  const { url: adminUrl, status } = inject('sharedPostgres');
  await ready(status);
  const names: string[] = [];
  const create = async (): Promise<{ name: string; url: string }> => {
    const name = `test_${randomBytes(8).toString('hex')}`;
    await administer(adminUrl, `CREATE DATABASE ${name}`);
    names.push(name);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    return { name, url: url.href };
  };
  const first = await create();
  return {
    url: first.url,
    database: first.name,
    createDatabase: async () => (await create()).url,
    release: async () => {
      for (const name of names.splice(0)) {
        // DROP DATABASE waits for the connections that are closing; one of a pool that has just
        // ended may still be. Ending them instead would fail whoever still holds them.
        await administer(adminUrl, `DROP DATABASE IF EXISTS ${name}`).catch((error: unknown) => {
          if ((error as { code?: string }).code !== IN_USE) throw error;
        });
      }
    },
  };
}
