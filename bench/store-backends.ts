/**
 * The repositories the storage benchmark runs one workload on: PostgreSQL through a pg Pool on a
 * server of the suite's own, PGlite in memory and on a data folder, and the memory repository as
 * the reference.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { MemorySubscriptionRepository, type SubscriptionRepository } from 'api-conventions';
import {
  type PostgresRepositoryOptions,
  PostgresSubscriptionRepository,
} from 'api-conventions/postgres';
import pg from 'pg';

/** A repository to measure, and how to let go of what it holds. */
export interface Backend {
  readonly name: string;
  readonly repository: SubscriptionRepository;
  close(): Promise<void>;
}

/** The memory repository: the reference, with no storage under it. */
export function memoryBackend(): Backend {
  return {
    name: 'memory',
    repository: new MemorySubscriptionRepository(),
    close: async () => undefined,
  };
}

/** A pg Pool of `connections` on `url`, the repository on `schema` (with `options`, if any). */
export async function postgresBackend(
  url: string,
  schema: string,
  connections: number,
  options: Omit<PostgresRepositoryOptions, 'database' | 'schema'> = {},
): Promise<Backend> {
  const pool = new pg.Pool({ connectionString: url, max: connections });
  // An idle connection the server drops (the suite stopping it) is no failure of the workload.
  pool.on('error', () => undefined);
  const repository = await PostgresSubscriptionRepository.open({
    ...options,
    database: pool,
    schema,
  });
  return {
    name: 'postgresql (pg Pool)',
    repository,
    close: async () => {
      await repository.close();
      await pool.end();
    },
  };
}

/** PGlite in memory, or on a fresh temporary data folder (removed on close). */
export async function pgliteBackend(where: 'memory' | 'folder'): Promise<Backend> {
  const folder = where === 'folder' ? await mkdtemp(join(tmpdir(), 'bench-pglite-')) : undefined;
  const database = await PGlite.create(folder);
  const repository = await PostgresSubscriptionRepository.open({ database });
  return {
    name: where === 'folder' ? 'pglite (data folder)' : 'pglite (in memory)',
    repository,
    close: async () => {
      await repository.close();
      await database.close();
      if (folder !== undefined) await rm(folder, { recursive: true, force: true });
    },
  };
}
