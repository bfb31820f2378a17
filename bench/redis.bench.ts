/**
 * Redis store benchmark: the engine benchmark's workload through Redis (10,000 keys, 64 decisions
 * in flight, 200,000 decisions, one ioredis connection), side by side with rate-limiter-flexible's
 * RateLimiterRedis (the two windows) and the floor, a trivial EVALSHA at the same concurrency,
 * against a redis-server this suite starts on a free port. Reports decisions per second, p50 and
 * p99 latency, and Redis commands per decision from INFO commandstats. Every timed run starts on
 * empty keys. The Live suites run on the store's defaults (several decisions per script call
 * under load) and with one decision per call (`maxBatch: 1`), on ioredis and on one node-redis
 * connection.
 */

import { type Plan, type PlanScope, presets } from 'api-conventions';
import {
  ioredisClient,
  nodeRedisClient,
  type RedisScriptClient,
  RedisStore,
} from 'api-conventions/redis';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { createClient } from 'redis';
import { RedisServer } from '../test/support/redis-server.js';
import { consumeEach, median, round } from './support.js';

const KEYS = 10_000;
const IN_FLIGHT = 64;
const DECISIONS = 200_000;
const WARM_UP = 20_000;
/** Rounds of every suite, interleaved; each figure is the median of its rounds. */
const ROUNDS = 3;

interface Result {
  decisionsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  scriptCallsPerDecision: number;
  commandsPerDecision: number;
  /** CPU time inside Redis per script call (`usec_per_call` of EVALSHA), in microseconds. */
  scriptUsecPerCall: number;
  /**
   * CPU time of this Node process per decision, in microseconds: the client's share (the store,
   * ioredis, the event loop). With Redis's share it tells which side bounds the rate.
   */
  nodeCpuUsPerDecision: number;
  admitted: number;
}

type Decide = (i: number) => Promise<boolean>;

/** Calls and CPU microseconds per call of every command since the last RESETSTAT. */
async function commandStats(admin: Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const stats = new Map<string, { calls: number; usec: number }>();
  const info = await admin.info('commandstats');
  for (const m of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/g)) {
    stats.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return stats;
}

/** Run `total` decisions with `IN_FLIGHT` workers; wall time, since the work is in Redis too. */
async function drive(decide: Decide, total: number, latencies?: Float64Array): Promise<number> {
  let next = 0;
  let admitted = 0;
  const worker = async () => {
    for (let i = next++; i < total; i = next++) {
      const start = performance.now();
      if (await decide(i)) admitted++;
      if (latencies) latencies[i] = performance.now() - start;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return admitted;
}

/**
 * Warm up, then time `DECISIONS` decisions on keys that start empty, as the workload says (10,000
 * keys, 200,000 decisions): the warm-up's keys and those of every earlier run are deleted first
 * (the server is this suite's own), so that no run decides on the history of another.
 */
async function measure(admin: Redis, decide: Decide): Promise<Result> {
  await drive(decide, WARM_UP);
  await admin.flushall();
  await admin.config('RESETSTAT');
  const latencies = new Float64Array(DECISIONS);
  const start = performance.now();
  const cpu = process.cpuUsage();
  const admitted = await drive(decide, DECISIONS, latencies);
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - start) / 1000;
  const stats = await commandStats(admin);
  stats.delete('config|resetstat');
  stats.delete('info');
  const scripts = (stats.get('evalsha')?.calls ?? 0) + (stats.get('eval')?.calls ?? 0);
  const all = [...stats.values()].reduce((a, b) => a + b.calls, 0);
  const sorted = latencies.sort();
  return {
    decisionsPerSecond: Math.round(DECISIONS / seconds),
    p50Ms: round(sorted[Math.floor(DECISIONS * 0.5)]!),
    p99Ms: round(sorted[Math.floor(DECISIONS * 0.99)]!),
    scriptCallsPerDecision: round(scripts / DECISIONS),
    commandsPerDecision: round(all / DECISIONS),
    scriptUsecPerCall: stats.get('evalsha')?.usec ?? 0,
    nodeCpuUsPerDecision: round((used.user + used.system) / DECISIONS),
    admitted,
  };
}

/** Each figure's median over the rounds. */
function medianResult(list: readonly Result[]): Result {
  const of = (pick: (r: Result) => number) => median(list.map(pick));
  return {
    decisionsPerSecond: of((r) => r.decisionsPerSecond),
    p50Ms: of((r) => r.p50Ms),
    p99Ms: of((r) => r.p99Ms),
    scriptCallsPerDecision: of((r) => r.scriptCallsPerDecision),
    commandsPerDecision: of((r) => r.commandsPerDecision),
    scriptUsecPerCall: of((r) => r.scriptUsecPerCall),
    nodeCpuUsPerDecision: of((r) => r.nodeCpuUsPerDecision),
    admitted: of((r) => r.admitted),
  };
}

const scopes = (policies: PlanScope['policies'], statuses = true): Plan[] =>
  Array.from({ length: KEYS }, (_, i) => ({
    statuses,
    scopes: [
      {
        clientId: `client-${i}`,
        accountCode: 'ACME',
        resource: '',
        policies,
        active: policies.map((_, k) => k),
      },
    ],
  }));

/**
 * The Live preset with the throttle. Each lease is given back as the middleware gives it back, when
 * the response ends, without waiting for Redis: it travels with the next decision. With `statuses`
 * false, admissions report no statuses, as the middleware asks unless it sends the RateLimit fields.
 * `maxBatch`: the store's default (several decisions per call under load) unless given; 1 sends
 * each decision in a script call of its own.
 */
/** The Live suite with every decision in a script call of its own (`maxBatch: 1`). */
const ONE_CALL_EACH = 'api-conventions, live with throttle, one call per decision';

function oursLive(
  client: RedisScriptClient,
  prefix: string,
  statuses = true,
  maxBatch?: number,
): Decide {
  const store = new RedisStore({
    client,
    prefix,
    timeoutMs: 5_000,
    ...(maxBatch === undefined ? {} : { maxBatch }),
  });
  const plans = scopes(presets.live.policies, statuses);
  return async (i) => {
    const outcome = await store.apply(plans[i % KEYS]!, 0);
    if (outcome.allowed && outcome.lease !== undefined) void store.release(outcome.lease);
    return outcome.allowed;
  };
}

/** The Live preset's three global policies, without the throttle, on the store's defaults. */
function oursGlobal(redis: Redis, prefix: string): Decide {
  const store = new RedisStore({ client: ioredisClient(redis), prefix, timeoutMs: 5_000 });
  const plans = scopes(presets.live.policies.filter((p) => p.kind !== 'concurrency'));
  return async (i) => (await store.apply(plans[i % KEYS]!, 0)).allowed;
}

function flexible(redis: Redis, prefix: string): Decide {
  const perSecond = new RateLimiterRedis({
    storeClient: redis,
    points: 200,
    duration: 1,
    keyPrefix: `${prefix}s`,
  });
  const perMinute = new RateLimiterRedis({
    storeClient: redis,
    points: 3500,
    duration: 60,
    keyPrefix: `${prefix}m`,
  });
  return (i) => consumeEach([perSecond, perMinute], `client-${i % KEYS}:ACME`);
}

async function floor(redis: Redis): Promise<Decide> {
  const sha = (await redis.script('LOAD', 'return 1')) as string;
  return async (i) => (await redis.evalsha(sha, 1, `floor:${i % KEYS}`)) === 1;
}

export async function run(): Promise<Record<string, unknown>> {
  const server = await RedisServer.start();
  const redis = new Redis({
    port: server.port,
    host: '127.0.0.1',
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    lazyConnect: true,
  });
  const admin = new Redis({ port: server.port, host: '127.0.0.1', lazyConnect: true });
  await redis.connect();
  await admin.connect();
  const ioredis = ioredisClient(redis);
  const nodeRedisConnection = await createClient({
    socket: { host: '127.0.0.1', port: server.port },
    disableOfflineQueue: true,
  }).connect();
  const nodeRedis = nodeRedisClient(nodeRedisConnection);
  try {
    const suites: Array<[string, Decide]> = [
      ['trivial EVALSHA (floor)', await floor(redis)],
      ['api-conventions, global policies', oursGlobal(redis, 'g:')],
      ['api-conventions, live with throttle', oursLive(ioredis, 'l:')],
      ['api-conventions, live with throttle, no statuses', oursLive(ioredis, 'n:', false)],
      [ONE_CALL_EACH, oursLive(ioredis, 'o:', true, 1)],
      // The same on node-redis, which writes the commands of a turn together at setImmediate.
      ['api-conventions, live with throttle, node-redis', oursLive(nodeRedis, 'r:')],
      [`${ONE_CALL_EACH}, node-redis`, oursLive(nodeRedis, 'ro:', true, 1)],
      ['rate-limiter-flexible', flexible(redis, 'f:')],
    ];
    const rounds = new Map<string, Result[]>(suites.map(([name]) => [name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, decide] of suites) {
        const result = await measure(admin, decide);
        rounds.get(name)!.push(result);
        console.error(`${round} ${name.padEnd(36)} ${JSON.stringify(result)}`);
      }
    }
    const results: Record<string, Result> = {};
    for (const [name, list] of rounds) results[name] = medianResult(list);
    const global = results['api-conventions, global policies']!.decisionsPerSecond;
    const live = results['api-conventions, live with throttle']!.decisionsPerSecond;
    const lean = results['api-conventions, live with throttle, no statuses']!.decisionsPerSecond;
    const oneCallEach = results[ONE_CALL_EACH]!.decisionsPerSecond;
    const nodeRedisDefault =
      results['api-conventions, live with throttle, node-redis']!.decisionsPerSecond;
    const nodeRedisOne = results[`${ONE_CALL_EACH}, node-redis`]!.decisionsPerSecond;
    const flex = results['rate-limiter-flexible']!.decisionsPerSecond;
    const floorRate = results['trivial EVALSHA (floor)']!.decisionsPerSecond;
    const ratios = {
      globalVsRateLimiterFlexible: round(global / flex),
      globalVsFloor: round(global / floorRate),
      liveWithThrottleVsRateLimiterFlexible: round(live / flex),
      liveWithThrottleVsFloor: round(live / floorRate),
      liveNoStatusesVsRateLimiterFlexible: round(lean / flex),
      liveNoStatusesVsFloor: round(lean / floorRate),
      liveOneCallEachVsRateLimiterFlexible: round(oneCallEach / flex),
      liveOneCallEachVsFloor: round(oneCallEach / floorRate),
      // node-redis: what calls of several decisions bring to the other client.
      nodeRedisVsOneCallEach: round(nodeRedisDefault / nodeRedisOne),
    };
    console.error(`ratios: ${JSON.stringify(ratios)}`);
    return {
      workload: {
        keys: KEYS,
        inFlight: IN_FLIGHT,
        decisions: DECISIONS,
        connection: 'one ioredis; one node-redis for its suites',
        rounds: ROUNDS,
      },
      results,
      ratios,
    };
  } finally {
    nodeRedisConnection.destroy();
    redis.disconnect();
    admin.disconnect();
    await server.stop();
  }
}
