/**
 * The demo's admin API, behind its own key and outside the clients' limits: peek at and reset a
 * client's limits (`/admin/limits/{clientId}/{accountCode}`), raise or lower them with an override
 * (`/admin/overrides/{clientId}`, in service-overrides.ts), and `/metrics`, the library's
 * OpenTelemetry metrics in the Prometheus text format.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  type AccountType,
  type Clock,
  type Decision,
  type Identity,
  isInvalidRequestError,
  type LimitRequest,
  type ResetOutcome,
  type ResetRequest,
  type ResponseParts,
} from '../src/index.js';
import { registerMetrics } from '../src/otel/index.js';
import { RedisStoreError } from '../src/redis/index.js';
import { jsonParts as json, notAllowed, problem } from './service-http.js';
import { type AdminOverrideSource, OVERRIDES_PATH, overrideRoutes } from './service-overrides.js';

/** The admin key when none is configured (ADMIN_KEY). */
export const DEFAULT_ADMIN_KEY = 'admin-demo-key';

/** The request a peek asks about when the query names none. */
export const PEEK_DEFAULT = Object.freeze({ method: 'GET', path: '/v1/subscriptions' });

/** What `/metrics` answers with: the Prometheus text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** The limiter's verbs the admin API uses; the memory store answers at once, Redis in a promise. */
export interface AdminLimiter {
  peek(request: LimitRequest<AccountType>): Decision | Promise<Decision>;
  reset(scope: ResetRequest<AccountType>): ResetOutcome | Promise<ResetOutcome>;
}

/** How the admin API runs. */
export interface DemoAdminOptions {
  /** The demo's one limiter. */
  limiter: AdminLimiter;
  /** The key admin requests carry in `x-admin-key` (or `authorization: Bearer`). */
  adminKey: string;
  /** The demo's clients: a peek of one of them uses its account type. */
  clients: Readonly<Record<string, Identity<AccountType>>>;
  /** Where the limiter finds its overrides: the admin API sets, reads and removes them there. */
  overrides: AdminOverrideSource;
  /** The service's clock: an override's `ttlSeconds` counts from it. */
  clock: Clock;
}

/** The admin API: its paths, its handler, and the metrics it keeps. */
export interface DemoAdmin {
  /** Answer an admin request (see {@link isAdminPath}); `res` only closes after a body too large. */
  serve(req: IncomingMessage, res: ServerResponse, url: URL): Promise<ResponseParts>;
  /** Stop recording metrics. */
  close(): Promise<void>;
}

/** Paths the admin API answers: never counted by the clients' limits. */
export const isAdminPath = (path: string): boolean => /^\/(admin|metrics)(\/|$)/.test(path);

const ACCOUNT_TYPES: readonly string[] = ['live', 'development', 'trial'];
// The limiter's own default for a request that names no account type: the strictest.
const DEFAULT_ACCOUNT_TYPE: AccountType = 'development';
const LIMITS_PATH = /^\/admin\/limits\/([^/]*)\/([^/]*)$/;
const ADMIN_PATHS =
  'GET or DELETE /admin/limits/{clientId}/{accountCode}, GET, PUT or DELETE /admin/overrides/{clientId}, and GET /metrics';

/** Make the admin API; it records the library's metrics from now until `close`. */
export function createDemoAdmin(options: DemoAdminOptions): DemoAdmin {
  const { limiter, clients } = options;
  const keyDigest = digest(options.adminKey);
  const metrics = prometheusMetrics();
  const overrides = overrideRoutes({ source: options.overrides, clock: options.clock });

  const authorized = (req: IncomingMessage): boolean => {
    const header = req.headers['x-admin-key'];
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const given = typeof header === 'string' ? header : bearer;
    // Compared as digests of equal length, in constant time: the key is not guessed byte by byte.
    return given !== undefined && timingSafeEqual(digest(given), keyDigest);
  };

  const accountTypeOf = (clientId: string, accountCode: string): AccountType | undefined =>
    Object.values(clients).find((c) => c.clientId === clientId && c.accountCode === accountCode)
      ?.accountType;

  const limits = async (method: string, ids: Ids, query: Query): Promise<ResponseParts> => {
    const accountType =
      (query.accountType as AccountType | undefined) ??
      accountTypeOf(ids.clientId, ids.accountCode) ??
      DEFAULT_ACCOUNT_TYPE;
    if (method === 'DELETE') {
      const { cleared } = await limiter.reset({ ...ids, accountType, ...resourceOf(query) });
      return json(200, { ...ids, cleared });
    }
    const request = {
      method: query.method ?? PEEK_DEFAULT.method,
      path: query.path ?? PEEK_DEFAULT.path,
    };
    const decision = await limiter.peek({ ...ids, accountType, ...request });
    return json(200, { ...ids, accountType, request, ...peekBody(decision) });
  };

  return {
    async serve(req, res, url) {
      if (!authorized(req)) {
        return problem(
          401,
          'unauthenticated',
          'Admin key required',
          'Send the admin key (ADMIN_KEY when the service was started with it) in an x-admin-key header, or as authorization: Bearer <key>.',
        );
      }
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? '');
      const path = url.pathname;
      if (path === '/metrics') {
        if (method !== 'GET') return notAllowed(path, ['GET'], method);
        return {
          status: 200,
          headers: { 'content-type': PROMETHEUS_CONTENT_TYPE, 'cache-control': 'no-store' },
          body: await metrics.text(),
        };
      }
      const override = OVERRIDES_PATH.exec(path);
      if (override !== null) {
        return overrides.serve({ req, res, url, method, rawClientId: override[1] ?? '' });
      }
      const match = LIMITS_PATH.exec(path);
      if (match === null) {
        return problem(404, 'not_found', 'Not found', `The admin API serves ${ADMIN_PATHS}.`);
      }
      if (method !== 'GET' && method !== 'DELETE') {
        return notAllowed(path, ['GET', 'DELETE'], method);
      }
      const ids = idsOf(match[1] ?? '', match[2] ?? '');
      const query = queryOf(url, PARAMETERS);
      if (!ids.ok) return ids.reply;
      if (!query.ok) return query.reply;
      try {
        return await limits(method, ids.value, query.value);
      } catch (error) {
        if (isInvalidRequestError(error)) {
          return problem(400, error.code, 'Invalid limits request', error.message);
        }
        if (error instanceof RedisStoreError) {
          return problem(503, 'store_unavailable', 'Limits store unavailable', error.message);
        }
        throw error;
      }
    },
    close: () => metrics.close(),
  };
}

interface Ids {
  clientId: string;
  accountCode: string;
}

type Query = Partial<Record<'method' | 'path' | 'accountType', string>>;

type Read<T> = { ok: true; value: T } | { ok: false; reply: ResponseParts };

/** The query parameters of both verbs: the request to peek at, or the resource to reset. */
const PARAMETERS = ['method', 'path', 'accountType'] as const;

/** The longest client id and account code: the limiter's `maxIdLength`, which the demo leaves at 256. */
const MAX_ID_LENGTH = 256;

/** The ids of the path, percent-decoded, each 1 to 256 characters as the limiter takes them. */
function idsOf(rawClientId: string, rawAccountCode: string): Read<Ids> {
  const refuse = (code: string, title: string, detail: string): Read<Ids> => ({
    ok: false,
    reply: problem(400, code, title, detail),
  });
  let clientId: string;
  let accountCode: string;
  try {
    clientId = decodeURIComponent(rawClientId);
    accountCode = decodeURIComponent(rawAccountCode);
  } catch {
    return refuse(
      'invalid_path_encoding',
      'Invalid path',
      'Percent-encode the client id and account code as UTF-8 (%XX escapes of whole characters).',
    );
  }
  for (const [name, code, value] of [
    ['client id', 'invalid_client_id', clientId],
    ['account code', 'invalid_account_code', accountCode],
  ] as const) {
    if (value.length === 0 || value.length > MAX_ID_LENGTH) {
      return refuse(
        code,
        `Invalid ${name}`,
        `Name the ${name} in the path, 1 to ${MAX_ID_LENGTH} characters (percent-encoded), as in /admin/limits/demo-dev-app/DEV-ACME; got ${value.length} characters.`,
      );
    }
  }
  return { ok: true, value: { clientId, accountCode } };
}

/** The query: known parameters, each at most once; an account type the limiter has presets for. */
function queryOf(url: URL, known: readonly string[]): Read<Query> {
  const query: Query = {};
  const refuse = (code: string, detail: string): Read<Query> => ({
    ok: false,
    reply: problem(400, code, 'Invalid query', detail),
  });
  for (const name of new Set(url.searchParams.keys())) {
    if (!known.includes(name)) {
      return refuse(
        'unknown_parameter',
        `Unknown query parameter ${JSON.stringify(name)}; this route takes ${known.join(', ')}.`,
      );
    }
    const values = url.searchParams.getAll(name);
    if (values.length > 1) return refuse('repeated_parameter', `Send ${name} at most once.`);
    query[name as keyof Query] = values[0] as string;
  }
  if (query.accountType !== undefined && !ACCOUNT_TYPES.includes(query.accountType)) {
    return refuse(
      'invalid_account_type',
      `accountType must be one of ${ACCOUNT_TYPES.join(', ')}; leave it out for the demo client's own type (${DEFAULT_ACCOUNT_TYPE} for a client the demo does not know).`,
    );
  }
  return { ok: true, value: query };
}

/** The resource a reset clears: the one method and path name, or everything when both are absent. */
const resourceOf = (query: Query) =>
  query.method === undefined && query.path === undefined
    ? {}
    : { method: query.method, path: query.path };

/** A decision as JSON: what a request would get, and each policy's status. */
function peekBody(decision: Decision) {
  const statuses = decision.statuses.map((s) => ({
    policy: s.policy.name,
    remaining: s.remaining,
    resetAfterMs: s.resetAfterMs,
  }));
  if (decision.allowed) return { decision: { allowed: true }, statuses };
  const { retryAfterSeconds, policy, reason } = decision;
  return {
    decision: { allowed: false, retryAfterSeconds, policy: policy?.name, reason },
    statuses,
  };
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** A reader that collects when asked: `/metrics` is pulled by the scraper, never pushed. */
class ScrapeReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** The library's metrics (registerMetrics) on a meter provider of their own, as Prometheus text. */
function prometheusMetrics() {
  const reader = new ScrapeReader();
  const provider = new MeterProvider({ readers: [reader] });
  const stop = registerMetrics({ meterProvider: provider });
  const serializer = new PrometheusSerializer();
  return {
    async text(): Promise<string> {
      const { resourceMetrics } = await reader.collect();
      return serializer.serialize(resourceMetrics);
    },
    async close(): Promise<void> {
      stop();
      await provider.shutdown();
    },
  };
}
