/**
 * Instance B of the propagation benchmark, in a process of its own: a webhook service on its own
 * pg Pool (and so its own LISTEN connection) on the database and schema given as arguments. It
 * reads its index's revision every millisecond and reports each new one over IPC with the time it
 * saw it (`performance.timeOrigin + performance.now()`, comparable across processes).
 * Messages in: `'stop'`. Messages out: `{ ready }`, `{ revision, at }`, `{ stopped, stats }`.
 */
import { createWebhookService } from 'api-conventions';
import { PostgresSubscriptionRepository } from 'api-conventions/postgres';
import pg from 'pg';

const [url, schema] = process.argv.slice(2) as [string, string];
const send = (message: Record<string, unknown>) => process.send?.(message);

const pool = new pg.Pool({ connectionString: url, max: 4 });
const repository = await PostgresSubscriptionRepository.open({ database: pool, schema });
const service = createWebhookService({
  repository,
  identify: () => undefined,
  pollIntervalMs: 0,
  onWarning: () => undefined,
});
await service.start();

let last = service.stats().revision;
const timer = setInterval(() => {
  const { revision } = service.stats();
  if (revision === last) return;
  last = revision;
  send({ revision, at: performance.timeOrigin + performance.now() });
}, 1);

process.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  const stats = service.stats();
  void (async () => {
    await service.close();
    await repository.close();
    await pool.end();
    send({ stopped: true, stats });
    process.disconnect();
  })();
});
send({ ready: true, revision: last });
