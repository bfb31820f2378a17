/**
 * A scripted run of the limit engine on a fake clock: a Live client bursting past its limits, a
 * PATCH of one booking past its per-resource limit, and a Development client hitting 5 per
 * second. Each line is a run of identical outcomes: admitted, or 429 with the limit that was hit
 * and the Retry-After it announced.
 *
 * Run it with `npm run demo:scripted`.
 */
import {
  type AccountType,
  createLimiter,
  FakeClock,
  type LimitRequest,
  presets,
} from '../src/index.js';

const clock = new FakeClock(Date.UTC(2026, 0, 1));
const start = clock.now();
const limiter = createLimiter({ preset: presets.byAccountType, clock });

interface Step {
  what: string;
  request: Omit<LimitRequest<AccountType>, 'clientId' | 'accountCode'> & { clientId?: string };
  count: number;
  at: number;
}

const live = { accountType: 'live', method: 'GET', path: '/booking/v1/reservations' } as const;
const dev = {
  accountType: 'development',
  clientId: 'dev-app',
  method: 'GET',
  path: '/booking/v1/reservations',
} as const;
const steps: Step[] = [
  { what: 'Live client bursts 250 requests at once', request: live, count: 250, at: 0 },
  { what: 'one second later, 150 more', request: live, count: 150, at: 1_000 },
  {
    what: 'Live client patches booking B1 21 times',
    request: { ...live, method: 'PATCH', path: '/booking/v1/bookings/B1' },
    count: 21,
    at: 5_000,
  },
  {
    what: '... and booking B2, which has its own counter',
    request: { ...live, method: 'PATCH', path: '/booking/v2/bookings/B2' },
    count: 2,
    at: 5_000,
  },
  { what: 'Development client sends 7 requests in one second', request: dev, count: 7, at: 10_000 },
  { what: 'it retries after the announced Retry-After', request: dev, count: 1, at: 11_000 },
];

const pad = (text: string, width: number) => text.padEnd(width);
for (const step of steps) {
  clock.set(start + step.at);
  console.log(`\nt=${(step.at / 1000).toFixed(3)}s  ${step.what}`);
  let run: { outcome: string; from: number; to: number } | undefined;
  const flush = () => {
    if (run === undefined) return;
    const range = run.from === run.to ? `#${run.from}` : `#${run.from}-${run.to}`;
    console.log(
      `  ${pad(`${step.request.method} ${step.request.path}`, 34)} ${pad(range, 10)} ${run.outcome}`,
    );
  };
  for (let i = 1; i <= step.count; i++) {
    const decision = limiter.check({ clientId: 'live-app', accountCode: 'ACME', ...step.request });
    const outcome = decision.allowed
      ? 'admitted'
      : `429  ${decision.policy?.name ?? decision.reason}  Retry-After: ${decision.retryAfterSeconds}`;
    // Requests end at once in this script, so the throttle's lease comes straight back.
    if (decision.allowed) decision.release();
    if (run?.outcome === outcome) run.to = i;
    else {
      flush();
      run = { outcome, from: i, to: i };
    }
  }
  flush();
}
console.log(
  '\nEvery refusal above counted nowhere, and each Retry-After is the earliest second at which',
);
console.log('the same request is admitted again if nothing else arrives.');
