/**
 * `npm run demo`: a running example service on 127.0.0.1. The node adapter limits two demo clients,
 * one on a Live account and one on a Development account, with the specification's presets; the
 * service prints the curl lines to try, and answers 429s when you burst. Ctrl+C stops it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { nodeRateLimit } from '../src/adapters/node.js';
import {
  type Clock,
  createLimiter,
  type Identity,
  presets,
  problemDetails,
  problemResponse,
} from '../src/index.js';

/** The two demo clients, by API key. Authentication is the service's own; this is the demo's. */
export const demoClients: Readonly<Record<string, Identity>> = {
  'live-demo-key': { clientId: 'demo-live-app', accountCode: 'LIVE-ACME', accountType: 'live' },
  'dev-demo-key': {
    clientId: 'demo-dev-app',
    accountCode: 'DEV-ACME',
    accountType: 'development',
  },
};

/** A started demo service. */
export interface DemoService {
  /** `http://127.0.0.1:port`. */
  readonly url: string;
  /** Stop serving and close every connection. */
  close(): Promise<void>;
}

const clientOf = (req: IncomingMessage): Identity | undefined => {
  const key = req.headers['x-api-key'];
  return typeof key === 'string' ? demoClients[key] : undefined;
};

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function route(req: IncomingMessage, res: ServerResponse): void {
  const path = new URL(req.url ?? '/', 'http://demo').pathname;
  if (req.method === 'GET' && /^\/booking\/v[^/]+\/reservations$/.test(path)) {
    json(res, 200, { items: [{ id: 'R-1001' }, { id: 'R-1002' }] });
  } else if (req.method === 'GET' && /^\/booking\/v[^/]+\/offers$/.test(path)) {
    json(res, 200, { items: [{ offer: 'double room', price: 120 }] });
  } else if (req.method === 'PATCH' && /^\/booking\/v[^/]+\/bookings\/[^/]+$/.test(path)) {
    json(res, 200, { id: path.split('/').at(-1), updated: true });
  } else {
    const parts = problemResponse(
      problemDetails({ code: 'not_found', title: 'Not found', status: 404, instance: path }),
    );
    res.writeHead(parts.status, parts.headers).end(parts.body);
  }
}

/**
 * Start the demo service.
 * @param options - port (0 for any free one) and clock
 */
export async function startDemoService(
  options: { port?: number; clock?: Clock } = {},
): Promise<DemoService> {
  const limit = nodeRateLimit({
    limiter: createLimiter({
      preset: presets.byAccountType,
      ...(options.clock === undefined ? {} : { clock: options.clock }),
    }),
    identify: (req) => clientOf(req) as Identity,
    rateLimitHeaders: true,
  });
  const server = createServer((req, res) => {
    if (clientOf(req) === undefined) {
      const parts = problemResponse(
        problemDetails({
          code: 'unauthenticated',
          title: 'Unknown API key',
          status: 401,
          detail: `Send x-api-key: ${Object.keys(demoClients).join(' or ')}.`,
        }),
      );
      res.writeHead(parts.status, parts.headers).end(parts.body);
      return;
    }
    limit(req, res, () => route(req, res));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/**
 * The lines to try against a running demo.
 * @param url - the service's base URL
 */
export function curlLines(url: string): string {
  const live = `-H 'x-api-key: live-demo-key'`;
  const dev = `-H 'x-api-key: dev-demo-key'`;
  const codes = `curl -s -o /dev/null -w '%{http_code} '`;
  return [
    `api-conventions demo service on ${url}`,
    '',
    'A Live client (200 per second, 100 per second on average, 3500 per minute, 20 in flight):',
    `  curl -i ${live} ${url}/booking/v1/reservations`,
    '',
    'A Development client (5 per second, 200 per minute): six calls in a second, the sixth is a 429:',
    `  for i in 1 2 3 4 5 6; do ${codes}${dev} ${url}/booking/v1/reservations; done; echo`,
    '',
    'Read the 429 (text body, Retry-After, Service-Tracking-Id, RateLimit fields):',
    `  for i in 1 2 3 4 5; do ${codes}${dev} ${url}/booking/v1/reservations; done; curl -i ${dev} ${url}/booking/v1/reservations`,
    '',
    'A per-resource limit (Development: 5 patches of one booking per 5 min; another booking counts apart):',
    `  for i in 1 2 3 4 5 6; do ${codes}-X PATCH ${dev} ${url}/booking/v1/bookings/B1; sleep 0.3; done; echo`,
    '',
    'Send your own tracking id; it comes back on the response:',
    `  curl -i ${live} -H 'Service-Tracking-Id: my-trace-42' ${url}/booking/v1/offers`,
    '',
    'Press Ctrl+C to stop.',
  ].join('\n');
}

async function main(): Promise<void> {
  const port = process.env.PORT === undefined ? 3000 : Number(process.env.PORT);
  const service = await startDemoService({ port });
  console.log(curlLines(service.url));
  const stop = (signal: string) => {
    console.log(`\n${signal}: stopping the demo service.`);
    service.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(
      `The demo service could not start: ${error instanceof Error ? error.message : String(error)}. Set PORT to a free port, e.g. PORT=3001 npm run demo.`,
    );
    process.exit(1);
  });
}
