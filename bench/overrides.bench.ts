/**
 * Override propagation: two instances (test/redis/fixtures/overrides-instance.ts, RedisOverrides
 * with refreshMs 250, child processes) and this process, which sets and deletes an override at
 * random moments (0 to 400 ms after the previous change has reached both instances) through its
 * own RedisOverrides, against a redis-server this suite starts on a free port. Reports, over
 * every change and instance, the delay from the change resolved here to the instance's first
 * refresh holding it: p50, p95 and max (ms, wall clock of one machine).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { ioredisClient, RedisOverrides } from 'api-conventions/redis';
import { Redis } from 'ioredis';
import { RedisServer } from '../test/support/redis-server.js';
import { round } from './support.js';

const CHANGES = 100;
const PREFIX = 'bench-overrides:';
const FIXTURE = join(import.meta.dirname, '../test/redis/fixtures/overrides-instance.ts');

interface Refresh {
  event: 'refresh';
  at: number;
  entry: { multiplier?: number } | null;
}

/** One instance: the refreshes it reported, and a wait for the first holding a change. */
class Instance {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly #refreshes: Refresh[] = [];
  readonly #waiters = new Set<() => void>();

  constructor(port: number) {
    this.child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, String(port), '0', PREFIX], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let markReady!: () => void;
    this.ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as { event: string };
      if (event.event === 'ready') markReady();
      if (event.event === 'refresh') this.#refreshes.push(event as Refresh);
      for (const wake of this.#waiters) wake();
    });
  }

  /** Refreshes reported so far. */
  get count(): number {
    return this.#refreshes.length;
  }

  /** The time of the first refresh after the first `after` that holds `multiplier` (or none). */
  holding(multiplier: number | undefined, after: number): Promise<number> {
    return new Promise((resolve) => {
      const check = () => {
        const found = this.#refreshes.slice(after).find((r) => r.entry?.multiplier === multiplier);
        if (found === undefined) return;
        this.#waiters.delete(check);
        resolve(found.at);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** End its stdin and wait for it to exit. */
  async stop(): Promise<void> {
    const exited = once(this.child, 'exit');
    this.child.stdin!.end();
    await exited;
  }
}

export async function run(): Promise<Record<string, unknown>> {
  const server = await RedisServer.start();
  const redis = new Redis({ port: server.port, host: '127.0.0.1', enableOfflineQueue: false });
  await new Promise((resolve) => redis.once('ready', resolve));
  const overrides = new RedisOverrides({ client: ioredisClient(redis), prefix: PREFIX });
  await overrides.ready();
  const instances = [new Instance(server.port), new Instance(server.port)];
  await Promise.all(instances.map((i) => i.ready));

  const delays: number[] = [];
  for (let k = 0; k < CHANGES; k++) {
    await sleep(Math.random() * 400);
    const multiplier = k % 2 === 0 ? 3 : undefined;
    const before = instances.map((i) => i.count);
    if (multiplier === undefined) await overrides.delete({ clientId: 'client-1' });
    else await overrides.set({ clientId: 'client-1' }, { multiplier });
    const resolved = performance.timeOrigin + performance.now();
    const applied = await Promise.all(instances.map((i, n) => i.holding(multiplier, before[n]!)));
    for (const at of applied) delays.push(Math.max(0, at - resolved));
  }

  for (const i of instances) await i.stop();
  await overrides.close();
  redis.disconnect();
  await server.stop();

  const sorted = delays.sort((a, b) => a - b);
  const at = (q: number) =>
    round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!);
  const figures = {
    refreshMs: 250,
    changes: CHANGES,
    delays: sorted.length,
    p50Ms: at(0.5),
    p95Ms: at(0.95),
    maxMs: round(sorted.at(-1)!),
  };
  console.error(figures);
  return figures;
}
