/**
 * `npm run demo`: the reference service on 127.0.0.1, wired from the library's public API. Two demo
 * clients (a Live and a Development account) are limited with the specification's presets. The
 * webhook API (subscriptions: create, list, read, change, delete, rotate the secret; the delivery
 * log and each subscription's attempts; replays of failed messages) is the library's
 * `createWebhookService`, mounted with `nodeFetchHandler`; its subscriptions, secrets, messages and
 * delivery log are kept in PostgreSQL: embedded (PGlite) under `.data/` by default (`DATA_DIR`), or
 * a server (`DATABASE_URL`). The demo adds test events, a receiver at /demo/receiver that verifies
 * what it gets, one at /demo/receiver/gone that answers 410 (its subscription is disabled, and the
 * demo prints it), and booking routes behind the same limits. An admin API behind its own key
 * (ADMIN_KEY) peeks at and resets a client's limits, raises or lowers them with overrides, and
 * serves /metrics (Prometheus text); it is counted by no client's limits. REDIS_URL puts the limits, the overrides and the delivery queue on Redis. It
 * prints the curl lines to try; Ctrl+C stops it.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import * as bullmq from 'bullmq';
import { Redis } from 'ioredis';
import { nodeFetchHandler, nodeRateLimit } from '../src/adapters/node.js';
import {
  type AccountType,
  type Clock,
  createLimiter,
  type DeliveryAttempt,
  type Identity,
  isConfigurationError,
  isSecretCipherError,
  MemoryOverrides,
  presets,
  problemDetails,
  problemResponse,
  systemClock,
  type WebhookServiceDisabled,
} from '../src/index.js';
import type { SecretKey } from '../src/postgres/index.js';
import { ioredisClient, RedisOverrides, RedisStore } from '../src/redis/index.js';
import { createDemoAdmin, DEFAULT_ADMIN_KEY, isAdminPath } from './service-admin.js';
import { curlLines } from './service-curl.js';
import {
  clientError,
  json,
  MAX_BODY,
  problem,
  readBody,
  readJson,
  targetOf,
  unrouted,
  write,
} from './service-http.js';
import { OWN_ADDRESSES } from './service-own-port.js';
import { readDemoSettings, startFailure, unreachable } from './service-settings.js';
import { openDemoStorage } from './service-storage.js';
import { createDemoWebhooks, type DemoWebhooks } from './service-webhooks.js';

export { curlLines };

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
  /** Where subscriptions, secrets and the delivery log are kept, for a reader. */
  readonly storage: string;
  /** How signing secrets are kept: `encrypted` with the keys given, else `plain`. */
  readonly secretsAtRest: 'encrypted' | 'plain';
  /** The node:http server (its timeouts, for a reader). */
  readonly server: Server;
  /** A portal link for an account: the page at `/portal`, its token in the fragment. */
  portalLink(accountCode: string, options?: { readOnly?: boolean }): DemoPortalLink;
  /** Stop serving, close every connection, the queue and the database. */
  close(): Promise<void>;
}

/** A portal link, as `POST /demo/portal-link` answers it. */
export interface DemoPortalLink {
  /** `http://127.0.0.1:port/portal#token=…`. */
  readonly url: string;
  /** When the token stops being accepted (ISO 8601). */
  readonly expiresAt: string;
  readonly readOnly: boolean;
}

/** The link of a portal token for an account, for an hour. */
function portalLink(
  webhooks: DemoWebhooks,
  origin: string,
  accountCode: string,
  readOnly: boolean,
): DemoPortalLink {
  const token = webhooks.service.portalToken({ accountCode, ttlSeconds: 3600, readOnly });
  return {
    url: `${origin}${token.url}`,
    expiresAt: new Date(token.expiresAt).toISOString(),
    readOnly,
  };
}

/** The demo client of an API key, own keys only (`__proto__` or `toString` are no API keys). */
const clientOfKey = (key: unknown): Identity<AccountType> | undefined =>
  typeof key === 'string' && Object.hasOwn(demoClients, key) ? demoClients[key] : undefined;

const clientOf = (req: IncomingMessage) => clientOfKey(req.headers['x-api-key']);

/** The 401 of a request without a demo API key. */
const unknownKey = () =>
  problem(
    401,
    'unauthenticated',
    'Unknown API key',
    `Send one x-api-key header: ${Object.keys(demoClients).join(' or ')}.`,
  );

/** The portal page's paths (the service serves them; the page's API requests carry its token). */
const isPortalPath = (path: string): boolean => path === '/portal' || path.startsWith('/portal/');

/** Whether a request carries a portal token, which the webhook service checks instead of a key. */
const hasPortalToken = (req: IncomingMessage): boolean =>
  req.headers.authorization?.startsWith('Bearer portal.') === true;

/** Paths the library's webhook service answers. */
const isWebhookApi = (path: string): boolean =>
  path === '/v1/subscriptions' ||
  path.startsWith('/v1/subscriptions/') ||
  path.startsWith('/v1/messages/') ||
  path === '/v1/audit-logs';

/**
 * How long one request, headers and body, may take to arrive; a slower one is answered 408 and its
 * connection closed. node checks every `connectionsCheckingInterval` (30 s by default, which made
 * it 30 to 60 s): once a second, a request still arriving is answered by 31 s.
 */
export const REQUEST_TIMEOUTS = Object.freeze({
  requestTimeout: 30_000,
  headersTimeout: 30_000,
  connectionsCheckingInterval: 1_000,
});

/** The demo's own routes, behind the limits. */
async function route(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  webhooks: DemoWebhooks,
): Promise<void> {
  const path = url.pathname;
  const account = (clientOf(req) as Identity).accountCode;
  // HEAD is a GET without the body (node:http leaves the body out).
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  if (path === '/demo/portal-link' && method === 'POST') {
    // What a platform does for its signed-in customer: a portal link for the account, for an hour.
    json(
      res,
      201,
      portalLink(webhooks, url.origin, account, url.searchParams.get('readOnly') === 'true'),
    );
    return;
  }
  if (path === '/v1/test-events' && method === 'POST') {
    const body = await readJson(req, res);
    const idempotencyKey = req.headers['idempotency-key'];
    return write(
      res,
      body.ok ? await webhooks.emit(body.value, account, idempotencyKey) : body.reply,
    );
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
 * The demo's receivers stand for subscribers' servers (no limits): /demo/receiver verifies and
 * keeps what it gets, each account's apart, and lists it to that account's API key (GET);
 * /demo/receiver/gone was taken down and answers 410.
 */
function serveReceiver(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  webhooks: DemoWebhooks,
  fail: (error: unknown) => void,
): void {
  const gone = path === '/demo/receiver/gone';
  if (!gone && (req.method === 'GET' || req.method === 'HEAD')) {
    const client = clientOf(req);
    write(res, client === undefined ? unknownKey() : webhooks.received(client.accountCode));
    return;
  }
  if (req.method !== 'POST') {
    unrouted(res, req.method ?? '', path);
    return;
  }
  readBody(req, res)
    .then((raw) => {
      if (raw === undefined) {
        return problem(413, 'body_too_large', 'Body too large', `Send at most ${MAX_BODY} bytes.`);
      }
      return gone ? webhooks.gone(req.headers) : webhooks.receive(raw, req.headers);
    })
    .then((parts) => write(res, parts), fail);
}

/**
 * Where the limiter finds the overrides the admin API sets: the one place the source is chosen.
 * In this process (MemoryOverrides) on embedded defaults; with REDIS_URL, in Redis
 * (RedisOverrides), so that an override set on one instance applies on every one within a
 * second. An override may name any of the service's presets by account type
 * (`{"preset": "live"}`); its expiry is read on the service's clock.
 */
async function overridesSource(
  clock: Clock,
  redis: Redis | undefined,
): Promise<MemoryOverrides | RedisOverrides> {
  if (redis === undefined) return new MemoryOverrides({ presets: presets.byAccountType, clock });
  const overrides = new RedisOverrides({
    client: ioredisClient(redis),
    presets: presets.byAccountType,
    clock,
  });
  await overrides.ready();
  return overrides;
}

/** How the demo runs. */
export interface DemoOptions {
  /** The port; 0 for any free one. @defaultValue 3000 */
  port?: number;
  /** The clock of the limits and the deliveries. */
  clock?: Clock;
  /** The folder of the embedded PostgreSQL, created if missing. @defaultValue `.data` */
  dataDir?: string;
  /** `postgres://...`: keep the data on this PostgreSQL server instead of in `dataDir`. */
  databaseUrl?: string;
  /** Keys that encrypt signing secrets at rest, newest first; without them they are kept plain. */
  secretKeys?: readonly SecretKey[];
  /** `redis://host:port`: limits and the delivery queue on Redis instead of in memory. */
  redisUrl?: string;
  /**
   * Non-public addresses and ranges endpoints may use, on any port.
   * @defaultValue the demo's own 127.0.0.1 and ::1, on its own port only
   */
  allow?: readonly string[];
  /** Signs the delivery log's cursors (at least 32 bytes). @defaultValue a random key */
  cursorKey?: string;
  /** Told of every delivery attempt, once the delivery log has it. */
  onDelivery?: (attempt: DeliveryAttempt) => void;
  /** Told of every subscription the service disabled (a 410, or an endpoint failing for days). */
  onDisabled?: (event: WebhookServiceDisabled) => void;
  /** Subscriptions an account may hold (each is a delivery per test event). @defaultValue 100 */
  maxSubscriptionsPerAccount?: number;
  /** Told once at start when secrets are stored unencrypted. @defaultValue `console.warn` */
  onWarning?: (message: string) => void;
  /**
   * Told of every failure the service survived, signing secrets the keys cannot read among them.
   * @defaultValue one line on `console.error`
   */
  onError?: (error: unknown) => void;
  /** The key of the admin API and /metrics, sent as `x-admin-key`. @defaultValue `admin-demo-key` */
  adminKey?: string;
}

/**
 * Start the demo service.
 * @param options - port, clock, storage, Redis, allow-list, delivery callback
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
  const closeRedis = async () => {
    await Promise.all([limitsRedis?.quit(), queueRedis?.quit()]);
  };
  // The socket's own error says why ("connect ECONNREFUSED"); connect() rejects with less.
  let connectError: unknown;
  const remember = (error: unknown) => {
    connectError ??= error;
  };
  limitsRedis?.on('error', remember);
  queueRedis?.on('error', remember);
  await Promise.all([limitsRedis?.connect(), queueRedis?.connect()]).catch((error: unknown) => {
    limitsRedis?.disconnect();
    queueRedis?.disconnect();
    unreachable('REDIS_URL', options.redisUrl ?? '', REDIS_INSTEAD)(connectError ?? error);
  });
  limitsRedis?.off('error', remember);
  queueRedis?.off('error', remember);
  const storage = await openDemoStorage(options).catch(async (error: unknown) => {
    await closeRedis();
    // A bad key is the keys' error; anything else on a server is the server's.
    if (options.databaseUrl !== undefined && !isConfigurationError(error)) {
      unreachable('DATABASE_URL', options.databaseUrl, DATABASE_INSTEAD)(error);
    }
    throw error;
  });
  const overrides = await overridesSource(clock, limitsRedis).catch(async (error: unknown) => {
    await storage.close();
    await closeRedis();
    throw error;
  });
  // One limiter for everything: the webhook API counts a request in the service's own gate, the
  // demo's routes in nodeRateLimit; no request passes both.
  const limiter = createLimiter({
    preset: presets.byAccountType,
    clock,
    overrides,
    ...(limitsRedis === undefined
      ? {}
      : { store: new RedisStore({ client: ioredisClient(limitsRedis) }) }),
  });
  const limit = nodeRateLimit({
    limiter,
    identify: (req) => clientOf(req),
    rateLimitHeaders: true,
    trackingIdOnAdmitted: true,
  });
  let ownPort = options.port ?? 3000;
  const webhooks = createDemoWebhooks({
    repository: storage.repository,
    identify: (request) => clientOfKey(request.headers.get('x-api-key')),
    limiter,
    clock,
    allow: options.allow ?? OWN_ADDRESSES,
    // Without an allow-list of the operator's, the demo's addresses hold on its own port only.
    ownPort: options.allow === undefined ? () => ownPort : undefined,
    accounts: Object.values(demoClients).map((client) => client.accountCode),
    cursorKey: options.cursorKey,
    portalKey: randomBytes(32),
    redis: queueRedis === undefined ? undefined : { bullmq, connection: queueRedis },
    onDelivery: options.onDelivery,
    onDisabled: options.onDisabled,
    maxSubscriptionsPerAccount: options.maxSubscriptionsPerAccount ?? 100,
    onWarning: options.onWarning,
    onError: options.onError,
  });
  const admin = createDemoAdmin({
    limiter,
    adminKey: options.adminKey ?? DEFAULT_ADMIN_KEY,
    clients: demoClients,
    overrides,
    clock,
  });
  const closeAll = async () => {
    if (overrides instanceof RedisOverrides) await overrides.close();
    await admin.close();
    await webhooks.close();
    await storage.close();
    await closeRedis();
  };
  try {
    await webhooks.service.start(); // load the index; warns once when secrets are stored plain
  } catch (error) {
    await closeAll();
    throw error;
  }
  let serveWebhookApi = nodeFetchHandler(webhooks.api);
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
  // A request, body included, that is not complete in time is answered 408 and its connection
  // closed: a body that never ends holds at most MAX_BODY bytes, and for this long.
  const server = createServer({ ...REQUEST_TIMEOUTS }, (req, res) => {
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
    if (url.pathname === '/demo/receiver' || url.pathname === '/demo/receiver/gone') {
      return serveReceiver(req, res, url.pathname, webhooks, fail(req, res));
    }
    // The admin API: its own key, and no client's limits count it.
    if (isAdminPath(url.pathname)) {
      return void admin.serve(req, res, url).then((parts) => write(res, parts), fail(req, res));
    }
    // The portal page and the OpenAPI document are public; a portal token is the service's to check.
    if (isPortalPath(url.pathname) || url.pathname === '/v1/openapi.json') {
      return void serveWebhookApi(req, res);
    }
    if (isWebhookApi(url.pathname) && hasPortalToken(req)) return void serveWebhookApi(req, res);
    if (clientOf(req) === undefined) return write(res, unknownKey());
    // The library's webhook API, behind the limits of its own gate.
    if (isWebhookApi(url.pathname)) return void serveWebhookApi(req, res);
    limit(req, res, () => {
      route(req, res, url, webhooks).catch(fail(req, res));
    });
  });
  server.on('clientError', clientError);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 3000, '127.0.0.1', resolve);
    });
  } catch (error) {
    await closeAll();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  ownPort = port;
  origin = `http://127.0.0.1:${port}`;
  // Links and locations name this service, whatever the Host header says.
  serveWebhookApi = nodeFetchHandler(webhooks.api, { origin });
  return {
    url: origin,
    storage: storage.where,
    secretsAtRest: storage.repository.secretsAtRest,
    server,
    portalLink: (accountCode, linkOptions) =>
      portalLink(webhooks, origin, accountCode, linkOptions?.readOnly === true),
    close: async () => {
      await new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      });
      await closeAll();
    },
  };
}

const REDIS_INSTEAD = 'unset REDIS_URL to keep the limits and the delivery queue in memory';
const DATABASE_INSTEAD = 'unset DATABASE_URL to keep the data under .data/ (DATA_DIR)';

async function main(): Promise<void> {
  // Every setting read and checked once, before anything starts.
  const settings = readDemoSettings(process.env);
  if (!settings.ok) {
    console.error(settings.line);
    process.exit(1);
  }
  const { redisUrl, databaseUrl, adminKey } = settings.options;
  const service = await startDemoService({
    ...settings.options,
    onWarning: (message) =>
      console.warn(
        `${message} In the demo: WEBHOOK_SECRET_KEYS=demo-1:$(openssl rand -base64 32) npm run demo (keep the key: secrets stored with it need it).`,
      ),
    onError: (error) => {
      if (!isSecretCipherError(error)) return console.error('demo service:', error);
      console.error(
        `demo service: ${error.message} Start the demo with the WEBHOOK_SECRET_KEYS the secrets were stored with (id:base64key pairs, newest first), or rotate the subscription's secret.`,
      );
    },
  });
  console.log(
    `Subscriptions, signing secrets, the delivery log and pending deliveries: ${service.storage}; a restart keeps them.${
      databaseUrl === undefined
        ? ' DATA_DIR picks another folder, DATABASE_URL=postgres://... a PostgreSQL server.'
        : ''
    }`,
  );
  if (service.secretsAtRest === 'encrypted') {
    console.log('Signing secrets encrypted at rest with AES-256-GCM (WEBHOOK_SECRET_KEYS).');
  }
  console.log(
    redisUrl === undefined
      ? 'Limits and the delivery queue in memory (set REDIS_URL=redis://127.0.0.1:6379 for Redis).'
      : `Limits and the delivery queue on Redis at ${redisUrl}.`,
  );
  console.log(curlLines(service.url, { adminKeyFromEnv: adminKey !== undefined }));
  const portal = service.portalLink(demoClients['live-demo-key']?.accountCode ?? 'LIVE-ACME');
  console.log(
    `\nThe subscription portal of the Live demo account, until ${portal.expiresAt} (open it in a browser):\n  ${portal.url}`,
  );
  const stop = (signal: string) => {
    console.log(`\n${signal}: stopping the demo service.`);
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(startFailure(error));
    process.exit(1);
  });
}
