/**
 * Change propagation between two instances on one PostgreSQL: instance A in this process, B in a
 * process of its own (bench/store-instance.ts), each a webhook service on its own pg Pool with its
 * own LISTEN connection. `CHANGES` changes are made through A's API (creates, patches, deletes),
 * one every `PACE_MS`, one at a time; each change's time runs from A's answer to the moment B's
 * index reaches its revision (B reads its revision every millisecond). Only A writes, so the k-th
 * change is revision k of the fresh schema.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createWebhookService, type WebhookService } from 'api-conventions';
import { PostgresSubscriptionRepository } from 'api-conventions/postgres';
import pg from 'pg';
import { round } from './support.js';
import { seededRandom } from './webhook-workload.js';

export const CHANGES = Number(process.env.WEBHOOK_STORE_BENCH_CHANGES ?? 500);
export const PACE_MS = 10;
/** Creates before the mix, so that patches and deletes have subscriptions to change. */
const FIRST_CREATES = 50;
const ACCOUNTS = 20;
/** How long B may take to catch up with the last change before the suite gives up. */
const DEADLINE_MS = 10_000;

const now = () => performance.timeOrigin + performance.now();

/** When a change was asked of A, and when A answered it. */
interface Times {
  readonly sent: number;
  readonly at: number;
}

interface Live {
  readonly accountCode: string;
  readonly id: string;
  enabled: boolean;
}

/** One change through A's API; throws unless it is answered as a change. */
async function change(
  service: WebhookService,
  method: string,
  path: string,
  accountCode: string,
  body?: unknown,
): Promise<Times & { body: unknown }> {
  const sent = now();
  const response = await service.fetch(
    new Request(`http://instance-a${path}`, {
      method,
      headers: { 'x-account': accountCode, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  );
  const at = now();
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return { sent, at, body: text === '' ? undefined : JSON.parse(text) };
}

/** The k-th change of the seeded mix: creates first, then 40% creates, 40% patches, 20% deletes. */
async function makeChange(
  service: WebhookService,
  k: number,
  live: Live[],
  random: () => number,
): Promise<Times> {
  const pick = random();
  const topic = `t${Math.floor(random() * 50)}`;
  if (k < FIRST_CREATES || pick < 0.4 || live.length === 0) {
    const accountCode = `a${Math.floor(random() * ACCOUNTS)}`;
    const body = {
      endpointUrl: `https://hooks.example.com/${k}`,
      events: [`${topic}/e${Math.floor(random() * 20)}`, `${topic}/*`],
      ...(random() < 0.3 ? { propertyIds: [`p${Math.floor(random() * 500)}`] } : {}),
    };
    const done = await change(service, 'POST', '/v1/subscriptions', accountCode, body);
    live.push({ accountCode, id: (done.body as { id: string }).id, enabled: true });
    return done;
  }
  const index = Math.floor(random() * live.length);
  const target = live[index]!;
  const path = `/v1/subscriptions/${target.id}`;
  if (pick < 0.8) {
    // Patches: events, or the status back and forth (B removes and adds it again).
    const body =
      random() < 0.5
        ? { events: [`${topic}/e${Math.floor(random() * 20)}`] }
        : { status: target.enabled ? 'disabled' : 'enabled' };
    if ('status' in body) target.enabled = !target.enabled;
    return change(service, 'PATCH', path, target.accountCode, body);
  }
  live.splice(index, 1);
  return change(service, 'DELETE', path, target.accountCode);
}

/** Wait for B's first message that has `key`, with a deadline. */
function reply<T>(child: ChildProcess, key: string, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`instance B did not answer ${key}`)), ms);
    const listener = (message: Record<string, unknown>) => {
      if (!(key in message)) return;
      clearTimeout(timer);
      child.off('message', listener);
      resolve(message as T);
    };
    child.on('message', listener);
  });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Percentile `p` of sorted values. */
const at = (sorted: Float64Array, p: number) =>
  round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!);

export async function measureSync(url: string, schema: string): Promise<Record<string, unknown>> {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const repository = await PostgresSubscriptionRepository.open({ database: pool, schema });
  const service = createWebhookService({
    repository,
    identify: (request) => {
      const accountCode = request.headers.get('x-account');
      return accountCode === null ? undefined : { clientId: 'bench', accountCode };
    },
    pollIntervalMs: 0,
    onWarning: () => undefined,
  });
  await service.start();
  const child = fork(join(import.meta.dirname, 'store-instance.ts'), [url, schema], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  // B's reports, in order: each revision it reached and when.
  const reached: Array<{ revision: number; at: number }> = [];
  child.on('message', (message: { revision?: number; at?: number }) => {
    if (message.at !== undefined && message.revision !== undefined) {
      reached.push({ revision: message.revision, at: message.at });
    }
  });
  try {
    await reply(child, 'ready', 30_000);
    const answered = new Float64Array(CHANGES + 1);
    const asked = new Float64Array(CHANGES + 1);
    const live: Live[] = [];
    const random = seededRandom(CHANGES);
    const started = performance.now();
    for (let k = 0; k < CHANGES; k++) {
      const wait = started + k * PACE_MS - performance.now();
      if (wait > 0) await pause(wait);
      const times = await makeChange(service, k, live, random);
      asked[k + 1] = times.sent;
      answered[k + 1] = times.at;
    }
    const deadline = performance.now() + DEADLINE_MS;
    while ((reached.at(-1)?.revision ?? 0) < CHANGES) {
      if (performance.now() > deadline) {
        throw new Error(`B reached revision ${reached.at(-1)?.revision ?? 0} of ${CHANGES}`);
      }
      await pause(5);
    }
    const latencies = new Float64Array(CHANGES);
    const fromAsked = new Float64Array(CHANGES);
    let beforeAnswer = 0;
    let r = 0;
    for (let revision = 1; revision <= CHANGES; revision++) {
      while (reached[r]!.revision < revision) r++;
      const ms = reached[r]!.at - answered[revision]!;
      if (ms < 0) beforeAnswer++;
      latencies[revision - 1] = Math.max(0, ms);
      fromAsked[revision - 1] = reached[r]!.at - asked[revision]!;
    }
    latencies.sort();
    fromAsked.sort();
    child.send('stop');
    const stopped = await reply<{ stats: Record<string, number> }>(child, 'stopped', 10_000);
    const a = service.stats();
    if (stopped.stats.subscriptions !== a.subscriptions || stopped.stats.revision !== a.revision) {
      throw new Error(`A ${JSON.stringify(a)} and B ${JSON.stringify(stopped.stats)} differ`);
    }
    return {
      changes: CHANGES,
      paceMs: PACE_MS,
      instances: 'A in the benchmark process, B in a process of its own; one PostgreSQL',
      p50Ms: at(latencies, 0.5),
      p99Ms: at(latencies, 0.99),
      maxMs: round(latencies[CHANGES - 1]!),
      // Changes B showed before A's answer reached its caller: counted as 0 ms.
      beforeAnswer,
      // From the moment the change was asked of A (the write's own time included).
      fromRequest: {
        p50Ms: at(fromAsked, 0.5),
        p99Ms: at(fromAsked, 0.99),
        maxMs: round(fromAsked[CHANGES - 1]!),
      },
      liveAtEnd: a.subscriptions,
      targetP99Ms: 1000,
      met: at(latencies, 0.99) < 1000,
    };
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill();
      await once(child, 'exit');
    }
    await service.close();
    await repository.close();
    await pool.end();
  }
}
