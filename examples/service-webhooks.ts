/**
 * The webhook side of the demo service, from the library's public API: subscriptions (create, list
 * by page number), a test event delivered to every matching subscription through a queue (memory,
 * or BullMQ on Redis), the delivery log (listed by cursor), and a receiver that verifies what it
 * gets. Subscriptions and their secrets are kept in memory: the demo has no database.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type * as BullMQ from 'bullmq';
import {
  type Clock,
  createCursorCodec,
  createDeliverer,
  createSubscription,
  createWebhookMessage,
  cursorNavigation,
  cursorValidator,
  type DeliveryAttempt,
  type DeliveryQueue,
  deliveryJob,
  exampleEventCatalog,
  generateWebhookSecret,
  httpTransport,
  isApiConventionsError,
  MemoryDeliveryQueue,
  pageNumberNavigation,
  pageNumberValidator,
  pageSizePresets,
  parseEventKind,
  problemDetails,
  problemResponse,
  type ResponseParts,
  type Subscription,
  SubscriptionIndex,
  verifyWebhook,
} from '../src/index.js';
import { createRedisDeliveryQueue } from '../src/queue-redis/index.js';

/** A delivery attempt in the log of an account. */
export interface AuditLogEntry extends DeliveryAttempt {
  /** Position in the account's log, from 1. */
  readonly sequence: number;
}

/** How the webhook side runs. */
export interface DemoWebhooksOptions {
  clock: Clock;
  /** Non-public addresses that endpoints may use (the demo's own receiver on 127.0.0.1). */
  allow: readonly string[];
  /** BullMQ on this Redis connection instead of the memory queue. */
  redis?: { bullmq: typeof BullMQ; connection: BullMQ.ConnectionOptions };
  /** Told of every delivery attempt (after the log has it). */
  onDelivery?: (entry: AuditLogEntry) => void;
}

/** A response to write. */
type Reply = ResponseParts;

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  body: JSON.stringify(body),
});

const problem = (status: number, code: string, title: string, detail: string): Reply =>
  problemResponse(problemDetails({ code, title, status, detail }));

/** The webhook side: handlers that take the parsed request and return the response. */
export function createDemoWebhooks(options: DemoWebhooksOptions) {
  const index = new SubscriptionIndex();
  const secrets = new Map<string, string>();
  const subscriptions = new Map<string, Array<Subscription & { status: string }>>();
  const logs = new Map<string, AuditLogEntry[]>();
  const received: Array<{ id: string; verified: boolean; body: unknown }> = [];
  const codec = createCursorCodec<{ after: number }>({
    signingKey: process.env.CURSOR_KEY ?? randomBytes(32).toString('base64url'),
  });
  const pages = pageNumberValidator();
  const cursors = cursorValidator({ codec, sizes: pageSizePresets.analyticalData });
  const policy = { allowHttp: true, allow: options.allow };

  const deliverer = createDeliverer({
    secrets: (id) => {
      const secret = secrets.get(id);
      return secret === undefined ? undefined : [secret];
    },
    transport: httpTransport({ allow: options.allow }),
    clock: options.clock,
    onAttempt: (attempt) => {
      const account = index.get(attempt.subscriptionId)?.accountCode ?? accountOf(attempt);
      if (account === undefined) return;
      const log = logs.get(account) ?? [];
      logs.set(account, log);
      const entry = { sequence: log.length + 1, ...attempt };
      log.push(entry);
      options.onDelivery?.(entry);
    },
    onGone: (id) => {
      // 410: the receiver wants no more. The subscription stays listed, disabled.
      index.remove(id);
      secrets.delete(id);
      for (const list of subscriptions.values()) {
        const at = list.findIndex((s) => s.id === id);
        if (at !== -1) list[at] = { ...list[at]!, status: 'disabled' };
      }
    },
  });
  const accountOf = (attempt: DeliveryAttempt): string | undefined => {
    for (const [account, list] of subscriptions) {
      if (list.some((s) => s.id === attempt.subscriptionId)) return account;
    }
    return undefined;
  };
  const queue: DeliveryQueue =
    options.redis === undefined
      ? new MemoryDeliveryQueue({ deliverer, clock: options.clock })
      : createRedisDeliveryQueue({ ...options.redis, deliverer, name: 'demo-deliveries' });

  return {
    /** POST /v1/subscriptions: 201 with the subscription and its signing secret (shown once). */
    create(body: unknown, accountCode: string): Reply {
      const outcome = createSubscription(body, accountCode, {
        index,
        catalog: exampleEventCatalog,
        endpointUrl: policy,
      });
      if (!outcome.ok) return outcome.response;
      const secret = generateWebhookSecret();
      secrets.set(outcome.subscription.id, secret);
      const list = subscriptions.get(accountCode) ?? [];
      subscriptions.set(accountCode, list);
      list.push({ ...outcome.subscription, status: 'active' });
      return json(
        201,
        { ...outcome.subscription, status: 'active', secret },
        {
          location: outcome.response.headers.location ?? '',
        },
      );
    },

    /** GET /v1/subscriptions?pageNumber&pageSize. */
    list(url: URL, accountCode: string): Reply {
      const query = pages(url.searchParams);
      if (!query.ok) return problemResponse(query.problem);
      const { pageNumber, pageSize } = query.value;
      const all = subscriptions.get(accountCode) ?? [];
      const items = all.slice((pageNumber - 1) * pageSize, pageNumber * pageSize);
      const nav = pageNumberNavigation({ url, pageNumber, pageSize, totalItems: all.length });
      return json(
        200,
        {
          items,
          pageNumber,
          pageSize,
          totalItems: all.length,
          endOfData: nav.endOfData,
          links: nav.links,
        },
        nav.linkHeader === '' ? {} : { link: nav.linkHeader },
      );
    },

    /** GET /v1/audit-logs?limit&cursor: the delivery log, oldest first. */
    auditLogs(url: URL, accountCode: string): Reply {
      const query = cursors(url.searchParams);
      if (!query.ok) return problemResponse(query.problem);
      const { limit, state } = query.value;
      const log = logs.get(accountCode) ?? [];
      const after = state?.after ?? 0;
      const items = log.slice(after, after + limit);
      const last = items.at(-1);
      const more = last !== undefined && last.sequence < log.length;
      const nav = cursorNavigation({
        url,
        limit,
        ...(more ? { nextCursor: codec.encode({ after: last.sequence }) } : {}),
      });
      return json(
        200,
        {
          items,
          limit,
          nextCursor: nav.nextCursor ?? null,
          endOfData: nav.endOfData,
          links: nav.links,
        },
        nav.linkHeader === '' ? {} : { link: nav.linkHeader },
      );
    },

    /** POST /v1/test-events: make an event and deliver it to every matching subscription. */
    async emit(body: unknown, accountCode: string): Promise<Reply> {
      const input = (typeof body === 'object' && body !== null ? body : {}) as Record<
        string,
        unknown
      >;
      const kind = typeof input.kind === 'string' ? input.kind : 'reservation/created';
      const parsed = parseEventKind(kind);
      if (!parsed.ok) {
        return problem(400, 'invalid_event_kind', 'Invalid event kind', parsed.error.message);
      }
      const propertyId = typeof input.propertyId === 'string' ? input.propertyId : undefined;
      const message = createWebhookMessage(
        { accountCode, kind, propertyId, data: input.data ?? { test: true } },
        { clock: options.clock },
      );
      const matches = index.match({ accountCode, kind, propertyId });
      try {
        for (const subscription of matches) await queue.enqueue(deliveryJob(message, subscription));
      } catch (error) {
        if (isApiConventionsError(error)) {
          return problem(503, error.code, 'Deliveries not accepted', error.message);
        }
        throw error;
      }
      return json(202, { id: message.id, kind, deliveries: matches.map((s) => s.id) });
    },

    /** POST /demo/receiver: verify a delivery as a receiver would, and keep it for GET. */
    receive(raw: string, headers: IncomingHttpHeaders): Reply {
      const verdict = verifyWebhook(raw, headers, {
        secrets: secrets.size === 0 ? [generateWebhookSecret()] : [...secrets.values()],
        clock: options.clock,
      });
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        // kept as text
      }
      received.push({ id: String(headers['webhook-id']), verified: verdict.ok, body });
      if (received.length > 50) received.shift();
      console.log(
        `demo receiver: delivery ${String(headers['webhook-id'])} ${verdict.ok ? 'verified' : `refused (${verdict.code})`}`,
      );
      return verdict.ok
        ? { status: 204, headers: {}, body: '' }
        : problem(400, verdict.code, 'Not verified', verdict.message);
    },

    /** GET /demo/receiver: what the receiver got. */
    received: (): Reply => json(200, { items: received }),

    close: () => queue.close(),
  };
}

/** The webhook side of a running demo. */
export type DemoWebhooks = ReturnType<typeof createDemoWebhooks>;
