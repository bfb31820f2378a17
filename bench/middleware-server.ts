/**
 * One service of the middleware benchmark, run in its own process: a minimal node:http service
 * bare, bare but sending a tracking id header as the middleware does, with an exact limiter
 * written by hand into its handler (the floor), behind this library's node middleware (or the
 * baseline build's, `BENCH_BASELINE`), or on Express bare and with express-rate-limit. It
 * reports its port, and on request the time each request spent before reaching its handler (the
 * middleware's added latency), measured inside the service with the high-resolution clock.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLimiter, presets } from 'api-conventions';
import { type NodeRateLimitMiddleware, nodeRateLimit } from 'api-conventions/node';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { BASELINE, loadLibrary, loadNodeAdapter } from './builds.js';
import { handWrittenLive } from './limits-floor.js';
import { INTERLEAVED, interleaved, SLICE_MS, type Variant } from './middleware-variants.js';
import { type Handler, Turns } from './turns.js';

const variant = process.argv[2] as Variant | typeof INTERLEAVED;
const samples = new Float64Array(4_000_000);
let count = 0;
const record = (start: bigint): void => {
  samples[count++ % samples.length] = Number(process.hrtime.bigint() - start) / 1_000;
};
const started = new WeakMap<IncomingMessage, bigint>();

// The Live preset, with requests spread over 1,000 clients: each stays under its limits (3500 per minute), so
// every request takes the admitted path (a lease taken and given back), as most traffic does.
const limiter = createLimiter({ preset: presets.live });
const clients = Array.from({ length: 1_000 }, (_, i) => `client-${i}`);
let next = 0;
const identify = () => ({
  clientId: clients[next++ % clients.length] as string,
  accountCode: 'ACME',
});

function handler(variant: Variant): Handler {
  switch (variant) {
    case 'bare':
      return (_req, res) => {
        const start = process.hrtime.bigint();
        record(start);
        res.end('ok');
      };
    case 'bare-tracking-id':
      // What the middleware sends on an admitted response, without the middleware: the share of
      // its cost that is the tracking id's bytes on the wire and their parsing by the client.
      return (_req, res) => {
        const start = process.hrtime.bigint();
        record(start);
        res.setHeader('service-tracking-id', globalThis.crypto.randomUUID());
        res.end('ok');
      };
    case 'hand-written': {
      // The floor: the Live preset's global limits and throttle written by hand for this service
      // alone (limits-floor.ts), its lease given back when the response closes. No request
      // checks, no statuses, no reclamation, no tracking id: what an exact limiter cannot skip.
      const { decide, release } = handWrittenLive();
      const keys = clients.map((client) => `${client}:ACME`);
      return (_req, res) => {
        const start = process.hrtime.bigint();
        const key = keys[next++ % keys.length] as string;
        if (!decide(key)) {
          res.statusCode = 429;
          res.end('limited');
          return;
        }
        res.on('close', () => release(key));
        record(start);
        res.end('ok');
      };
    }
    case 'api-conventions':
    case 'api-conventions-tracking-id':
      return behind(
        nodeRateLimit({
          limiter,
          // By default the tracking id goes on 429s only; the second variant sends it on every response.
          trackingIdOnAdmitted: variant === 'api-conventions-tracking-id',
          identify,
        }),
      );
    case 'api-conventions-baseline':
      if (baseline === undefined) throw new Error('set BENCH_BASELINE to a build of the library');
      return behind(baseline);
    case 'express':
    case 'express-rate-limit': {
      const app = express();
      if (variant === 'express-rate-limit') {
        app.use(
          rateLimit({
            windowMs: 60_000,
            limit: 3_500,
            standardHeaders: 'draft-8',
            legacyHeaders: false,
            keyGenerator: () => `${clients[next++ % clients.length]}:ACME`,
          }),
        );
      }
      app.get('/booking/v1/reservations', (req, res) => {
        record(started.get(req) as bigint);
        res.end('ok');
      });
      return (req, res) => {
        started.set(req, process.hrtime.bigint());
        app(req, res);
      };
    }
  }
}

/** The bare handler behind one of the library's node middlewares. */
function behind(limit: NodeRateLimitMiddleware): Handler {
  // The memory store decides synchronously, so the handler runs inside limit(): it reads the
  // request's start and response from here rather than from a closure made per request.
  let start = 0n;
  let current: ServerResponse | undefined;
  const handle = () => {
    record(start);
    current?.end('ok');
  };
  return (req, res) => {
    start = process.hrtime.bigint();
    current = res;
    limit(req, res, handle);
  };
}

/** The baseline build's middleware with its own limiter, the same options as this build's. */
async function baselineMiddleware(dist: string): Promise<NodeRateLimitMiddleware> {
  const library = await loadLibrary(dist);
  const { nodeRateLimit: baselineRateLimit } = await loadNodeAdapter(dist);
  const own = library.createLimiter({ preset: library.presets.live });
  return baselineRateLimit({ limiter: own, trackingIdOnAdmitted: false, identify });
}

// Loaded only by the services that serve it, so that the others run as without a baseline.
const servesBaseline =
  variant === 'api-conventions-baseline' ||
  (variant === INTERLEAVED && interleaved.includes('api-conventions-baseline'));
const baseline =
  BASELINE === undefined || !servesBaseline ? undefined : await baselineMiddleware(BASELINE);

const taking =
  variant === INTERLEAVED ? new Turns(interleaved, interleaved.map(handler), SLICE_MS) : undefined;
const server = createServer(taking?.serve ?? handler(variant as Variant));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});

let cpu = process.cpuUsage();
process.on('message', (message: string) => {
  if (message === 'reset') {
    count = 0;
    taking?.reset();
    cpu = process.cpuUsage();
    process.send?.({ reset: true });
  } else if (message === 'stats') {
    const used = process.cpuUsage(cpu);
    const n = Math.min(count, samples.length);
    const sorted = samples.slice(0, n).sort();
    const at = (q: number) => sorted[Math.min(n - 1, Math.floor(q * n))] ?? 0;
    // CPU time of this process per request: steadier than rates on a machine shared with other work.
    const cpuUs = (used.user + used.system) / Math.max(1, count);
    process.send?.({ samples: n, p50: at(0.5), p99: at(0.99), cpuUs, turns: taking?.figures() });
  }
});
