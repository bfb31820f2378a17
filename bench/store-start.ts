/**
 * One instance's start, in a fresh process as a real instance starts: a webhook service on a pg
 * Pool on the database and schema given as arguments, `service.start()` timed (wall and CPU), and
 * the heap the loaded index holds (heapUsed after a full collection, before and after). Sends the
 * figures over IPC and exits.
 */
import { createWebhookService } from 'api-conventions';
import { PostgresSubscriptionRepository } from 'api-conventions/postgres';
import pg from 'pg';
import { collectGarbage } from './support.js';

const [url, schema] = process.argv.slice(2) as [string, string];

function heapUsed(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

const pool = new pg.Pool({ connectionString: url, max: 2 });
const repository = await PostgresSubscriptionRepository.open({ database: pool, schema });
const service = createWebhookService({
  repository,
  identify: () => undefined,
  pollIntervalMs: 0,
  onWarning: () => undefined,
});
const before = heapUsed();
const started = performance.now();
const cpu = process.cpuUsage();
await service.start();
const used = process.cpuUsage(cpu);
const ms = performance.now() - started;
const after = heapUsed();
const stats = service.stats();
await service.close();
await repository.close();
await pool.end();
process.send?.({
  started: {
    seconds: ms / 1000,
    cpuSeconds: (used.user + used.system) / 1e6,
    heapBytes: after - before,
    subscriptions: stats.subscriptions,
    revision: stats.revision,
  },
});
process.disconnect?.();
