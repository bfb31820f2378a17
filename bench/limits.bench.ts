/**
 * Limit engine benchmark: the Live preset (three global policies and the throttle lease) against
 * rate-limiter-flexible and express-rate-limit's MemoryStore on the same keys and decisions, then
 * admission quality on bursty traffic against the exact sliding-log oracle. A hand-written exact
 * limiter for the workload alone (limits-floor.ts) gives the floor that any exact limiter meets.
 * With `BENCH_BASELINE` set, each of our contenders also runs on that build, in the same rounds.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createLimiter, FakeClock } from 'api-conventions';
import { MemoryStore as ExpressMemoryStore } from 'express-rate-limit';
import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import { ExactOracle, maxInAnyWindow } from '../test/support/oracle.js';
import { BASELINE } from './builds.js';
import {
  type Contender,
  contenders,
  DECISIONS,
  isOurs,
  KEYS,
  liveGlobal,
  request,
  type Throughput,
} from './limits-contender.js';
import { median, round, withDateNow } from './support.js';

const ROUNDS = Number(process.env.LIMITS_BENCH_ROUNDS ?? 3);
// A comma-separated subset of the contenders, for short runs (all of them by default).
const ONLY = process.env.LIMITS_BENCH_CONTENDERS?.split(',');

/** Which build a measurement runs: this checkout's, or the baseline's. */
type Build = 'current' | 'baseline';

/** Measure one contender of one build in a fresh process (see limits-contender.ts). */
async function measureApart(name: Contender, build: Build): Promise<Throughput> {
  const child = fork(join(import.meta.dirname, 'limits-contender.ts'), [], {
    execArgv: ['--import', 'tsx', '--expose-gc', '--max-old-space-size=8192'],
    env: {
      ...process.env,
      LIMITS_BENCH_CONTENDER: name,
      LIMITS_BENCH_BUILD: build === 'baseline' ? BASELINE : '',
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [figures] = (await once(child, 'message')) as [Throughput];
  await once(child, 'exit');
  return figures;
}

/** Bursts of 50 to 400 requests, a few ms apart, every 200 ms to 2 s, for about two minutes. */
function burstyTrace(seed: number): number[] {
  let state = seed;
  const random = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
  const times: number[] = [];
  let t = 0;
  while (t < 120_000) {
    const size = 50 + Math.floor(random() * 350);
    for (let i = 0; i < size; i++) times.push(t + Math.floor(i * random() * 3));
    t += 200 + Math.floor(random() * 1_800);
  }
  return times.sort((a, b) => a - b);
}

/**
 * One request opens a fixed window at t = 0; 199 more come at 999 ms and 200 at 1000 ms, when the
 * window restarts. 399 fall inside [999, 1999), a single second.
 */
const edgeTrace = (): number[] => [
  0,
  ...Array.from({ length: 199 }, () => 999),
  ...Array.from({ length: 200 }, () => 1_000),
];

interface Quality {
  admitted: number;
  maxIn1s: number;
  maxIn60s: number;
  refusals: number;
  earlyRetries: number;
}

interface Refusal {
  at: number;
  retryAt: number;
}

/**
 * A refusal's announced retry is early when the specification's Live windows (200 per second,
 * 3500 per minute) would still be full at that instant, counting only what was admitted before
 * the refusal: a client that waits exactly as told, with nothing else arriving, is refused again.
 */
function isEarly(admitted: readonly number[], { at, retryAt }: Refusal): boolean {
  let in1s = 0;
  let in60s = 0;
  for (const a of admitted) {
    if (a > at) break;
    if (a > retryAt - 1_000) in1s++;
    if (a > retryAt - 60_000) in60s++;
  }
  return in1s >= 200 || in60s >= 3_500;
}

function summarise(admitted: number[], refusals: Refusal[]): Quality {
  return {
    admitted: admitted.length,
    maxIn1s: maxInAnyWindow(admitted, 1_000),
    maxIn60s: maxInAnyWindow(admitted, 60_000),
    refusals: refusals.length,
    earlyRetries: refusals.filter((r) => isEarly(admitted, r)).length,
  };
}

function qualityOurs(times: readonly number[]): Quality {
  const clock = new FakeClock(0);
  const limiter = createLimiter({ preset: liveGlobal, clock });
  const admitted: number[] = [];
  const refusals: Refusal[] = [];
  for (const t of times) {
    clock.set(t);
    const d = limiter.check(request(0));
    if (d.allowed) {
      admitted.push(t);
      d.release();
    } else refusals.push({ at: t, retryAt: d.retryAt });
  }
  return summarise(admitted, refusals);
}

function qualityOracle(times: readonly number[]): number {
  const oracle = new ExactOracle(liveGlobal.policies);
  let admitted = 0;
  for (const t of times) {
    const d = oracle.decide(t);
    if (d.allowed) admitted++;
    if (d.leaseId !== undefined) oracle.release(d.leaseId);
  }
  return admitted;
}

async function qualityPeer(
  times: readonly number[],
  peer: 'flexible' | 'express',
): Promise<Quality> {
  let now = 0;
  return withDateNow(
    () => now,
    async () => {
      const admitted: number[] = [];
      const refusals: Refusal[] = [];
      if (peer === 'flexible') {
        const perSecond = new RateLimiterMemory({ points: 200, duration: 1 });
        const perMinute = new RateLimiterMemory({ points: 3500, duration: 60 });
        for (const t of times) {
          now = t;
          try {
            await perSecond.consume('k');
            await perMinute.consume('k');
            admitted.push(t);
          } catch (error) {
            refusals.push({ at: t, retryAt: t + (error as RateLimiterRes).msBeforeNext });
          }
        }
      } else {
        const perSecond = new ExpressMemoryStore();
        const perMinute = new ExpressMemoryStore();
        perSecond.init({ windowMs: 1_000 } as never);
        perMinute.init({ windowMs: 60_000 } as never);
        for (const t of times) {
          now = t;
          const a = await perSecond.increment('k');
          if (a.totalHits > 200) {
            refusals.push({ at: t, retryAt: a.resetTime?.getTime() ?? t + 1_000 });
            continue;
          }
          const b = await perMinute.increment('k');
          if (b.totalHits > 3500)
            refusals.push({ at: t, retryAt: b.resetTime?.getTime() ?? t + 60_000 });
          else admitted.push(t);
        }
        perSecond.shutdown();
        perMinute.shutdown();
      }
      return summarise(admitted, refusals);
    },
  );
}

/**
 * The longest single decision while a store grows: 200,000 keys that come once a second for 20
 * seconds beside 17,000 steady ones, then only the steady ones for 2,000,000 decisions (the
 * others go quiet and are reclaimed). Every decision is timed; a store that grows by copying its
 * state holds the decision that triggers the copy.
 */
function growthPauses(): { decisions: number; longestMs: number; p999Ms: number } {
  const clock = new FakeClock(0);
  const limiter = createLimiter({ preset: liveGlobal, clock });
  const times: number[] = [];
  const decide = (clientId: string) => {
    const start = performance.now();
    const d = limiter.check({ ...request(0), clientId });
    if (d.allowed) d.release();
    times.push(performance.now() - start);
  };
  for (let r = 0; r < 20; r++) {
    for (let k = 0; k < 200_000; k++) decide(`burst-${k}`);
    for (let k = 0; k < 17_000; k++) decide(`steady-${k}`);
    clock.advance(50);
  }
  clock.advance(61_000);
  for (let i = 0; i < 2_000_000; i++) {
    decide(`steady-${i % 17_000}`);
    if (i % 17_000 === 0) clock.advance(100);
  }
  times.sort((x, y) => x - y);
  return {
    decisions: times.length,
    longestMs: round(times[times.length - 1]!),
    p999Ms: round(times[Math.floor(times.length * 0.999)]!),
  };
}

/** The builds a contender runs on, in this round's order: the order swaps from round to round. */
function buildsOf(name: Contender, round: number): Build[] {
  if (BASELINE === undefined || !isOurs(name)) return ['current'];
  return round % 2 === 1 ? ['current', 'baseline'] : ['baseline', 'current'];
}

/** Each figure's median over the rounds. */
function medians(list: readonly Throughput[]): Throughput {
  return {
    decisionsPerSecond: median(list.map((f) => f.decisionsPerSecond)),
    heapBytesPerKey: median(list.map((f) => f.heapBytesPerKey)),
    admitted: median(list.map((f) => f.admitted)),
    allocatedBytesPerDecision: median(list.map((f) => f.allocatedBytesPerDecision)),
  };
}

/** The ratios to the peers and the floor, of those that ran. */
function peerRatios(results: Partial<Record<Contender, Throughput>>): Record<string, number> {
  const rate = (name: Contender) => results[name]?.decisionsPerSecond ?? Number.NaN;
  const ours = rate('api-conventions');
  const flexible = rate('rate-limiter-flexible');
  // What the workload allows an exact limiter at all: the hand-written floor (limits-floor.ts).
  const floor = rate('floor: hand-written exact Live limiter');
  const ratios = {
    vsRateLimiterFlexible: ours / flexible,
    vsExpressRateLimit: ours / rate('express-rate-limit'),
    noStatusesVsRateLimiterFlexible: rate('api-conventions, no statuses') / flexible,
    floorVsRateLimiterFlexible: floor / flexible,
    vsFloor: ours / floor,
  };
  return Object.fromEntries(
    Object.entries(ratios)
      .filter(([, ratio]) => Number.isFinite(ratio))
      .map(([key, ratio]) => [key, round(ratio)]),
  );
}

/**
 * This build against the baseline, per contender of ours: the medians of the rounds, their
 * ratio (current / baseline) and each round's ratio.
 */
function compareBuilds(
  current: Map<Contender, Throughput[]>,
  baseline: Map<Contender, Throughput[]>,
): Record<string, unknown> {
  const compared: Record<string, unknown> = {};
  for (const [name, base] of baseline) {
    const mine = current.get(name) ?? [];
    const rates = (list: readonly Throughput[]) => list.map((f) => f.decisionsPerSecond);
    const ratio = median(rates(mine)) / median(rates(base));
    compared[name] = {
      currentDecisionsPerSecond: Math.round(median(rates(mine))),
      baselineDecisionsPerSecond: Math.round(median(rates(base))),
      ratio: round(ratio),
      roundRatios: mine.map((f, i) => round(f.decisionsPerSecond / base[i]!.decisionsPerSecond)),
      currentBytesPerDecision: Math.round(medians(mine).allocatedBytesPerDecision),
      baselineBytesPerDecision: Math.round(medians(base).allocatedBytesPerDecision),
    };
    console.error(
      `build against build, ${name}: ${round(ratio)}x the baseline (medians of ${base.length} rounds)`,
    );
  }
  return { baseline: BASELINE, ...compared };
}

export async function run(): Promise<Record<string, unknown>> {
  const names = (Object.keys(contenders) as Contender[]).filter(
    (name) => ONLY === undefined || ONLY.includes(name),
  );
  const runs = { current: new Map<Contender, Throughput[]>(), baseline: new Map() };
  // Each contender and build in a process of its own, the rounds interleaved so that a busy
  // moment of the machine hits every contender; the medians are reported.
  for (let r = 1; r <= ROUNDS; r++) {
    for (const name of names) {
      for (const build of buildsOf(name, r)) {
        const figures = await measureApart(name, build);
        const list = runs[build].get(name) ?? [];
        runs[build].set(name, [...list, figures]);
        const label = build === 'baseline' ? `${name} (baseline)` : name;
        console.error(
          `round ${r} ${label.padEnd(48)} ${round(figures.decisionsPerSecond / 1e6)} M decisions/s, ${Math.round(figures.heapBytesPerKey)} B per key, ${Math.round(figures.allocatedBytesPerDecision)} B made per decision, ${figures.admitted} admitted`,
        );
      }
    }
  }
  const results: Partial<Record<Contender, Throughput>> = {};
  for (const [name, list] of runs.current) results[name] = medians(list);
  const ratios = peerRatios(results);
  console.error(
    `medians of ${ROUNDS} rounds, ratios: ${JSON.stringify(ratios)} (target: vsFloor at least 0.55, aiming at 0.75)`,
  );
  const buildAgainstBuild =
    BASELINE === undefined ? undefined : compareBuilds(runs.current, runs.baseline);

  const bursty = burstyTrace(7);
  const oracle = qualityOracle(bursty);
  const quality = {
    trace: { requests: bursty.length, seconds: 120 },
    oracleAdmitted: oracle,
    'api-conventions': qualityOurs(bursty),
    'rate-limiter-flexible': await qualityPeer(bursty, 'flexible'),
    'express-rate-limit': await qualityPeer(bursty, 'express'),
  };
  const growth = growthPauses();
  console.error(
    `longest decision while the store grows to 217,000 keys: ${JSON.stringify(growth)}`,
  );
  const edge = {
    'api-conventions': qualityOurs(edgeTrace()).maxIn1s,
    'rate-limiter-flexible': (await qualityPeer(edgeTrace(), 'flexible')).maxIn1s,
    'express-rate-limit': (await qualityPeer(edgeTrace(), 'express')).maxIn1s,
  };
  console.error(`bursty trace: ${JSON.stringify(quality)}`);
  console.error(`edge trace, most admitted in any 1 s (limit 200): ${JSON.stringify(edge)}`);
  return {
    workload: {
      keys: KEYS,
      decisions: DECISIONS,
      preset: 'live (3 global policies + throttle lease)',
      rounds: ROUNDS,
    },
    throughput: Object.fromEntries(
      Object.entries(results).map(([k, v]) => [
        k,
        {
          decisionsPerSecond: Math.round(v.decisionsPerSecond),
          heapBytesPerKey: Math.round(v.heapBytesPerKey),
          allocatedBytesPerDecision: Math.round(v.allocatedBytesPerDecision),
        },
      ]),
    ),
    ratios,
    buildAgainstBuild,
    admissionVsOracle: round(quality['api-conventions'].admitted / oracle, 4),
    quality,
    edgeMaxIn1s: edge,
    growth,
  };
}
