/**
 * The service of the API benchmark, run in a process of its own: `createWebhookService` on
 * `PostgresSubscriptionRepository` over PGlite, on a fresh temporary data folder (argv[2]
 * `folder`) or in memory (`memory`), served on 127.0.0.1 by the node adapter
 * (`nodeFetchHandler`). Requests name their account in `x-account`; argv[3] is the number of
 * accounts, argv[4] the changes of setup tried (below).
 *
 * Messages in: `{ seed }` (that many subscriptions per account, created through the service's own
 * API in process); `{ phase, edge: 'start' | 'end' }` around each measured load; `'stop'` (the
 * service, the database and the data folder go, and the process exits normally, so that node
 * writes its profile when it runs with `--cpu-prof`). Messages out: `{ port }`,
 * `{ seeded: ids per account, ms }`, `{ started }` once a load's start is marked, and at each
 * load's end `{ inService }`: each request's time from its arrival to the end of its answer as the
 * service saw it, the process's CPU time per answer (the service is saturated: other work on the
 * machine moves it less than the rates), the database statements per answer (by their first
 * words), the longest event loop delay, the time from an answer to the next request on its
 * connection, and when connections were accepted.
 * With `SERVICE_API_BENCH_PROFILE` (inherited from the suite), the loads' starts and ends are
 * written beside the profile as `phases-<pid>.json`, in µs of the monotonic clock the profile's
 * timestamps use.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { PGlite } from '@electric-sql/pglite';
import { createWebhookService, type SubscriptionRepository } from 'api-conventions';
import { nodeFetchHandler } from 'api-conventions/node';
import { PostgresSubscriptionRepository } from 'api-conventions/postgres';
import { round } from './support.js';

const where = process.argv[2] === 'memory' ? 'memory' : 'folder';
const accounts = Number(process.argv[3] ?? 64);
/**
 * Changes of setup tried against the default, none unless named (comma-separated): `analyze` runs
 * ANALYZE once seeded (PGlite has no autovacuum, so the tables are never analysed otherwise);
 * `no-watch` hides the repository's `watch`, so that the service catches up after its own writes
 * only, not once more on each write's notification (one instance alone misses nothing).
 */
const tried = new Set((process.argv[4] ?? '').split(',').filter((t) => t !== ''));

/** The account of subscription `i` of the seeding: the accounts in turn. */
const accountOf = (i: number): string => `acct-${i % accounts}`;

const folder = where === 'folder' ? await mkdtemp(join(tmpdir(), 'bench-service-api-')) : undefined;
const database = new PGlite(folder);
await database.waitReady;
const opened = await PostgresSubscriptionRepository.open({ database });
const repository: SubscriptionRepository = tried.has('no-watch')
  ? new Proxy(opened, {
      get: (target, key) => {
        if (key === 'watch') return undefined;
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    })
  : opened;
const service = createWebhookService({
  repository,
  identify: (request) => {
    const account = request.headers.get('x-account');
    return account === null ? undefined : { clientId: account, accountCode: account };
  },
  // The create phase adds up to a few thousand per account on top of the seeded ones.
  maxSubscriptionsPerAccount: 1_000_000,
  pollIntervalMs: 0,
  onWarning: () => undefined,
});
await service.start();

// What the service saw of each measured load: each request's time from its arrival to the end of
// its answer, and the database statements run, by their first words: those sent with query, and
// those run prepared (EXECUTE through exec) by the text their name was prepared with.
let times: number[] = [];
const statements = new Map<string, number>();
const statementLabel = (text: string): string => text.replace(/\s+/g, ' ').trim().slice(0, 48);
const count = (label: string): void => {
  statements.set(label, (statements.get(label) ?? 0) + 1);
};
const query = database.query.bind(database);
database.query = ((text: string, ...rest: unknown[]) => {
  count(statementLabel(text));
  return (query as (text: string, ...rest: unknown[]) => unknown)(text, ...rest);
}) as typeof database.query;
const preparedAs = new Map<string, string>();
const exec = database.exec.bind(database);
database.exec = ((text: string, ...rest: unknown[]) => {
  const prepare = /^PREPARE (\w+) AS ([\s\S]*)$/.exec(text);
  if (prepare !== null) preparedAs.set(prepare[1] ?? '', statementLabel(prepare[2] ?? ''));
  const execute = /^EXECUTE (\w+)/.exec(text);
  count(
    execute === null
      ? statementLabel(text)
      : (preparedAs.get(execute[1] ?? '') ?? statementLabel(text)),
  );
  return (exec as (text: string, ...rest: unknown[]) => unknown)(text, ...rest);
}) as typeof database.exec;
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();

// And on each connection, the time from the end of an answer to the next request's arrival: the
// client's turn and the wait of a request that came while the event loop was busy.
let gaps: number[] = [];
// The first request of each connection: its arrival after the load's start (the connections are
// made at the start), and when the connection was accepted.
let firsts: number[] = [];
let accepted: number[] = [];
let phaseStart = performance.now();
let phaseCpu = process.cpuUsage();
const answered = new WeakMap<object, number>();

const listener = nodeFetchHandler(service);
const server = createServer((req, res) => {
  const at = performance.now();
  const before = answered.get(req.socket);
  if (before !== undefined) gaps.push(at - before);
  else firsts.push(at - phaseStart);
  res.on('finish', () => {
    const end = performance.now();
    times.push(end - at);
    answered.set(req.socket, end);
  });
  listener(req, res);
});
server.keepAliveTimeout = 60_000;
let closed = 0;
server.on('connection', (socket) => {
  accepted.push(performance.now() - phaseStart);
  socket.on('close', () => {
    closed++;
  });
});
server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});

/** Create `perAccount` subscriptions for each account through the service, 16 at a time. */
async function seed(perAccount: number): Promise<Record<string, string[]>> {
  const ids: Record<string, string[]> = {};
  const total = perAccount * accounts;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < total; i = next++) {
      const account = accountOf(i);
      const response = await service.fetch(
        new Request('http://127.0.0.1/v1/subscriptions', {
          method: 'POST',
          headers: { 'x-account': account, 'content-type': 'application/json' },
          body: JSON.stringify({
            endpointUrl: `https://hooks.example.com/seed/${i}`,
            events: [`t${i % 50}/e${i % 20}`, `t${(i + 7) % 50}/*`],
          }),
        }),
      );
      if (response.status !== 201) {
        throw new Error(`seeding: ${response.status} ${await response.text()}`);
      }
      const { id } = (await response.json()) as { id: string };
      const list = ids[account] ?? [];
      list.push(id);
      ids[account] = list;
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return ids;
}

const PROFILE = process.env.SERVICE_API_BENCH_PROFILE;
/** The measured loads' starts and ends, in µs of the monotonic clock. */
const phases: { phase: string; edge: string; atUs: number }[] = [];

/** The figures of the load since its start: latencies in the service, statements, event loop. */
function inService(): Record<string, unknown> {
  const sorted = Float64Array.from(times).sort();
  const at = (q: number) =>
    round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
  const between = Float64Array.from(gaps).sort();
  const gapAt = (q: number) =>
    round(between[Math.min(between.length - 1, Math.floor(q * between.length))] ?? 0);
  const cpu = process.cpuUsage(phaseCpu);
  return {
    answered: sorted.length,
    cpuMsPerAnswer: round((cpu.user + cpu.system) / 1000 / Math.max(1, sorted.length)),
    p50Ms: at(0.5),
    p90Ms: at(0.9),
    p99Ms: at(0.99),
    maxMs: round(sorted[sorted.length - 1] ?? 0),
    statementsPerAnswer: Object.fromEntries(
      [...statements].map(([label, n]) => [label, round(n / Math.max(1, sorted.length))]),
    ),
    eventLoopDelayMaxMs: round(loopDelay.max / 1e6),
    betweenRequests: { p50Ms: gapAt(0.5), p99Ms: gapAt(0.99), maxMs: gapAt(1) },
    connectionsAccepted: accepted.length,
    connectionsClosed: closed,
    connectionsAcceptedByMs: round(Math.max(0, ...accepted)),
    firstRequests: firsts.length,
    firstRequestLatestMs: round(Math.max(0, ...firsts)),
  };
}

async function stop(): Promise<void> {
  if (PROFILE !== undefined) {
    await writeFile(join(PROFILE, `phases-${process.pid}.json`), JSON.stringify(phases));
  }
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await service.close();
  await opened.close();
  await database.close();
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
}

process.on('message', (message: unknown) => {
  if (message === 'stop') {
    void stop().then(() => process.exit(0));
  } else if (typeof message === 'object' && message !== null && 'phase' in message) {
    const { phase, edge } = message as { phase: string; edge: string };
    phases.push({ phase, edge, atUs: Number(process.hrtime.bigint() / 1000n) });
    if (edge === 'start') {
      times = [];
      gaps = [];
      firsts = [];
      accepted = [];
      closed = 0;
      phaseStart = performance.now();
      phaseCpu = process.cpuUsage();
      process.send?.({ started: true });
      statements.clear();
      loopDelay.reset();
    } else {
      process.send?.({ inService: inService() });
    }
  } else if (typeof message === 'object' && message !== null && 'seed' in message) {
    const started = performance.now();
    void seed(Number((message as { seed: number }).seed)).then(async (seeded) => {
      const ms = performance.now() - started;
      if (tried.has('analyze')) await database.query('ANALYZE');
      process.send?.({ seeded, ms });
    });
  }
});
// Stopped by a signal (the suite's stopService): leave the data folder tidy too.
process.on('SIGTERM', () => {
  void stop().finally(() => process.exit(0));
});
