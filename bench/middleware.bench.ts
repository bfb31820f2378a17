/**
 * Middleware overhead: requests per second and p99 latency of a minimal node:http service bare,
 * behind this library's node middleware (the Live preset, requests spread over 1,000 clients, so
 * every request is admitted), on Express bare and with express-rate-limit (3500 per minute per
 * client). Each service runs in its own process; autocannon loads it from
 * this one over loopback. The added latency is also measured inside the service (time from the
 * request event to the handler, in microseconds), since autocannon's latencies are whole ms.
 *
 * Each round also runs one service that takes turns of 50 ms between the bare handler, the
 * handler with an exact limiter written into it by hand (the floor: what any exact limiter costs
 * here) and the middleware, under one load. All three then meet the same moments of the shared
 * machine, whose speed moves separate runs by up to 40%; the throughput target is read from this
 * figure.
 *
 * With `BENCH_BASELINE` set to another build's `dist`, that build's middleware takes turns in the
 * same service and runs in a service of its own too, and the run reports this build against it.
 *
 * Where `taskset` is found, the services run on CPU 1 and autocannon on CPU 0 (service-process.ts).
 */
import { BASELINE } from './builds.js';
import {
  BASELINE_VARIANT,
  INTERLEAVED,
  interleaved,
  measured,
  SLICE_MS,
  type Variant,
} from './middleware-variants.js';
import { ask, load, PINNED, startService, stopService } from './service-process.js';
import { median, round } from './support.js';
import type { TurnFigures } from './turns.js';

const VARIANTS: readonly Variant[] =
  (process.env.MIDDLEWARE_BENCH_VARIANTS?.split(',') as Variant[] | undefined) ?? measured;
const ROUNDS = Number(process.env.MIDDLEWARE_BENCH_ROUNDS ?? 2);
const SECONDS = Number(process.env.MIDDLEWARE_BENCH_SECONDS ?? 5);

interface Figures {
  requestsPerSecond: number;
  p99LatencyMs: number;
  addedP50Us: number;
  addedP99Us: number;
  cpuUsPerRequest: number;
  non2xx: number;
}

async function measure(variant: Variant): Promise<Figures> {
  const child = startService('middleware-server.ts', [variant]);
  try {
    const { port } = await ask<{ port: number }>(child, '', 'port');
    const url = `http://127.0.0.1:${port}/booking/v1/reservations`;
    await load(url, 1); // warm-up: JIT, connections
    await ask(child, 'reset', 'reset');
    const result = await load(url, SECONDS);
    const inside = await ask<{ p50: number; p99: number; cpuUs: number }>(child, 'stats', 'p99');
    return {
      requestsPerSecond: result.requests.average,
      p99LatencyMs: result.latency.p99,
      addedP50Us: inside.p50,
      addedP99Us: inside.p99,
      cpuUsPerRequest: inside.cpuUs,
      non2xx: result.non2xx,
    };
  } finally {
    await stopService(child);
  }
}

/**
 * One service that takes turns of SLICE_MS between the bare handler and the middleware under one
 * load: both meet the same moments of the machine, which moves the rate of separate runs by up to
 * 40%. Each variant's rate is its requests over its turns' wall time.
 */
async function measureTurns(): Promise<Record<string, TurnFigures>> {
  const child = startService('middleware-server.ts', [INTERLEAVED]);
  try {
    const { port } = await ask<{ port: number }>(child, '', 'port');
    const url = `http://127.0.0.1:${port}/booking/v1/reservations`;
    await load(url, 1);
    await ask(child, 'reset', 'reset');
    await load(url, 2 * interleaved.length * SECONDS);
    const { turns } = await ask<{ turns: Record<string, TurnFigures> }>(child, 'stats', 'p99');
    return turns;
  } finally {
    await stopService(child);
  }
}

/** This build's middleware against the baseline's in one round of turns. */
interface BuildTurn {
  /** Requests per second, this build's over the baseline's. */
  rateRatio: number;
  /** The baseline's cost in throughput against bare, as a fraction. */
  baselineCost: number;
  /** CPU per request over bare, this build's over the baseline's: the middlewares' own work. */
  addedCpuRatio: number;
}

function turnsAgainstBaseline(turns: Record<string, TurnFigures>): BuildTurn {
  const of = (v: Variant) => turns[v] as TurnFigures;
  const [bare, ours, base] = [of('bare'), of('api-conventions'), of(BASELINE_VARIANT)];
  return {
    rateRatio: ours.requestsPerSecond / base.requestsPerSecond,
    baselineCost: 1 - base.requestsPerSecond / bare.requestsPerSecond,
    addedCpuRatio:
      (ours.cpuUsPerRequest - bare.cpuUsPerRequest) / (base.cpuUsPerRequest - bare.cpuUsPerRequest),
  };
}

/** The medians of the rounds of this build against the baseline, and in services of their own. */
function compareBuilds(
  builds: readonly BuildTurn[],
  summary: Record<string, Figures>,
): Record<string, unknown> {
  const ours = summary['api-conventions'];
  const base = summary[BASELINE_VARIANT];
  const compared = {
    baseline: BASELINE,
    rateRatioInTurns: round(median(builds.map((b) => b.rateRatio))),
    roundRateRatiosInTurns: builds.map((b) => round(b.rateRatio)),
    baselineCostInTurnsPercent: round(median(builds.map((b) => b.baselineCost)) * 100),
    addedCpuRatioInTurns: round(median(builds.map((b) => b.addedCpuRatio))),
    rateRatioInSeparateServices:
      ours === undefined || base === undefined
        ? undefined
        : round(ours.requestsPerSecond / base.requestsPerSecond),
  };
  console.error(
    `build against build, by the median of ${builds.length} rounds of turns: ${compared.rateRatioInTurns}x the baseline's requests per second (cost ${compared.baselineCostInTurnsPercent}% for the baseline), ${compared.addedCpuRatioInTurns}x its CPU per request over bare`,
  );
  return compared;
}

export async function run(): Promise<Record<string, unknown>> {
  const runs = new Map<Variant, Figures[]>(VARIANTS.map((v) => [v, []]));
  const turnCosts: number[] = [];
  const floorCosts: number[] = [];
  const builds: BuildTurn[] = [];
  // Rounds interleave the services, so that a busy moment of the shared machine hits all of them.
  for (let r = 1; r <= ROUNDS; r++) {
    const turns = await measureTurns();
    const rate = (v: Variant) => (turns[v] as TurnFigures).requestsPerSecond;
    turnCosts.push(1 - rate('api-conventions') / rate('bare'));
    floorCosts.push(1 - rate('hand-written') / rate('bare'));
    if (BASELINE !== undefined) builds.push(turnsAgainstBaseline(turns));
    console.error(
      `round ${r} turns of ${SLICE_MS} ms in one service: ${interleaved
        .map(
          (v) =>
            `${v} ${turns[v]?.requestsPerSecond.toLocaleString('en')} req/s, ${round(turns[v]?.cpuUsPerRequest ?? 0)} us CPU per request`,
        )
        .join(
          '; ',
        )}; cost ${round(turnCosts.at(-1)! * 100)}% (hand-written ${round(floorCosts.at(-1)! * 100)}%)`,
    );
    for (const variant of VARIANTS) {
      const figures = await measure(variant);
      runs.get(variant)?.push(figures);
      console.error(
        `round ${r} ${variant.padEnd(18)} ${Math.round(figures.requestsPerSecond).toLocaleString('en')} req/s, p99 ${figures.p99LatencyMs} ms, before handler p50 ${round(figures.addedP50Us)} us p99 ${round(figures.addedP99Us)} us, ${round(figures.cpuUsPerRequest)} us CPU per request${figures.non2xx > 0 ? `, ${figures.non2xx} non-2xx` : ''}`,
      );
    }
  }
  const summary: Record<string, Figures> = {};
  for (const [variant, list] of runs) {
    summary[variant] = {
      requestsPerSecond: Math.round(median(list.map((f) => f.requestsPerSecond))),
      p99LatencyMs: median(list.map((f) => f.p99LatencyMs)),
      addedP50Us: round(median(list.map((f) => f.addedP50Us))),
      addedP99Us: round(median(list.map((f) => f.addedP99Us))),
      cpuUsPerRequest: round(median(list.map((f) => f.cpuUsPerRequest))),
      non2xx: list.reduce((n, f) => n + f.non2xx, 0),
    };
  }
  const bare = summary.bare as Figures;
  const ours = summary['api-conventions'] as Figures;
  const throughputCost = 1 - ours.requestsPerSecond / bare.requestsPerSecond;
  const addedP99Us = ours.addedP99Us - bare.addedP99Us;
  console.error(
    `${PINNED ? 'service on CPU 1, load on CPU 0' : 'not pinned (no taskset)'}; api-conventions vs bare in separate services: ${round(throughputCost * 100)}% of throughput, +${round(addedP99Us)} us at p99 before the handler (target < 50 us)`,
  );
  const rateOf = (variant: Variant): number | undefined => summary[variant]?.requestsPerSecond;
  const withId = rateOf('bare-tracking-id');
  const stamping = rateOf('api-conventions-tracking-id');
  const express = rateOf('express');
  const expressLimited = rateOf('express-rate-limit');
  const turnCost = median(turnCosts);
  const floorCost = median(floorCosts);
  console.error(
    `in turns of ${SLICE_MS} ms in one service, by the median of ${ROUNDS} rounds: ${round(turnCost * 100)}% of throughput; the hand-written limiter ${round(floorCost * 100)}% (target: within 5 points of it)`,
  );
  const buildAgainstBuild = BASELINE === undefined ? undefined : compareBuilds(builds, summary);
  return {
    pinned: PINNED,
    ...summary,
    throughputCostPercent: round(throughputCost * 100),
    // The same cost measured in one service that takes turns between bare, hand-written and ours: the steadier
    // figure (separate runs of one round differ by up to 40%), and the one the target is read from.
    throughputCostInTurnsPercent: round(turnCost * 100),
    // The floor in the same turns: an exact Live limiter written by hand into the handler.
    handWrittenCostInTurnsPercent: round(floorCost * 100),
    addedP99Us: round(addedP99Us),
    // The restated target: within 5 points of the hand-written limiter's cost in the same turns.
    withinTargets: turnCost - floorCost <= 0.05 && addedP99Us < 50,
    // The part of the cost a bare service pays too when it sends the same tracking id header.
    trackingIdHeaderCostPercent:
      withId === undefined ? undefined : round((1 - withId / bare.requestsPerSecond) * 100),
    // The middleware with the tracking id on every admitted response (trackingIdOnAdmitted).
    trackingIdOnAdmittedCostPercent:
      stamping === undefined ? undefined : round((1 - stamping / bare.requestsPerSecond) * 100),
    expressRateLimitVsExpress:
      express === undefined || expressLimited === undefined
        ? undefined
        : round(expressLimited / express),
    buildAgainstBuild,
  };
}
