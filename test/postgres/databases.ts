/**
 * The two databases the PostgreSQL repository runs on, for tests that run one body on both: a pg
 * Pool on a database of the file's own on the run's shared PostgreSQL server
 * (test/support/shared-postgres.ts), and PGlite in memory (loaded from the run's template,
 * pglite-template.ts). Each test takes a schema of its own, so that tests share a database without
 * seeing each other's rows.
 */
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import {
  type PostgresRepositoryOptions,
  PostgresSubscriptionRepository,
  type SqlDatabase,
} from '../../src/postgres/index.js';
import { MemorySubscriptionRepository } from '../../src/webhooks/store/memory-repository.js';
import type { SubscriptionRepository } from '../../src/webhooks/store/repository.js';
import type { Subscription } from '../../src/webhooks/subscriptions/subscription.js';
import { pgliteInMemory } from '../support/pglite-template.js';
import { type SharedPostgres, sharedPostgres } from '../support/shared-postgres.js';

/** Which database a test body runs on. */
export type DatabaseName = 'pg' | 'pglite';

export const DATABASES: readonly DatabaseName[] = ['pg', 'pglite'];

/** One file's databases: started in `beforeAll`, closed in `afterAll`. */
export class TestDatabases {
  /** The file's database on the shared server. */
  postgres: SharedPostgres | undefined;
  pool: pg.Pool | undefined;
  lite: PGlite | undefined;
  #schemas = 0;

  async start(): Promise<void> {
    [this.postgres, this.lite] = await Promise.all([sharedPostgres(), pgliteInMemory()]);
    this.pool = new pg.Pool({ connectionString: this.postgres.url, max: 20 });
  }

  async stop(): Promise<void> {
    await this.pool?.end();
    await this.lite?.close();
    await this.postgres?.release();
  }

  /** The database as the repository takes it: both kinds satisfy SqlDatabase as they are. */
  database(name: DatabaseName): SqlDatabase {
    const database: SqlDatabase | undefined = name === 'pg' ? this.pool : this.lite;
    if (database === undefined) throw new Error('databases not started');
    return database;
  }

  /** A schema no other test of the file uses. */
  schema(): string {
    return `test_${++this.#schemas}`;
  }

  /** A repository on a schema of its own. */
  open(
    name: DatabaseName,
    options: Omit<PostgresRepositoryOptions, 'database'> = {},
  ): Promise<PostgresSubscriptionRepository> {
    return PostgresSubscriptionRepository.open({
      database: this.database(name),
      schema: this.schema(),
      ...options,
    });
  }

  /** A maker of a fresh repository for each backend, by name: memory, PGlite and PostgreSQL. */
  repositories(): Record<string, () => Promise<SubscriptionRepository>> {
    return {
      memory: async () => new MemorySubscriptionRepository(),
      PGlite: () => this.open('pglite'),
      PostgreSQL: () => this.open('pg'),
    };
  }
}

/** A subscription as the service makes them. */
export function subscription(
  accountCode: string,
  id: string,
  createdAt = '2025-01-01T00:00:00.000Z',
  extra: Partial<Subscription> = {},
): Subscription {
  return {
    id,
    accountCode,
    endpointUrl: `https://hooks.example.com/${id}`,
    events: ['folio/created', 'reservation/*'],
    createdAt,
    ...extra,
  };
}
