/**
 * `npm run demo`: the reference service on 127.0.0.1, built from the library's public API. Two demo
 * clients (a Live and a Development account) are limited with the specification's presets; behind
 * the limits: webhook subscriptions (create, list by page number), a test event delivered, signed,
 * to every matching subscription, and the delivery log (listed by cursor). A receiver at
 * /demo/receiver verifies what it gets. In memory by default; REDIS_URL puts the limits and the
 * delivery queue on Redis. The service prints the curl lines to try. Ctrl+C stops it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import * as bullmq from 'bullmq';
import { Redis } from 'ioredis';
import { nodeRateLimit } from '../src/adapters/node.js';
import {
  type Clock,
  createLimiter,
  type Identity,
  presets,
  problemDetails,
  problemResponse,
  type ResponseParts,
  systemClock,
} from '../src/index.js';
import { ioredisClient, RedisStore } from '../src/redis/index.js';
import { type AuditLogEntry, createDemoWebhooks } from './service-webhooks.js';

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

function write(res: ServerResponse, parts: ResponseParts): void {
  res.writeHead(parts.status, parts.headers).end(parts.body);
}

const MAX_BODY = 64 * 1024;

/** The raw body, or undefined when it is larger than the demo takes. */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  let body = '';
  req.setEncoding('utf8');
  for await (const chunk of req) {
    body += String(chunk);
    if (body.length > MAX_BODY) return undefined;
  }
  return body;
}

/** The JSON body, or the problem response to send. */
async function readJson(
  req: IncomingMessage,
): Promise<{ ok: true; value: unknown } | { ok: false; reply: ResponseParts }> {
  const raw = await readBody(req);
  const refuse = (status: number, code: string, detail: string) => ({
    ok: false as const,
    reply: problemResponse(problemDetails({ code, title: 'Unreadable body', status, detail })),
  });
  if (raw === undefined) return refuse(413, 'body_too_large', `Send at most ${MAX_BODY} bytes.`);
  if (raw === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch {
    return refuse(400, 'invalid_json', 'The body must be JSON (content-type: application/json).');
  }
}

type Webhooks = ReturnType<typeof createDemoWebhooks>;

async function route(req: IncomingMessage, res: ServerResponse, webhooks: Webhooks): Promise<void> {
  const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'demo'}`);
  const path = url.pathname;
  const account = (clientOf(req) as Identity).accountCode;
  if (path === '/v1/subscriptions' && (req.method === 'POST' || req.method === 'GET')) {
    if (req.method === 'GET') return write(res, webhooks.list(url, account));
    const body = await readJson(req);
    return write(res, body.ok ? webhooks.create(body.value, account) : body.reply);
  }
  if (path === '/v1/audit-logs' && req.method === 'GET') {
    return write(res, webhooks.auditLogs(url, account));
  }
  if (path === '/v1/test-events' && req.method === 'POST') {
    const body = await readJson(req);
    return write(res, body.ok ? await webhooks.emit(body.value, account) : body.reply);
  }
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

/** How the demo runs. */
export interface DemoOptions {
  /** The port; 0 for any free one. @defaultValue 3000 */
  port?: number;
  /** The clock of the limits and the deliveries. */
  clock?: Clock;
  /** `redis://host:port`: limits and the delivery queue on Redis instead of in memory. */
  redisUrl?: string;
  /** Non-public addresses endpoints may use. @defaultValue the demo's own 127.0.0.1 and ::1 */
  allow?: readonly string[];
  /** Told of every delivery attempt, once the delivery log has it. */
  onDelivery?: (entry: AuditLogEntry) => void;
}

/**
 * Start the demo service.
 * @param options - port, clock, Redis, allow-list, delivery callback
 */
export async function startDemoService(options: DemoOptions = {}): Promise<DemoService> {
  const clock = options.clock ?? systemClock;
  // Two connections: the limits never queue a decision while disconnected (docs/redis.md); BullMQ
  // needs commands that wait (maxRetriesPerRequest: null).
  const limitsRedis =
    options.redisUrl === undefined
      ? undefined
      : new Redis(options.redisUrl, {
          enableOfflineQueue: false,
          autoResendUnfulfilledCommands: false,
          maxRetriesPerRequest: 0,
          lazyConnect: true,
        });
  const queueRedis =
    options.redisUrl === undefined
      ? undefined
      : new Redis(options.redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });
  await Promise.all([limitsRedis?.connect(), queueRedis?.connect()]);
  const limit = nodeRateLimit({
    limiter: createLimiter({
      preset: presets.byAccountType,
      clock,
      ...(limitsRedis === undefined
        ? {}
        : { store: new RedisStore({ client: ioredisClient(limitsRedis) }) }),
    }),
    identify: (req) => clientOf(req) as Identity,
    rateLimitHeaders: true,
    trackingIdOnAdmitted: true,
  });
  const webhooks = createDemoWebhooks({
    clock,
    allow: options.allow ?? ['127.0.0.1', '::1'],
    ...(queueRedis === undefined ? {} : { redis: { bullmq, connection: queueRedis } }),
    ...(options.onDelivery === undefined ? {} : { onDelivery: options.onDelivery }),
  });
  const fail = (res: ServerResponse) => (error: unknown) => {
    console.error(error);
    if (!res.headersSent) {
      write(
        res,
        problemResponse(problemDetails({ code: 'internal', title: 'Internal error', status: 500 })),
      );
    } else res.destroy();
  };
  const server = createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://demo').pathname === '/demo/receiver') {
      // The demo's own receiver stands for a subscriber's server: no API key, no limits.
      if (req.method === 'GET') return write(res, webhooks.received());
      readBody(req).then((raw) => write(res, webhooks.receive(raw ?? '', req.headers)), fail(res));
      return;
    }
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
    limit(req, res, () => {
      route(req, res, webhooks).catch(fail(res));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      });
      await webhooks.close();
      await Promise.all([limitsRedis?.quit(), queueRedis?.quit()]);
    },
  };
}

/**
 * The lines to try against a running demo.
 * @param url - the service's base URL
 */
export function curlLines(url: string): string {
  const live = `-H 'x-api-key: live-demo-key'`;
  const dev = `-H 'x-api-key: dev-demo-key'`;
  const codes = `curl -s -o /dev/null -w '%{http_code} ' `;
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
    'Webhooks: subscribe the demo receiver to every reservation event (the 201 shows the signing secret):',
    `  curl -i ${live} -H 'content-type: application/json' -d '{"endpointUrl":"${url}/demo/receiver","events":["reservation/*"]}' ${url}/v1/subscriptions`,
    '',
    'List subscriptions (page number and page size):',
    `  curl -i ${live} '${url}/v1/subscriptions?pageNumber=1&pageSize=20'`,
    '',
    'Emit a test event; it is delivered, signed, to every matching subscription:',
    `  curl -i ${live} -H 'content-type: application/json' -d '{"kind":"reservation/created","data":{"id":"R-1001"}}' ${url}/v1/test-events`,
    '',
    'What the receiver got (verified: true), and the delivery log (cursor and limit):',
    `  curl -s ${url}/demo/receiver; echo`,
    `  curl -i ${live} '${url}/v1/audit-logs?limit=50'`,
    '',
    'Press Ctrl+C to stop.',
  ].join('\n');
}

async function main(): Promise<void> {
  const port = process.env.PORT === undefined ? 3000 : Number(process.env.PORT);
  const redisUrl = process.env.REDIS_URL;
  const allow = process.env.WEBHOOK_ALLOW;
  const service = await startDemoService({
    port,
    ...(redisUrl === undefined || redisUrl === '' ? {} : { redisUrl }),
    ...(allow === undefined ? {} : { allow: allow.split(',').filter((a) => a !== '') }),
  });
  console.log(
    redisUrl === undefined || redisUrl === ''
      ? 'Limits and the delivery queue in memory (set REDIS_URL=redis://127.0.0.1:6379 for Redis).'
      : `Limits and the delivery queue on Redis at ${redisUrl}.`,
  );
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
