/**
 * `npm run demo`: the reference service on 127.0.0.1, built from the library's public API. Two demo
 * clients (a Live and a Development account) are limited with the specification's presets; behind
 * the limits: webhook subscriptions (create, list by page number), a test event delivered, signed,
 * to every matching subscription, and the delivery log (listed by cursor). A receiver at
 * /demo/receiver verifies what it gets. In memory by default; REDIS_URL puts the limits and the
 * delivery queue on Redis. The service prints the curl lines to try. Ctrl+C stops it.
 */
import { createServer, type IncomingMessage, maxHeaderSize, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { pathToFileURL } from 'node:url';
import * as bullmq from 'bullmq';
import { Redis } from 'ioredis';
import { nodeRateLimit } from '../src/adapters/node.js';
import {
  type AccountType,
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
export const demoClients: Readonly<Record<string, Identity<AccountType>>> = {
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

const clientOf = (req: IncomingMessage): Identity<AccountType> | undefined => {
  const key = req.headers['x-api-key'];
  // Own keys only: `__proto__`, `constructor` or `toString` are no API keys.
  return typeof key === 'string' && Object.hasOwn(demoClients, key) ? demoClients[key] : undefined;
};

/**
 * The request target as a URL on the service's own origin, or undefined when it is not a path
 * (absolute-form, `*`). Neither the Host header nor a target starting with `//` can name another
 * host: the routes and the limits see the same path, and links point back to this service.
 */
function targetOf(req: IncomingMessage, origin: string): URL | undefined {
  const target = req.url ?? '';
  if (!target.startsWith('/')) return undefined;
  try {
    return new URL(`${origin}${target}`);
  } catch {
    return undefined;
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function write(res: ServerResponse, parts: ResponseParts): void {
  res.writeHead(parts.status, parts.headers).end(parts.body);
}

const problem = (status: number, code: string, title: string, detail: string): ResponseParts =>
  problemResponse(problemDetails({ code, title, status, detail }));

const MAX_BODY = 64 * 1024;
/** How long one request, headers and body, may take to arrive. */
const REQUEST_TIMEOUT_MS = 30_000;

/** The raw body, or undefined when it is larger than the demo takes (the connection then closes). */
async function readBody(req: IncomingMessage, res: ServerResponse): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) {
      // Stop reading: a body that never ends is not drained; the socket closes after the 413.
      res.shouldKeepAlive = false;
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The JSON body, or the problem response to send. */
async function readJson(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<{ ok: true; value: unknown } | { ok: false; reply: ResponseParts }> {
  const raw = await readBody(req, res);
  const refuse = (status: number, code: string, detail: string) => ({
    ok: false as const,
    reply: problem(status, code, 'Unreadable body', detail),
  });
  if (raw === undefined) return refuse(413, 'body_too_large', `Send at most ${MAX_BODY} bytes.`);
  // Any content-type is read as JSON: the demo is lenient there, strict about what the JSON says.
  if (raw === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch {
    return refuse(400, 'invalid_json', 'The body must be JSON (content-type: application/json).');
  }
}

type Webhooks = ReturnType<typeof createDemoWebhooks>;

/** The methods of a routed path, or undefined for a path the demo does not serve. */
function methodsOf(path: string): readonly string[] | undefined {
  if (path === '/v1/subscriptions') return ['GET', 'POST'];
  if (path === '/v1/audit-logs') return ['GET'];
  if (path === '/v1/test-events') return ['POST'];
  if (path === '/demo/receiver') return ['GET', 'POST'];
  if (/^\/booking\/v[^/]+\/(reservations|offers)$/.test(path)) return ['GET'];
  if (/^\/booking\/v[^/]+\/bookings\/[^/]+$/.test(path)) return ['PATCH'];
  return undefined;
}

/** 404 for a path the demo does not serve, 405 with Allow for a method it does not route there. */
function unrouted(res: ServerResponse, method: string, path: string): void {
  const methods = methodsOf(path);
  if (methods === undefined) {
    write(
      res,
      problemResponse(
        problemDetails({
          code: 'not_found',
          title: 'Not found',
          status: 404,
          instance: path,
          detail:
            'The demo serves /v1/subscriptions, /v1/test-events, /v1/audit-logs, /demo/receiver, /booking/v1/reservations, /booking/v1/offers and /booking/v1/bookings/{id}, with no trailing slash.',
        }),
      ),
    );
    return;
  }
  const parts = problem(
    405,
    'method_not_allowed',
    'Method not allowed',
    `${path} takes ${methods.join(' or ')}, not ${method}.`,
  );
  res
    .writeHead(parts.status, {
      ...parts.headers,
      allow: (methods.includes('GET') ? [...methods, 'HEAD'] : methods).join(', '),
    })
    .end(parts.body);
}

async function route(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  webhooks: Webhooks,
): Promise<void> {
  const path = url.pathname;
  const account = (clientOf(req) as Identity).accountCode;
  // HEAD is a GET without the body (node:http leaves the body out).
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  if (path === '/v1/subscriptions' && method === 'GET') {
    return write(res, webhooks.list(url, account));
  }
  if (path === '/v1/subscriptions' && method === 'POST') {
    const body = await readJson(req, res);
    return write(res, body.ok ? webhooks.create(body.value, account) : body.reply);
  }
  if (path === '/v1/audit-logs' && method === 'GET') {
    return write(res, webhooks.auditLogs(url, account));
  }
  if (path === '/v1/test-events' && method === 'POST') {
    const body = await readJson(req, res);
    return write(res, body.ok ? await webhooks.emit(body.value, account) : body.reply);
  }
  if (method === 'GET' && /^\/booking\/v[^/]+\/reservations$/.test(path)) {
    json(res, 200, { items: [{ id: 'R-1001' }, { id: 'R-1002' }] });
  } else if (method === 'GET' && /^\/booking\/v[^/]+\/offers$/.test(path)) {
    json(res, 200, { items: [{ offer: 'double room', price: 120 }] });
  } else if (method === 'PATCH' && /^\/booking\/v[^/]+\/bookings\/[^/]+$/.test(path)) {
    json(res, 200, { id: path.split('/').at(-1), updated: true });
  } else unrouted(res, req.method ?? '', path);
}

/**
 * The answer of node:http's parser errors, as problem details: a request line or headers that are
 * too long (431), a request that took too long (408), anything else it cannot parse (400).
 */
function clientError(error: Error & { code?: string }, socket: Duplex): void {
  // As node:http does: answer unless a response has begun (then there is nothing left to say).
  const started = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage?.headersSent;
  if (!socket.writable || started === true) {
    socket.destroy();
    return;
  }
  const [status, title, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          'Request header fields too large',
          `Send a request line and headers of at most ${maxHeaderSize} bytes in all.`,
        ]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [
            408,
            'Request timeout',
            'Send the whole request, headers and body, within the time the service gives it.',
          ]
        : [400, 'Bad request', 'Send a well-formed HTTP/1.1 request.'];
  const parts = problem(
    status,
    status === 400 ? 'bad_request' : status === 408 ? 'request_timeout' : 'headers_too_large',
    title,
    detail,
  );
  const head = Object.entries({
    ...parts.headers,
    'content-length': String(Buffer.byteLength(parts.body)),
    connection: 'close',
  })
    .map(([name, value]) => `${name}: ${value}`)
    .join('\r\n');
  socket.end(`HTTP/1.1 ${status} ${title}\r\n${head}\r\n\r\n${parts.body}`);
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
  /** Subscriptions an account may hold. @defaultValue 100 */
  maxSubscriptionsPerAccount?: number;
  /** Delivery log entries kept per account, the newest. @defaultValue 1000 */
  maxLogEntriesPerAccount?: number;
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
    // No key or an unknown one: limited as anonymous by remote address (the handler answers 401).
    identify: (req) => clientOf(req),
    rateLimitHeaders: true,
    trackingIdOnAdmitted: true,
  });
  const webhooks = createDemoWebhooks({
    clock,
    allow: options.allow ?? ['127.0.0.1', '::1'],
    ...(queueRedis === undefined ? {} : { redis: { bullmq, connection: queueRedis } }),
    ...(options.onDelivery === undefined ? {} : { onDelivery: options.onDelivery }),
    ...(options.maxSubscriptionsPerAccount === undefined
      ? {}
      : { maxSubscriptionsPerAccount: options.maxSubscriptionsPerAccount }),
    ...(options.maxLogEntriesPerAccount === undefined
      ? {}
      : { maxLogEntriesPerAccount: options.maxLogEntriesPerAccount }),
  });
  const fail = (req: IncomingMessage, res: ServerResponse) => (error: unknown) => {
    // A client that went away mid-body is no failure of the service: nothing to answer, nothing to log.
    if (req.destroyed && !req.complete) return;
    console.error(error);
    if (!res.headersSent) {
      write(
        res,
        problemResponse(problemDetails({ code: 'internal', title: 'Internal error', status: 500 })),
      );
    } else res.destroy();
  };
  let origin = 'http://127.0.0.1';
  const server = createServer((req, res) => {
    const url = targetOf(req, origin);
    if (url === undefined) {
      return write(
        res,
        problem(
          400,
          'invalid_request_target',
          'Invalid request target',
          'Send the request target as a path from this service, such as /v1/subscriptions; the demo is no proxy.',
        ),
      );
    }
    if (url.pathname === '/demo/receiver') {
      // The demo's own receiver stands for a subscriber's server: no API key, no limits.
      if (req.method === 'GET' || req.method === 'HEAD') return write(res, webhooks.received());
      if (req.method !== 'POST') return unrouted(res, req.method ?? '', url.pathname);
      readBody(req, res).then(
        (raw) =>
          write(
            res,
            raw === undefined
              ? problem(413, 'body_too_large', 'Body too large', `Send at most ${MAX_BODY} bytes.`)
              : webhooks.receive(raw, req.headers),
          ),
        fail(req, res),
      );
      return;
    }
    if (clientOf(req) === undefined) {
      return write(
        res,
        problem(
          401,
          'unauthenticated',
          'Unknown API key',
          `Send one x-api-key header: ${Object.keys(demoClients).join(' or ')}.`,
        ),
      );
    }
    limit(req, res, () => {
      route(req, res, url, webhooks).catch(fail(req, res));
    });
  });
  server.on('clientError', clientError);
  // A request, body included, that is not complete in time is answered 408 and its connection
  // closed: a body that never ends holds at most MAX_BODY bytes, and for this long.
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  origin = `http://127.0.0.1:${port}`;
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
