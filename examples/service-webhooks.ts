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
  /** Subscriptions an account may hold (the demo has no delete). @defaultValue 100 */
  maxSubscriptionsPerAccount?: number;
  /** Delivery log entries kept per account, the newest. @defaultValue 1000 */
  maxLogEntriesPerAccount?: number;
}

/** How deep the `data` of a test event may nest (objects and arrays). */
export const MAX_TEST_EVENT_DEPTH = 32;

/** A response to write. */
type Reply = ResponseParts;

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  body: JSON.stringify(body),
});

const problem = (status: number, code: string, title: string, detail: string): Reply =>
  problemResponse(problemDetails({ code, title, status, detail }));

/** One error of a test event request, with its JSON pointer. */
interface TestEventIssue {
  code: string;
  path: string;
  message: string;
}

const TEST_EVENT_FIELDS = ['kind', 'propertyId', 'data'];

const describe = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;

/** How deep a parsed JSON value nests, counted without recursion (it may be deeper than the stack). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const top = stack.pop()!;
    if (typeof top.value !== 'object' || top.value === null) continue;
    const depth = top.depth + 1;
    if (depth > deepest) deepest = depth;
    if (depth > MAX_TEST_EVENT_DEPTH) return depth;
    for (const child of Object.values(top.value)) stack.push({ value: child, depth });
  }
  return deepest;
}

const hasSpaceOrControl = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
};

/** Every error of a test event body (kind, propertyId, data; all optional), at once. */
function testEventIssues(body: unknown): TestEventIssue[] {
  if (body === undefined) return [];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return [
      {
        code: 'body_not_object',
        path: '',
        message: `The body must be a JSON object with optional kind, propertyId and data; got ${describe(body)}.`,
      },
    ];
  }
  const issues: TestEventIssue[] = [];
  const input = body as Record<string, unknown>;
  for (const name of Object.keys(input)) {
    if (!TEST_EVENT_FIELDS.includes(name)) {
      issues.push({
        code: 'unknown_field',
        path: `/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`,
        message: `Unknown field ${JSON.stringify(name)}; the body has only ${TEST_EVENT_FIELDS.join(', ')} (check the spelling).`,
      });
    }
  }
  if (Object.hasOwn(input, 'kind')) {
    const kind = parseEventKind(input.kind);
    const unknown = kind.ok ? exampleEventCatalog.check(kind.value) : undefined;
    if (!kind.ok)
      issues.push({ code: kind.error.code, path: '/kind', message: kind.error.message });
    else if (unknown !== undefined) {
      issues.push({ code: unknown.code, path: '/kind', message: unknown.message });
    }
  }
  if (Object.hasOwn(input, 'propertyId')) {
    const id = input.propertyId;
    if (typeof id !== 'string' || id.length === 0 || id.length > 128 || hasSpaceOrControl(id)) {
      issues.push({
        code: 'invalid_property_id',
        path: '/propertyId',
        message: `propertyId must be a property id of 1 to 128 characters without spaces or control characters, or omitted for an account-level event; got ${typeof id === 'string' ? `${id.length} characters` : describe(id)}.`,
      });
    }
  }
  if (Object.hasOwn(input, 'data') && depthOf(input.data) > MAX_TEST_EVENT_DEPTH) {
    issues.push({
      code: 'data_too_deep',
      path: '/data',
      message: `data nests more than ${MAX_TEST_EVENT_DEPTH} objects or arrays deep; send a flatter value.`,
    });
  }
  return issues;
}

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
  const maxSubscriptions = options.maxSubscriptionsPerAccount ?? 100;
  const maxLog = options.maxLogEntriesPerAccount ?? 1000;

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
      const entry = { sequence: (log.at(-1)?.sequence ?? 0) + 1, ...attempt };
      log.push(entry);
      // Only the newest entries are kept: a busy or hostile account cannot grow the log forever.
      if (log.length > maxLog) log.splice(0, log.length - maxLog);
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
      // Each subscription is a delivery per test event: a bound on them bounds the fan-out.
      if ((subscriptions.get(accountCode)?.length ?? 0) >= maxSubscriptions) {
        return problem(
          409,
          'subscription_limit_reached',
          'Too many subscriptions',
          `This account already has ${maxSubscriptions} subscriptions, the most the demo keeps; restart the demo to start again.`,
        );
      }
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

    /**
     * GET /v1/audit-logs?limit&cursor: the delivery log, oldest first. Only the newest entries are
     * kept; a cursor past ones no longer kept goes on from the oldest kept.
     */
    auditLogs(url: URL, accountCode: string): Reply {
      const query = cursors(url.searchParams);
      if (!query.ok) return problemResponse(query.problem);
      const { limit, state } = query.value;
      const log = logs.get(accountCode) ?? [];
      const after = state?.after ?? 0;
      const first = log[0]?.sequence ?? 1;
      const start = Math.max(0, after - first + 1);
      const items = log.slice(start, start + limit);
      const last = items.at(-1);
      const more = last !== undefined && last.sequence < (log.at(-1)?.sequence ?? 0);
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

    /**
     * POST /v1/test-events: make an event and deliver it to every matching subscription. Every
     * field is optional (kind `reservation/created`, no property, data `{ test: true }`); a field
     * that is sent must be right, or the 400 lists every error with its JSON pointer.
     */
    async emit(body: unknown, accountCode: string): Promise<Reply> {
      const issues = testEventIssues(body);
      if (issues.length > 0) {
        return problemResponse(
          problemDetails({
            code: 'invalid_test_event',
            title: 'Invalid test event',
            status: 400,
            detail: `${issues.length} error${issues.length === 1 ? '' : 's'}: ${issues.map((i) => `${i.path || '(body)'}: ${i.message}`).join(' ')}`,
            extensions: { errors: issues },
          }),
        );
      }
      const input = (body ?? {}) as Record<string, unknown>;
      const kind = (input.kind as string | undefined) ?? 'reservation/created';
      const propertyId = input.propertyId as string | undefined;
      let message: ReturnType<typeof createWebhookMessage>;
      try {
        message = createWebhookMessage(
          {
            accountCode,
            kind,
            propertyId,
            data: Object.hasOwn(input, 'data') ? input.data : { test: true },
          },
          { clock: options.clock },
        );
      } catch (error) {
        if (!isApiConventionsError(error)) throw error;
        return problem(
          400,
          'invalid_test_event',
          'Invalid test event',
          `${error.message} Send a smaller or simpler data value.`,
        );
      }
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
