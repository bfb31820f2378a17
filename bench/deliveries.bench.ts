/**
 * End-to-end deliveries: events published until their signed deliveries reach a local receiver
 * (`bench/delivery-receiver.ts`, a process of its own answering 204), on a PostgreSQL server and a
 * redis-server this suite starts on free ports:
 *
 * 1. the webhook service through the BullMQ queue on PostgreSQL and Redis, one delivery per event
 *    and `FAN_OUT` per event, against the floor: a bare BullMQ Queue and Worker on the same Redis
 *    that sign the same bodies and POST them with the same transport, keeping no record (target:
 *    at least 0.7x of the floor); and the same service on the memory repository (no record in a
 *    database: not a target, it tells the records' part of the distance from the rest); the
 *    service with `deliveriesPerJob: 1`, a BullMQ job per delivery (not a target: the queue's
 *    default is 8 a job); and the floor with `JOB_BATCH` deliveries in each BullMQ job (not a
 *    target: what BullMQ costs per job);
 * 2. the service through the memory queue on PGlite (in memory, on a data folder), against the
 *    memory queue with a deliverer that keeps no record;
 * 3. the outbox's cost per published event (measured first): publish() latency, p50 and p99, with the record, on
 *    PostgreSQL, PGlite and the memory repository (bench/outbox-cost.ts).
 *
 * Knobs: `DELIVERIES_BENCH_SCALE` scales the runs, `DELIVERIES_BENCH_ROUNDS` (5) sets the rounds,
 * `DELIVERIES_BENCH_CONTENDERS` names the contenders (comma-separated keys; `none` for none, the
 * outbox's cost alone), `DELIVERIES_BENCH_OUTBOX=0` leaves out the outbox's cost and
 * `DELIVERIES_BENCH_OUTBOX=postgres` measures it on PostgreSQL only, and
 * `DELIVERIES_BENCH_GROUP_COMMIT` (JSON, e.g. `{"concurrency":2}`) is the `groupCommit` option of
 * the repositories on PostgreSQL.
 *
 * Deliveries per second run from the first publish to the last delivery's arrival, `PUBLISH_IN_FLIGHT`
 * publishes at a time, `CONCURRENCY` attempts at a time. The contenders take turns in rounds, the
 * order reversed every other round, so that the machine's load meets each alike; the figures are
 * the medians of the rounds.
 */
import { loadavg } from 'node:os';
import type { GroupCommitOptions, PostgresRepositoryOptions } from 'api-conventions/postgres';
import { Redis } from 'ioredis';
import { PostgresServer } from '../test/support/postgres-server.js';
import { RedisServer } from '../test/support/redis-server.js';
import {
  bullmqBatchedFloor,
  bullmqFloor,
  CONCURRENCY,
  type Contender,
  FAN_OUT,
  memoryFloor,
  type OurServiceOptions,
  ourService,
  type Setup,
} from './delivery-contenders.js';
import { measurePublishCost, type PublishCost, type ServerCpu } from './outbox-cost.js';
import { treeCpuSeconds } from './process-cpu.js';
import { ReceiverProcess } from './receiver-process.js';
import { type Backend, memoryBackend, pgliteBackend, postgresBackend } from './store-backends.js';
import { driveCalls, latencyFigures, median, round } from './support.js';
import { type OperationTimes, type TimedRepository, timedRepository } from './timed-repository.js';

const scaled = (n: number) =>
  Math.max(100, Math.round(n * Number(process.env.DELIVERIES_BENCH_SCALE ?? 1)));
/** Deliveries of one run through BullMQ, and through the memory queue on PGlite. */
const BULLMQ_DELIVERIES = scaled(8_000);
const PGLITE_DELIVERIES = scaled(3_000);
/** Untimed deliveries of each contender before the rounds. */
const WARM_UP = scaled(1_000);
/** publish() calls of each outbox measure. */
const OUTBOX_CALLS = scaled(2_000);
const ROUNDS = Number(process.env.DELIVERIES_BENCH_ROUNDS ?? 5);
/** Publishes at once: the publishers of one instance under load. */
const PUBLISH_IN_FLIGHT = 16;
/** A run that has not delivered everything by then has lost deliveries. */
const RUN_TIMEOUT_MS = 300_000;
/** The `groupCommit` option of the repositories on PostgreSQL, if the knob sets one. */
const GROUP_COMMIT: Omit<PostgresRepositoryOptions, 'database' | 'schema'> =
  process.env.DELIVERIES_BENCH_GROUP_COMMIT === undefined
    ? {}
    : { groupCommit: JSON.parse(process.env.DELIVERIES_BENCH_GROUP_COMMIT) as GroupCommitOptions };
/** The target of the service through BullMQ, as a share of the floor's deliveries per second. */
const TARGET = 0.7;

/** What one run of a contender measured. */
interface Run {
  readonly deliveries: number;
  readonly deliveriesPerSecond: number;
  /** Events accepted per second, until the last publish resolved. */
  readonly publishesPerSecond: number;
  readonly publishP50Ms: number;
  readonly publishP99Ms: number;
  /** CPU time per delivery, in microseconds, of each process. */
  readonly cpuUsPerDelivery: {
    readonly node: number;
    readonly postgres: number;
    readonly redis: number;
    readonly receiver: number;
    /** All four: the work of a delivery whatever the machine's load. */
    readonly total: number;
  };
  /** Redis's commands per delivery: script calls, and every command (those scripts run too). */
  readonly redisScriptCallsPerDelivery: number;
  readonly redisCommandsPerDelivery: number;
  readonly badSignatures: number;
  readonly duplicates: number;
}

/** A contender, how many deliveries its runs make, and the repository timing its calls. */
interface Entry {
  readonly contender: Contender;
  readonly deliveries: number;
  readonly timed?: TimedRepository;
  readonly runs: Run[];
  times?: Record<string, OperationTimes> | undefined;
}

/** The processes whose CPU time a run counts, and Redis's count of commands. */
class Probes {
  constructor(
    private readonly admin: Redis,
    private readonly pids: { postgres: number; redis: number; receiver: number },
  ) {}

  async read() {
    const { user, system } = process.cpuUsage();
    const info = await this.admin.info('commandstats');
    let commands = 0;
    let scripts = 0;
    for (const m of info.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) {
      commands += Number(m[2]);
      if (m[1] === 'evalsha' || m[1] === 'eval') scripts += Number(m[2]);
    }
    return {
      node: (user + system) / 1e6,
      postgres: treeCpuSeconds(this.pids.postgres),
      redis: treeCpuSeconds(this.pids.redis),
      receiver: treeCpuSeconds(this.pids.receiver),
      // The INFO that reads them is one more.
      commands: commands + 1,
      scripts,
    };
  }
}

function deadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not all delivered in ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** One run: publish the events, wait for the receiver to have every delivery. */
async function runOnce(
  entry: Entry,
  receiver: ReceiverProcess,
  probes: Probes,
  deliveries = entry.deliveries,
): Promise<Run> {
  const { contender } = entry;
  const events = Math.ceil(deliveries / contender.fanOut);
  const total = events * contender.fanOut;
  const { done } = await receiver.expect(total, contender.secrets);
  const errors = contender.errors();
  entry.timed?.reset();
  const before = await probes.read();
  const start = performance.timeOrigin + performance.now();
  const published = await driveCalls(events, PUBLISH_IN_FLIGHT, (n) => contender.publish(n));
  const receipt = await deadline(done, RUN_TIMEOUT_MS, contender.name);
  const after = await probes.read();
  if (contender.errors() > errors) {
    throw new Error(`${contender.name}: ${contender.errors() - errors} failures reported`);
  }
  const perDelivery = (key: 'node' | 'postgres' | 'redis' | 'receiver') =>
    round(((after[key] - before[key]) * 1e6) / total);
  const { p50Ms, p99Ms } = latencyFigures(published.latencies);
  return {
    deliveries: total,
    deliveriesPerSecond: Math.round((total * 1000) / (receipt.at - start)),
    publishesPerSecond: Math.round((events * 1000) / published.ms),
    publishP50Ms: p50Ms,
    publishP99Ms: p99Ms,
    cpuUsPerDelivery: {
      node: perDelivery('node'),
      postgres: perDelivery('postgres'),
      redis: perDelivery('redis'),
      receiver: perDelivery('receiver'),
      total: round(
        (['node', 'postgres', 'redis', 'receiver'] as const)
          .map((key) => after[key] - before[key])
          .reduce((a, b) => a + b) *
          (1e6 / total),
      ),
    },
    redisScriptCallsPerDelivery: round((after.scripts - before.scripts) / total),
    redisCommandsPerDelivery: round((after.commands - before.commands) / total),
    badSignatures: receipt.badSignatures,
    duplicates: receipt.duplicates,
  };
}

/** Each figure's median over the runs. */
function medianRun(runs: readonly Run[]): Run {
  const of = (pick: (r: Run) => number) => median(runs.map(pick));
  return {
    deliveries: of((r) => r.deliveries),
    deliveriesPerSecond: of((r) => r.deliveriesPerSecond),
    publishesPerSecond: of((r) => r.publishesPerSecond),
    publishP50Ms: of((r) => r.publishP50Ms),
    publishP99Ms: of((r) => r.publishP99Ms),
    cpuUsPerDelivery: {
      node: of((r) => r.cpuUsPerDelivery.node),
      postgres: of((r) => r.cpuUsPerDelivery.postgres),
      redis: of((r) => r.cpuUsPerDelivery.redis),
      receiver: of((r) => r.cpuUsPerDelivery.receiver),
      total: of((r) => r.cpuUsPerDelivery.total),
    },
    redisScriptCallsPerDelivery: of((r) => r.redisScriptCallsPerDelivery),
    redisCommandsPerDelivery: of((r) => r.redisCommandsPerDelivery),
    badSignatures: Math.max(...runs.map((r) => r.badSignatures)),
    duplicates: Math.max(...runs.map((r) => r.duplicates)),
  };
}

function describeRun(name: string, run: Run): string {
  const cpu = run.cpuUsPerDelivery;
  return (
    `${name.padEnd(42)} ${String(run.deliveriesPerSecond).padStart(6)} deliveries/s; ` +
    `publish ${run.publishesPerSecond}/s p50 ${run.publishP50Ms} ms p99 ${run.publishP99Ms} ms; ` +
    `CPU us/delivery ${cpu.total}: node ${cpu.node}, postgres ${cpu.postgres}, ` +
    `redis ${cpu.redis}, receiver ${cpu.receiver}; redis scripts ${run.redisScriptCallsPerDelivery}, ` +
    `commands ${run.redisCommandsPerDelivery}`
  );
}

/**
 * A contender against its floor: the median of the rounds' ratios (each of two runs close in
 * time, the figure to read on a machine whose load moves), the ratio of the medians, and the
 * ratio of the floor's CPU time per delivery to ours (all processes: what the rate would be on a
 * machine each kept busy).
 */
function ratio(ours: Entry, floor: Entry, target?: number) {
  const rounds = ours.runs.map((r, i) =>
    round(r.deliveriesPerSecond / floor.runs[i]!.deliveriesPerSecond),
  );
  const ofRounds = round(median(rounds));
  const medianOf = (e: Entry, pick: (r: Run) => number) => median(e.runs.map(pick));
  return {
    ours: ours.contender.name,
    floor: floor.contender.name,
    ofRounds,
    rounds,
    ofMedians: round(
      medianOf(ours, (r) => r.deliveriesPerSecond) / medianOf(floor, (r) => r.deliveriesPerSecond),
    ),
    ofCpuPerDelivery: round(
      medianOf(floor, (r) => r.cpuUsPerDelivery.total) /
        medianOf(ours, (r) => r.cpuUsPerDelivery.total),
    ),
    ...(target === undefined ? {} : { target, met: ofRounds >= target }),
  };
}

/** Contenders made together, and how to let go of them and what they stand on. */
interface Opened {
  readonly setup: Setup;
  readonly timed?: TimedRepository;
  close(): Promise<void>;
}

/** Contenders made together: their keys, the deliveries of a run, how to make them. */
interface Group {
  readonly keys: readonly string[];
  readonly deliveries: number;
  open(): Promise<Opened>;
}

/** The service on `backend`, its repository timing its calls. */
async function served(
  backend: Backend,
  options: Omit<OurServiceOptions, 'repository'>,
): Promise<Opened> {
  const timed = timedRepository(backend.repository);
  try {
    const setup = await ourService({ ...options, repository: timed.repository });
    return { setup, timed, close: () => backend.close() };
  } catch (error) {
    await backend.close();
    throw error;
  }
}

function groups(postgres: PostgresServer, redisPort: number, endpointUrl: string): Group[] {
  const bare = (setup: Setup): Opened => ({ setup, close: async () => undefined });
  const memory = { kind: 'memory' } as const;
  // The service on the suite's PostgreSQL, in a schema of its own.
  const onPostgres = async (schema: string, options: Omit<OurServiceOptions, 'repository'>) =>
    served(
      await postgresBackend(postgres.url, schema, CONCURRENCY + PUBLISH_IN_FLIGHT, GROUP_COMMIT),
      options,
    );
  return [
    {
      keys: ['floor-bullmq'],
      deliveries: BULLMQ_DELIVERIES,
      open: async () => bare(bullmqFloor(redisPort, endpointUrl)),
    },
    {
      keys: ['floor-bullmq-batched'],
      deliveries: BULLMQ_DELIVERIES,
      open: async () => bare(bullmqBatchedFloor(redisPort, endpointUrl)),
    },
    {
      keys: ['bullmq', 'bullmq-fan-out'],
      deliveries: BULLMQ_DELIVERIES,
      open: async () =>
        onPostgres('bench_deliveries', {
          key: 'bullmq',
          name: 'ours: BullMQ, PostgreSQL (deliveriesPerJob 8, the default)',
          queue: { kind: 'bullmq', redisPort },
          endpointUrl,
          fanOut: true,
        }),
    },
    {
      // Not a target: the service's own path through BullMQ with no database, so that the
      // distance to the floor splits into the records' part and the rest.
      keys: ['bullmq-memory-repository'],
      deliveries: BULLMQ_DELIVERIES,
      open: async () =>
        served(memoryBackend(), {
          key: 'bullmq-memory-repository',
          name: 'ours: BullMQ, memory repository (no record in a database)',
          queue: { kind: 'bullmq', redisPort },
          endpointUrl,
        }),
    },
    {
      // Not a target: the service on PostgreSQL through the library's queue with a BullMQ job
      // per delivery (`deliveriesPerJob: 1`), beside the default of 8.
      keys: ['bullmq-one-a-job'],
      deliveries: BULLMQ_DELIVERIES,
      open: async () =>
        onPostgres('bench_deliveries_one', {
          key: 'bullmq-one-a-job',
          name: 'ours: BullMQ, PostgreSQL, deliveriesPerJob 1',
          queue: { kind: 'bullmq', redisPort, deliveriesPerJob: 1 },
          endpointUrl,
        }),
    },
    {
      keys: ['floor-memory'],
      deliveries: PGLITE_DELIVERIES,
      open: async () => bare(memoryFloor(endpointUrl)),
    },
    {
      keys: ['pglite-memory'],
      deliveries: PGLITE_DELIVERIES,
      open: async () =>
        served(await pgliteBackend('memory'), {
          key: 'pglite-memory',
          name: 'ours: memory queue, PGlite in memory',
          queue: memory,
          endpointUrl,
        }),
    },
    {
      keys: ['pglite-folder'],
      deliveries: PGLITE_DELIVERIES,
      open: async () =>
        served(await pgliteBackend('folder'), {
          key: 'pglite-folder',
          name: 'ours: memory queue, PGlite data folder',
          queue: memory,
          endpointUrl,
        }),
    },
  ];
}

/** The contenders `DELIVERIES_BENCH_CONTENDERS` names (comma-separated keys, or `none`), or all. */
function wanted(all: readonly Group[]): Set<string> {
  const keys = all.flatMap((g) => g.keys);
  const named = process.env.DELIVERIES_BENCH_CONTENDERS?.split(',').map((k) => k.trim());
  if (named === undefined) return new Set(keys);
  if (named.length === 1 && named[0] === 'none') return new Set();
  for (const key of named) {
    if (!keys.includes(key)) throw new Error(`no contender "${key}"; the keys: ${keys.join(', ')}`);
  }
  return new Set(named);
}

/** Make the contenders, warm each up, then run them in rounds. */
async function deliveries(
  postgres: PostgresServer,
  redis: RedisServer,
  receiver: ReceiverProcess,
): Promise<Entry[]> {
  const admin = new Redis({ port: redis.port, host: '127.0.0.1' });
  const serverInfo = await admin.info('server');
  const probes = new Probes(admin, {
    postgres: postgres.processId,
    redis: Number(/process_id:(\d+)/.exec(serverInfo)?.[1] ?? 0),
    receiver: receiver.pid,
  });
  const all = groups(postgres, redis.port, receiver.url);
  const keys = wanted(all);
  const opened: Opened[] = [];
  const entries: Entry[] = [];
  try {
    for (const group of all.filter((g) => g.keys.some((k) => keys.has(k)))) {
      const made = await group.open();
      opened.push(made);
      for (const contender of made.setup.contenders.filter((c) => keys.has(c.key))) {
        const { timed } = made;
        entries.push({
          contender,
          deliveries: group.deliveries,
          runs: [],
          ...(timed === undefined ? {} : { timed }),
        });
      }
    }
    for (const entry of entries) await runOnce(entry, receiver, probes, WARM_UP);
    for (let r = 0; r < ROUNDS && entries.length > 0; r++) {
      const order = r % 2 === 0 ? entries : [...entries].reverse();
      console.error(`round ${r + 1} of ${ROUNDS}`);
      for (const entry of order) {
        const run = await runOnce(entry, receiver, probes);
        entry.runs.push(run);
        entry.times = entry.timed?.times();
        console.error(`  ${describeRun(entry.contender.name, run)}`);
      }
    }
  } finally {
    for (const { setup, close } of opened) {
      await setup.close();
      await close();
    }
    admin.disconnect();
  }
  return entries;
}

/** Each contender against its floor, where both ran. */
function ratios(entries: readonly Entry[]) {
  const byKey = new Map(entries.map((e) => [e.contender.key, e]));
  const pairs = [
    ['bullmq', 'bullmq', 'floor-bullmq', TARGET],
    ['bullmqFanOut', 'bullmq-fan-out', 'floor-bullmq', undefined],
    ['bullmqMemoryRepository', 'bullmq-memory-repository', 'floor-bullmq', undefined],
    ['bullmqBatchedFloor', 'floor-bullmq-batched', 'floor-bullmq', undefined],
    ['bullmqOneAJob', 'bullmq-one-a-job', 'floor-bullmq', undefined],
    ['pgliteInMemory', 'pglite-memory', 'floor-memory', undefined],
    ['pgliteDataFolder', 'pglite-folder', 'floor-memory', undefined],
  ] as const;
  const out: Record<string, ReturnType<typeof ratio>> = {};
  for (const [name, ours, floor, target] of pairs) {
    const a = byKey.get(ours);
    const b = byKey.get(floor);
    if (a === undefined || b === undefined) continue;
    const r = ratio(a, b, target);
    out[name] = r;
    console.error(
      `${a.contender.name}: ${r.ofRounds}x of the floor (rounds ${r.rounds.join(', ')}; ` +
        `of the medians ${r.ofMedians}x; by CPU per delivery ${r.ofCpuPerDelivery}x)`,
    );
  }
  return out;
}

/** The targets of the summary's figures: at least, or (`cpuPerDeliveryVsBare`) at most. */
const SUMMARY_TARGETS = {
  bullmqVsBareBullmq: { atLeast: 0.7 },
  cpuPerDeliveryVsBare: { atMost: 2 },
  publishesPerSecond64: { atLeast: 15_000 },
  publishP99Ms64: { atMost: 10 },
  pgliteMemoryVsMemory: { atLeast: 0.3 },
} as const;

/**
 * The figures to read first, each beside its target (absent where its contenders did not run):
 * the service through BullMQ against the bare BullMQ worker (deliveries/s, median of the rounds'
 * ratios) and its CPU per delivery as a multiple of the worker's, with the queue's default (8
 * deliveries a job) and, not a target, with one delivery a job; publishes per second on the
 * suite's PostgreSQL 16 and 64 at a time, with the p99 at 64; the memory queue on PGlite in memory
 * against the memory queue without records.
 */
function summarize(
  vsFloor: ReturnType<typeof ratios>,
  outbox: Record<string, PublishCost>,
): Record<string, { value: number; target: string; met: boolean }> {
  const postgres = outbox['postgresql (pg Pool)'];
  const figures: Record<string, number | undefined> = {
    bullmqVsBareBullmq: vsFloor.bullmq?.ofRounds,
    cpuPerDeliveryVsBare:
      vsFloor.bullmq === undefined ? undefined : round(1 / vsFloor.bullmq.ofCpuPerDelivery),
    bullmqOneAJobVsBareBullmq: vsFloor.bullmqOneAJob?.ofRounds,
    cpuPerDeliveryOneAJobVsBare:
      vsFloor.bullmqOneAJob === undefined
        ? undefined
        : round(1 / vsFloor.bullmqOneAJob.ofCpuPerDelivery),
    publishesPerSecond16: postgres?.publishLoaded.perSecond,
    publishesPerSecond64: postgres?.publishLoaded64.perSecond,
    publishP99Ms64: postgres?.publishLoaded64.p99Ms,
    pgliteMemoryVsMemory: vsFloor.pgliteInMemory?.ofRounds,
  };
  const out: Record<string, { value: number; target: string; met: boolean }> = {};
  for (const [name, value] of Object.entries(figures)) {
    if (value === undefined) continue;
    const target = SUMMARY_TARGETS[name as keyof typeof SUMMARY_TARGETS] as
      | { atLeast?: number; atMost?: number }
      | undefined;
    if (target === undefined) {
      out[name] = { value, target: 'none', met: true };
    } else if (target.atLeast !== undefined) {
      out[name] = { value, target: `>= ${target.atLeast}`, met: value >= target.atLeast };
    } else {
      out[name] = { value, target: `<= ${target.atMost}`, met: value <= (target.atMost ?? 0) };
    }
  }
  return out;
}

/** The outbox's cost per published event on each repository (bench/outbox-cost.ts). */
async function outboxCost(
  postgres: PostgresServer,
  endpointUrl: string,
): Promise<Record<string, PublishCost>> {
  console.error('outbox cost per published event (publish() with a queue that drops its jobs):');
  const outbox: Record<string, PublishCost> = {};
  const server = postgres.processId;
  const serverCpu = new Map<string, ServerCpu>([
    ['postgresql (pg Pool)', () => treeCpuSeconds(server)],
  ]);
  const opens: Array<() => Promise<Backend>> = [
    () => postgresBackend(postgres.url, 'bench_outbox', PUBLISH_IN_FLIGHT + 4, GROUP_COMMIT),
    ...(process.env.DELIVERIES_BENCH_OUTBOX === 'postgres'
      ? []
      : [
          () => pgliteBackend('memory'),
          () => pgliteBackend('folder'),
          async () => memoryBackend(),
        ]),
  ];
  for (const open of opens) {
    const backend = await open();
    try {
      outbox[backend.name] = await measurePublishCost(
        backend,
        endpointUrl,
        OUTBOX_CALLS,
        serverCpu.get(backend.name),
      );
      console.error(`  ${backend.name.padEnd(22)} ${JSON.stringify(outbox[backend.name])}`);
    } finally {
      await backend.close();
    }
  }
  return outbox;
}

export async function run(): Promise<Record<string, unknown>> {
  const started = performance.now();
  const loadAtStart = loadavg().map((n) => round(n));
  const [postgres, redis, receiver] = await Promise.all([
    PostgresServer.start(),
    RedisServer.start(),
    ReceiverProcess.start(),
  ]);
  try {
    // The outbox's cost first, on a server the deliveries' runs have not yet churned: after them,
    // their tables' upkeep runs beside it (docs/benchmarks.md, "End-to-end deliveries").
    const outbox =
      process.env.DELIVERIES_BENCH_OUTBOX === '0' ? {} : await outboxCost(postgres, receiver.url);
    const entries = await deliveries(postgres, redis, receiver);
    const contenders = Object.fromEntries(
      entries.map((e) => [
        e.contender.key,
        {
          name: e.contender.name,
          ...medianRun(e.runs),
          rounds: e.runs.map((r) => r.deliveriesPerSecond),
          ...(e.times === undefined ? {} : { repositoryCallsLastRound: e.times }),
        },
      ]),
    );
    const vsFloor = ratios(entries);

    const summary = summarize(vsFloor, outbox);
    console.error(`summary: ${JSON.stringify(summary)}`);
    return {
      summary,
      workload: {
        deliveriesPerRun: { bullmq: BULLMQ_DELIVERIES, pglite: PGLITE_DELIVERIES },
        warmUp: WARM_UP,
        rounds: ROUNDS,
        publishInFlight: PUBLISH_IN_FLIGHT,
        concurrency: CONCURRENCY,
        fanOut: FAN_OUT,
        outboxCalls: OUTBOX_CALLS,
        servers:
          'PostgreSQL and redis-server started by the suite (fsync, synchronous_commit off; no persistence)',
      },
      contenders,
      ratios: vsFloor,
      outbox,
      suiteSeconds: Math.round((performance.now() - started) / 1000),
      loadAverage: { atStart: loadAtStart, atEnd: loadavg().map((n) => round(n)) },
    };
  } finally {
    await receiver.stop();
    await redis.stop();
    await postgres.stop();
  }
}
