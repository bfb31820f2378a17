/**
 * vitest globalSetup: one PostgreSQL server for the whole run, shared by the test files that leave
 * it running (see shared-postgres.ts). Files that stop, restart or reconfigure theirs start their
 * own with `PostgresServer.start()`.
 *
 * The server starts in the background, so that the files that need no PostgreSQL (most of them)
 * never wait for its `initdb`: a file that takes a database waits until this setup has written, in
 * the status file it hands out, that the server is ready or why it did not start (no `initdb` on
 * the PATH, ...). Only the files that need PostgreSQL fail then, and they say why.
 */
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { freePort } from './ports.js';
import { PostgresServer } from './postgres-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * The shared server's URL (its database `postgres`, from which the files create theirs), and
     * the file that holds, once the start is over, `{ "ready": true }` or `{ "error": reason }`.
     */
    sharedPostgres: { url: string; status: string };
  }
}

/** Files that run at once each hold a pool of their own, and some start processes with more. */
const MAX_CONNECTIONS = 500;

/** The whole file at once: a reader sees either nothing or all of it. */
async function writeWhole(path: string, value: { ready: true } | { error: string }): Promise<void> {
  await writeFile(`${path}.part`, JSON.stringify(value));
  await rename(`${path}.part`, path);
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const folder = await mkdtemp(join(tmpdir(), 'pg-shared-'));
  const status = join(folder, 'status.json');
  const port = await freePort();
  const started = PostgresServer.start({ port, maxConnections: MAX_CONNECTIONS }).then(
    async (server) => {
      await writeWhole(status, { ready: true });
      return server;
    },
    async (error: unknown) => {
      await writeWhole(status, { error: String(error) });
      return undefined;
    },
  );
  project.provide('sharedPostgres', { url: PostgresServer.urlOf(port), status });
  return async () => {
    await (await started)?.stop();
    await rm(folder, { recursive: true, force: true });
  };
}
