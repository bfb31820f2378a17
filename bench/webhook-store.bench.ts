/**
 * The webhook service's storage and its sync between instances, on a PostgreSQL server this suite
 * starts on a free port (test/support/postgres-server.ts), on PGlite and on the memory repository:
 *
 * 1. creates, gets and list pages per second with p50/p99 latency, 16 calls in flight, the same
 *    seeded workload on each repository (bench/store-crud.ts);
 * 2. the start of a fresh service over 1,000,000 subscriptions in PostgreSQL: seconds, rows per
 *    second, the heap its index holds (bench/store-load.ts; target under 10 s);
 * 3. the time a change made through instance A's API takes to reach instance B's index, B in a
 *    process of its own (bench/store-sync.ts; target p99 under 1 s).
 *
 * Matching speed at 1,000,000 subscriptions is the webhooks suite's (`npm run bench -- webhooks`).
 */
import { loadavg } from 'node:os';
import { PostgresServer } from '../test/support/postgres-server.js';
import { type Backend, memoryBackend, pgliteBackend, postgresBackend } from './store-backends.js';
import {
  ACCOUNTS,
  CREATES,
  type CrudFigures,
  GETS,
  IN_FLIGHT,
  LISTS,
  measureCrud,
  PAGE_SIZE,
} from './store-crud.js';
import { measureLoad } from './store-load.js';
import { measureSync } from './store-sync.js';
import { round } from './support.js';

async function crud(url: string): Promise<Record<string, CrudFigures>> {
  const opens: Array<() => Promise<Backend>> = [
    async () => memoryBackend(),
    () => postgresBackend(url, 'bench_crud', IN_FLIGHT),
    () => pgliteBackend('memory'),
    () => pgliteBackend('folder'),
  ];
  const results: Record<string, CrudFigures> = {};
  for (const open of opens) {
    const backend = await open();
    try {
      const figures = await measureCrud(backend);
      results[backend.name] = figures;
      console.error(`${backend.name.padEnd(22)} ${JSON.stringify(figures)}`);
    } finally {
      await backend.close();
    }
  }
  return results;
}

export async function run(): Promise<Record<string, unknown>> {
  const server = await PostgresServer.start();
  const started = performance.now();
  const loadAtStart = loadavg().map((n) => round(n));
  try {
    const repositories = await crud(server.url);
    const sync = await measureSync(server.url, 'bench_sync');
    console.error(`propagation: ${JSON.stringify(sync)}`);
    const load = await measureLoad(server.url, 'bench_load');
    return {
      workload: {
        inFlight: IN_FLIGHT,
        creates: CREATES,
        gets: GETS,
        listPages: LISTS,
        pageSize: PAGE_SIZE,
        accounts: ACCOUNTS,
        server: 'PostgreSQL started by the suite (fsync, synchronous_commit off), pg Pool of 16',
      },
      repositories,
      load,
      propagation: sync,
      suiteSeconds: Math.round((performance.now() - started) / 1000),
      // The machine's load average (1, 5, 15 minutes) before and after: other work that ran.
      loadAverage: { atStart: loadAtStart, atEnd: loadavg().map((n) => round(n)) },
    };
  } finally {
    await server.stop();
  }
}
