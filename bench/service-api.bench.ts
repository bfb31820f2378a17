/**
 * The webhook service's own API on its embedded default, under 64 connections: the service
 * (`createWebhookService` on `PostgresSubscriptionRepository` over PGlite, on a fresh data folder
 * and in memory) in a process of its own (service-api-server.ts), served over HTTP by the node
 * adapter, loaded with autocannon from this process. After seeding (64 accounts, 50 subscriptions
 * each, through the service), each route in turn for a few seconds after a short warm-up: GET a
 * list page, GET one subscription, POST a new one (unique bodies), PATCH the events of an existing
 * one, the accounts and subscriptions taken in turn. Per route: requests per second, p50, p90 and
 * p99 of autocannon's latencies, against the specification's typical response times (p50 under
 * 150 ms, p90 under 500 ms). Every answer must be 2xx.
 *
 * `SERVICE_API_BENCH_PROFILE=<folder>` runs the service with `--cpu-prof` into that folder (one
 * profile per database, written when the service stops, with `phases-<pid>.json` beside it: when
 * each measured load started and ended, on the profile's clock);
 * `SERVICE_API_BENCH_PHASES=create,patch` runs only those routes,
 * `SERVICE_API_BENCH_DATABASES=folder` only that database, `SERVICE_API_BENCH_SECONDS` sets the
 * seconds of each load; `SERVICE_API_BENCH_TRY=analyze,no-watch` tries changes of setup (see
 * service-api-server.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type autocannon from 'autocannon';
import { ask, load, PINNED, startService } from './service-process.js';
import { round } from './support.js';

type Database = 'folder' | 'memory';
type Route = 'list' | 'get' | 'create' | 'patch';

const ROUTES: readonly Route[] = ['list', 'get', 'create', 'patch'];
const DATABASES = (process.env.SERVICE_API_BENCH_DATABASES?.split(',') ?? [
  'folder',
  'memory',
]) as Database[];
const PHASES = (process.env.SERVICE_API_BENCH_PHASES?.split(',') ?? ROUTES) as Route[];
const SECONDS = Number(process.env.SERVICE_API_BENCH_SECONDS ?? 5);
const WARM_UP_SECONDS = 1;
const CONNECTIONS = 64;
const ACCOUNTS = 64;
const PER_ACCOUNT = 50;
const PAGE_SIZE = 20;
const PROFILE = process.env.SERVICE_API_BENCH_PROFILE;
/** Changes of setup to try against the default (service-api-server.ts): `analyze`, `no-watch`. */
const TRY = process.env.SERVICE_API_BENCH_TRY ?? '';

/** The specification's typical response times: over 50% under 150 ms, over 90% under 500 ms. */
const TARGET = { p50Ms: 150, p90Ms: 500 };

const LABEL: Record<Database, string> = {
  folder: 'PGlite on a data folder',
  memory: 'PGlite in memory',
};

/** The database's name in the log, with the changes of setup tried. */
const labelOf = (database: Database): string =>
  TRY === '' ? LABEL[database] : `${LABEL[database]} (${TRY})`;

/** One route's figures under one database. */
interface RouteFigures {
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Answers by status code. */
  statuses: Record<string, number>;
  non2xx: number;
  errors: number;
  timeouts: number;
  met: boolean;
  /** The same load as the service saw it (service-api-server.ts). */
  inService?: InService;
}

/** A load as the service saw it: from each request's arrival to the end of its answer. */
interface InService {
  answered: number;
  /** The service process's CPU time over the load, per answer. */
  cpuMsPerAnswer: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  statementsPerAnswer: Record<string, number>;
  eventLoopDelayMaxMs: number;
  /** On each connection, from the end of an answer to the next request's arrival. */
  betweenRequests: { p50Ms: number; p99Ms: number; maxMs: number };
  /** Connections accepted and closed during the load (the load before closes its own). */
  connectionsAccepted: number;
  connectionsClosed: number;
  /** When the last connection of the load was accepted, in ms after its start. */
  connectionsAcceptedByMs: number;
  /** The connections' first requests: how many, and when the last of them arrived. */
  firstRequests: number;
  firstRequestLatestMs: number;
}

/** A route's line of the summary. */
type RouteSummary = Pick<RouteFigures, 'requestsPerSecond' | 'p50Ms' | 'p90Ms' | 'p99Ms' | 'met'>;

/** A subscription of the seeding: its account and id. */
interface Seeded {
  readonly account: string;
  readonly id: string;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

/** The requests of a route, each built when sent: accounts and subscriptions in turn. */
function requestsOf(route: Route, seeded: readonly Seeded[], run: string): autocannon.Request[] {
  let n = 0;
  const account = (i: number) => `acct-${i % ACCOUNTS}`;
  const pages = Math.ceil(PER_ACCOUNT / PAGE_SIZE);
  const build: (i: number) => autocannon.Request = {
    list: (i: number): autocannon.Request => ({
      method: 'GET',
      path: `/v1/subscriptions?pageNumber=${1 + (Math.floor(i / ACCOUNTS) % pages)}&pageSize=${PAGE_SIZE}`,
      headers: { 'x-account': account(i) },
    }),
    get: (i: number): autocannon.Request => {
      const s = seeded[i % seeded.length] as Seeded;
      return {
        method: 'GET',
        path: `/v1/subscriptions/${encodeURIComponent(s.id)}`,
        headers: { 'x-account': s.account },
      };
    },
    create: (i: number): autocannon.Request => ({
      method: 'POST',
      path: '/v1/subscriptions',
      headers: { ...JSON_HEADERS, 'x-account': account(i) },
      body: JSON.stringify({
        endpointUrl: `https://hooks.example.com/${run}/${i}`,
        events: [`t${i % 50}/e${i % 20}`, `t${(i + 3) % 50}/*`],
      }),
    }),
    patch: (i: number): autocannon.Request => {
      const s = seeded[i % seeded.length] as Seeded;
      return {
        method: 'PATCH',
        path: `/v1/subscriptions/${encodeURIComponent(s.id)}`,
        headers: { ...JSON_HEADERS, 'x-account': s.account },
        body: JSON.stringify({ events: [`t${i % 50}/e${(i >> 6) % 20}`] }),
      };
    },
  }[route];
  // autocannon hands in the request with its defaults (host, port): keep them.
  return [
    {
      setupRequest: (request) => {
        const built = build(n++);
        return { ...request, ...built, headers: { ...request.headers, ...built.headers } };
      },
    },
  ];
}

/** The seeded subscriptions, the accounts interleaved (every account in each run of 64). */
function interleave(ids: Record<string, string[]>): Seeded[] {
  const lists = Object.entries(ids);
  const out: Seeded[] = [];
  for (let k = 0; k < PER_ACCOUNT; k++) {
    for (const [account, list] of lists) {
      const id = list[k];
      if (id !== undefined) out.push({ account, id });
    }
  }
  return out;
}

function figuresOf(result: autocannon.Result): RouteFigures {
  const statuses: Record<string, number> = {};
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) {
    statuses[code] = stats.count ?? 0;
  }
  const { p50, p90, p99, max } = result.latency;
  return {
    requests: result.requests.total,
    requestsPerSecond: Math.round(result.requests.total / result.duration),
    p50Ms: p50,
    p90Ms: p90,
    p99Ms: p99,
    maxMs: max,
    statuses,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    met: p50 < TARGET.p50Ms && p90 < TARGET.p90Ms,
  };
}

/**
 * Wait until the service has answered what a load left in flight: autocannon closes its
 * connections at the end, but the service still runs their requests, one database statement after
 * another; a request sent now waits behind them. Else the next load's first requests would.
 */
async function drain(url: string): Promise<void> {
  const response = await fetch(`${url}/v1/subscriptions?pageSize=1`, {
    headers: { 'x-account': 'acct-0' },
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`service-api: drain answered ${response.status}`);
}

/** Stop the service (it closes the database, removes the data folder) and wait until it exits. */
async function stop(child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit');
  child.send('stop');
  await exited;
}

/** Every route on one database, in one service process. */
async function measure(database: Database): Promise<Record<string, unknown>> {
  const nodeArgs = PROFILE === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`];
  const child = startService('service-api-server.ts', [database, String(ACCOUNTS), TRY], nodeArgs);
  try {
    const { port } = await ask<{ port: number }>(child, '', 'port');
    child.send({ seed: PER_ACCOUNT });
    const { seeded, ms } = await ask<{ seeded: Record<string, string[]>; ms: number }>(
      child,
      '',
      'seeded',
    );
    const subscriptions = interleave(seeded);
    console.error(
      `${labelOf(database)}: seeded ${subscriptions.length} subscriptions over ${ACCOUNTS} accounts in ${round(ms / 1000)} s`,
    );
    const url = `http://127.0.0.1:${port}`;
    const routes: Record<string, RouteFigures> = {};
    for (const route of PHASES) {
      const options = (run: string) => ({
        connections: CONNECTIONS,
        headers: {},
        requests: requestsOf(route, subscriptions, run),
      });
      const warm = await load(url, WARM_UP_SECONDS, options('warm-up'));
      await drain(url);
      // Marked before the load's connections are made, so that the service counts them all.
      child.send({ phase: route, edge: 'start' });
      await ask(child, '', 'started');
      const f = figuresOf(await load(url, SECONDS, options('measured')));
      child.send({ phase: route, edge: 'end' });
      const { inService } = await ask<{ inService: InService }>(child, '', 'inService');
      f.inService = inService;
      f.non2xx += warm.non2xx;
      routes[route] = f;
      console.error(
        `${labelOf(database)}, ${route}: ${f.requestsPerSecond.toLocaleString('en')} req/s, p50 ${f.p50Ms} ms, p90 ${f.p90Ms} ms, p99 ${f.p99Ms} ms, max ${f.maxMs} ms; statuses ${JSON.stringify(f.statuses)}${f.errors + f.timeouts > 0 ? `, ${f.errors} errors, ${f.timeouts} timeouts` : ''}; ${f.met ? 'met' : 'MISSED'}`,
      );
      const seen = f.inService;
      if (seen !== undefined) {
        console.error(
          `  in the service: ${seen.cpuMsPerAnswer} ms of CPU per answer; p50 ${seen.p50Ms} ms, p90 ${seen.p90Ms} ms, p99 ${seen.p99Ms} ms, max ${seen.maxMs} ms; from an answer to the next request on its connection p50 ${seen.betweenRequests.p50Ms} ms, p99 ${seen.betweenRequests.p99Ms} ms, max ${seen.betweenRequests.maxMs} ms; ${seen.connectionsAccepted} connections accepted, ${seen.connectionsClosed} closed, the last by ${seen.connectionsAcceptedByMs} ms, the last of ${seen.firstRequests} first requests came at ${seen.firstRequestLatestMs} ms; event loop delay up to ${seen.eventLoopDelayMaxMs} ms; statements per answer ${JSON.stringify(seen.statementsPerAnswer)}`,
        );
      }
    }
    return { seededSubscriptions: subscriptions.length, seedSeconds: round(ms / 1000), routes };
  } finally {
    if (child.exitCode === null && child.signalCode === null) await stop(child);
  }
}

export async function run(): Promise<Record<string, unknown>> {
  const results: Record<string, Record<string, unknown>> = {};
  const summary: Record<string, Record<string, RouteSummary>> = {};
  const failures: string[] = [];
  for (const database of DATABASES) {
    const measured = await measure(database);
    results[database] = measured;
    const routes = measured.routes as Record<string, RouteFigures>;
    summary[database] = Object.fromEntries(
      Object.entries(routes).map(([route, f]) => [
        route,
        {
          requestsPerSecond: f.requestsPerSecond,
          p50Ms: f.p50Ms,
          p90Ms: f.p90Ms,
          p99Ms: f.p99Ms,
          met: f.met,
        },
      ]),
    );
    for (const [route, f] of Object.entries(routes)) {
      if (f.non2xx + f.errors + f.timeouts > 0) {
        failures.push(
          `${labelOf(database)}, ${route}: ${f.non2xx} non-2xx, ${f.errors} errors, ${f.timeouts} timeouts`,
        );
      }
    }
  }
  console.error(
    `\nTargets: p50 < ${TARGET.p50Ms} ms and p90 < ${TARGET.p90Ms} ms per route, ${CONNECTIONS} connections`,
  );
  for (const [database, routes] of Object.entries(summary)) {
    for (const [route, s] of Object.entries(routes)) {
      console.error(
        `  ${labelOf(database as Database).padEnd(24)} ${route.padEnd(7)} ${String(s.requestsPerSecond).padStart(6)} req/s  p50 ${String(s.p50Ms).padStart(5)} ms  p90 ${String(s.p90Ms).padStart(5)} ms  p99 ${String(s.p99Ms).padStart(5)} ms  ${s.met ? 'met' : 'MISSED'}`,
      );
    }
  }
  if (failures.length > 0) {
    console.error(`Answers other than 2xx:\n  ${failures.join('\n  ')}`);
    throw new Error(`service-api: answers other than 2xx (${failures.join('; ')})`);
  }
  return {
    pinned: PINNED,
    tried: TRY,
    connections: CONNECTIONS,
    accounts: ACCOUNTS,
    secondsPerRoute: SECONDS,
    target: TARGET,
    summary,
    ...results,
  };
}
