/**
 * Each framework's own rate limiter against this library's, in that framework: Fastify 5 with
 * @fastify/rate-limit, Hono on @hono/node-server with hono-rate-limiter, Express 5 with
 * express-rate-limit, each beside the framework bare (for the added cost) and ours (the Live
 * preset), with the same autocannon clients and traffic. The variants of one framework take turns
 * of 50 ms in one service (frameworks-server.ts), so that all meet the same moments of the machine;
 * the frameworks take turns from round to round. Requests per second, CPU per request, and the
 * time before the handler measured inside the service (autocannon's latencies are whole ms).
 */
import {
  type Framework,
  type FrameworkVariant,
  frameworks,
  frameworkVariants,
  ownLimiter,
  ROUTE,
} from './frameworks-variants.js';
import { ask, load, PINNED, startService, stopService } from './service-process.js';
import { median, round } from './support.js';
import type { TurnFigures } from './turns.js';

const FRAMEWORKS: readonly Framework[] =
  (process.env.FRAMEWORKS_BENCH_FRAMEWORKS?.split(',') as Framework[] | undefined) ?? frameworks;
const ROUNDS = Number(process.env.FRAMEWORKS_BENCH_ROUNDS ?? 3);
// Seconds of load per variant and round: the service takes turns for this times the variants.
const SECONDS = Number(process.env.FRAMEWORKS_BENCH_SECONDS ?? 5);
const WARM_UP_SECONDS = 2;

/** One variant's figures in one round. */
interface VariantFigures extends TurnFigures {
  /** Time from the request event to the handler, in µs. */
  p50: number;
  p99: number;
  samples: number;
}

type Round = Record<FrameworkVariant, VariantFigures>;

/** One round of one framework: its variants in turns under one load. */
async function measureRound(framework: Framework): Promise<{ round: Round; non2xx: number }> {
  const child = startService('frameworks-server.ts', [framework]);
  try {
    const { port } = await ask<{ port: number }>(child, '', 'port');
    const url = `http://127.0.0.1:${port}${ROUTE}`;
    await load(url, WARM_UP_SECONDS);
    await ask(child, 'reset', 'reset');
    const result = await load(url, SECONDS * frameworkVariants.length);
    const { variants } = await ask<{ variants: Round }>(child, 'stats', 'variants');
    return { round: variants, non2xx: result.non2xx };
  } finally {
    await stopService(child);
  }
}

/** The medians over the rounds of one framework, against its bare service and its own limiter. */
function summarise(framework: Framework, rounds: readonly Round[]): Record<string, unknown> {
  const of = (figure: (r: Round) => number) => median(rounds.map(figure));
  const rate = (r: Round, variant: FrameworkVariant) => r[variant].requestsPerSecond;
  const variants: Record<string, unknown> = {};
  for (const variant of frameworkVariants) {
    variants[variant === 'own limiter' ? ownLimiter[framework] : variant] = {
      requestsPerSecond: Math.round(of((r) => rate(r, variant))),
      cpuUsPerRequest: round(of((r) => r[variant].cpuUsPerRequest)),
      beforeHandlerP50Us: round(of((r) => r[variant].p50)),
      beforeHandlerP99Us: round(of((r) => r[variant].p99)),
      costPercent: round(of((r) => 1 - rate(r, variant) / rate(r, 'bare')) * 100),
      addedP99Us: round(of((r) => r[variant].p99 - r.bare.p99)),
    };
  }
  const ratio = (variant: FrameworkVariant) =>
    round(of((r) => rate(r, variant) / rate(r, 'own limiter')));
  return {
    variants,
    oursVsOwn: ratio('api-conventions'),
    oursWithFieldsVsOwn: ratio('api-conventions, RateLimit fields'),
    oursWithEveryPolicyVsOwn: ratio('api-conventions, RateLimit fields of every policy'),
    roundRatiosOursVsOwn: rounds.map((r) =>
      round(rate(r, 'api-conventions') / rate(r, 'own limiter')),
    ),
    roundRatiosOursWithFieldsVsOwn: rounds.map((r) =>
      round(rate(r, 'api-conventions, RateLimit fields') / rate(r, 'own limiter')),
    ),
  };
}

function logRound(r: number, framework: Framework, figures: Round): void {
  const parts = frameworkVariants.map((variant) => {
    const f = figures[variant];
    const name = variant === 'own limiter' ? ownLimiter[framework] : variant;
    return `${name} ${f.requestsPerSecond.toLocaleString('en')} req/s, ${round(f.cpuUsPerRequest)} us CPU, before handler p99 ${round(f.p99)} us`;
  });
  console.error(`round ${r} ${framework}: ${parts.join('; ')}`);
}

export async function run(): Promise<Record<string, unknown>> {
  const rounds = new Map<Framework, Round[]>(FRAMEWORKS.map((f) => [f, []]));
  let non2xx = 0;
  for (let r = 1; r <= ROUNDS; r++) {
    // The frameworks take turns from round to round too, none always first.
    const order = FRAMEWORKS.map((_, i) => FRAMEWORKS[(i + r - 1) % FRAMEWORKS.length]!);
    for (const framework of order) {
      const measured = await measureRound(framework);
      rounds.get(framework)?.push(measured.round);
      non2xx += measured.non2xx;
      logRound(r, framework, measured.round);
    }
  }
  const results: Record<string, unknown> = {};
  for (const [framework, list] of rounds) {
    const summary = summarise(framework, list);
    results[framework] = summary;
    const variants = summary.variants as Record<string, { requestsPerSecond: number }>;
    const rps = (name: string) => variants[name]?.requestsPerSecond.toLocaleString('en');
    console.error(
      `${framework}, medians of ${ROUNDS} rounds: ours ${summary.oursVsOwn}x ${ownLimiter[framework]}'s requests per second without the RateLimit fields and ${summary.oursWithFieldsVsOwn}x with them (${summary.oursWithEveryPolicyVsOwn}x with every policy's) (ours ${rps('api-conventions')} and ${rps('api-conventions, RateLimit fields')} req/s, ${ownLimiter[framework]} ${rps(ownLimiter[framework])} req/s)`,
    );
  }
  return {
    pinned: PINNED,
    rounds: ROUNDS,
    secondsPerVariant: SECONDS,
    // Every request is admitted by every limiter (10,000 clients under every limit): 0 expected.
    non2xx,
    ...results,
  };
}
