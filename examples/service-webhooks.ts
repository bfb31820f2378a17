/**
 * The webhook side of the demo service: the library's webhook service (`createWebhookService`) on
 * the demo's repository and limiter, with the demo's own extras around it: test events published
 * through the service, a receiver that verifies what it gets with the signing secrets the
 * repository holds for the sending account, a receiver that is gone (410), and a console line for
 * every subscription the service disables.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type * as BullMQ from 'bullmq';
import type { FetchHandler } from '../src/adapters/node.js';
import {
  type CheckingLimiter,
  type Clock,
  createWebhookService,
  type DeliveryAttempt,
  DeliveryQueueError,
  exampleEventCatalog,
  generateWebhookSecret,
  httpTransport,
  type Identity,
  isInvalidRequestError,
  problemDetails,
  problemResponse,
  type ResponseParts,
  type SubscriptionRepository,
  verifyWebhook,
  WEBHOOK_SIGNING_KEY_PREFIX,
  type WebhookService,
  type WebhookServiceDisabled,
  webhookPublicKeyOf,
} from '../src/index.js';
import { createRedisDeliveryQueue } from '../src/queue-redis/index.js';
import { ownPortApi, ownPortTransport } from './service-own-port.js';
import { testEventIssues } from './test-events.js';

/** How the webhook side runs. */
export interface DemoWebhooksOptions {
  /** Where subscriptions, secrets and the delivery log are kept. */
  repository: SubscriptionRepository;
  /** Who sends a request; `undefined` for no demo client. */
  identify: (request: Request) => Identity | undefined;
  /** The demo's one limiter: the whole webhook API sits behind it. */
  limiter: CheckingLimiter;
  clock: Clock;
  /** Non-public addresses that endpoints may use (the demo's own receiver on 127.0.0.1). */
  allow: readonly string[];
  /** When given, `allow` holds on this port only: the demo's own, where its receivers are. */
  ownPort?: (() => number) | undefined;
  /** Signs the delivery log's cursors. @defaultValue a random key */
  cursorKey?: string | undefined;
  /** Signs portal tokens (at least 32 bytes): the portal's links hold until a restart. */
  portalKey: Uint8Array;
  /** The accounts whose deliveries the receiver keeps (the demo clients'). */
  accounts: readonly string[];
  /** BullMQ on this Redis connection instead of the memory queue. */
  redis?: { bullmq: typeof BullMQ; connection: BullMQ.ConnectionOptions } | undefined;
  /** Told of every delivery attempt, once the delivery log has it. */
  onDelivery?: ((attempt: DeliveryAttempt) => void) | undefined;
  /** Told of every subscription the service disabled, after the demo's console line. */
  onDisabled?: ((event: WebhookServiceDisabled) => void) | undefined;
  /** Subscriptions an account may hold: each is a delivery per test event. */
  maxSubscriptionsPerAccount: number;
  /** Told once at start when secrets are stored unencrypted. @defaultValue `console.warn` */
  onWarning?: ((message: string) => void) | undefined;
  /** Told of every failure the service survived. @defaultValue one line on `console.error` */
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * What the demo receiver got: the message id, whether it verified, the schemes of its signatures
 * (`v1` HMAC, `v1a` ed25519) and the payload.
 */
export interface ReceivedDelivery {
  readonly id: string;
  readonly verified: boolean;
  readonly schemes: readonly string[];
  readonly body: unknown;
}

/** The webhook side: the service, and the demo's handlers that take the parsed request. */
export interface DemoWebhooks {
  /** The library's service. */
  readonly service: WebhookService;
  /** What to mount for `/v1/subscriptions...` and `/v1/audit-logs`: the service, port-checked. */
  readonly api: FetchHandler;
  /**
   * POST /v1/test-events: check the body, publish the event, 202 with what was queued. With an
   * `Idempotency-Key` header the publish is idempotent: the same key answers the first message.
   */
  emit(
    body: unknown,
    accountCode: string,
    idempotencyKey?: string | readonly string[],
  ): Promise<ResponseParts>;
  /** POST /demo/receiver: verify a delivery as a receiver would, and keep it for GET. */
  receive(raw: string, headers: IncomingHttpHeaders): Promise<ResponseParts>;
  /** POST /demo/receiver/gone: a receiver taken down, answering 410 Gone to every delivery. */
  gone(headers: IncomingHttpHeaders): ResponseParts;
  /** GET /demo/receiver: what the receiver got for this account, the newest 50. */
  received(accountCode: string): ResponseParts;
  /** Stop the service (listening, the queue); the repository is the caller's. */
  close(): Promise<void>;
}

/** The account a payload names (`accountId`), '' for none. */
const accountOf = (body: unknown): string => {
  const account =
    typeof body === 'object' && body !== null ? (body as { accountId?: unknown }).accountId : '';
  return typeof account === 'string' ? account : '';
};

const json = (status: number, body: unknown): ResponseParts => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8' },
  body: JSON.stringify(body),
});

const problem = (status: number, code: string, title: string, detail: string): ResponseParts =>
  problemResponse(problemDetails({ code, title, status, detail }));

/** Make the webhook side. */
export function createDemoWebhooks(options: DemoWebhooksOptions): DemoWebhooks {
  const { repository, clock, allow, ownPort, redis, onDelivery, onDisabled, onWarning, onError } =
    options;
  const service = createWebhookService({
    repository,
    identify: options.identify,
    limiter: options.limiter,
    limits: { rateLimitHeaders: true, trackingIdOnAdmitted: true },
    clock,
    catalog: exampleEventCatalog,
    endpointUrl: { allowHttp: true, allow },
    delivery: {
      transport:
        ownPort === undefined ? httpTransport({ allow }) : ownPortTransport(allow, ownPort),
      ...(onDelivery === undefined ? {} : { onAttempt: onDelivery }),
    },
    maxSubscriptionsPerAccount: options.maxSubscriptionsPerAccount,
    // A 410 disables a subscription at once, a failing endpoint after 5 days over 10 messages.
    onDisabled: (event) => {
      console.log(`demo service: subscription ${event.subscription.id} disabled (${event.reason})`);
      onDisabled?.(event);
    },
    ...(options.cursorKey === undefined ? {} : { cursorKey: options.cursorKey }),
    portalKey: options.portalKey,
    ...(onWarning === undefined ? {} : { onWarning }),
    ...(onError === undefined ? {} : { onError }),
    ...(redis === undefined
      ? {}
      : {
          queue: (deliverer) =>
            createRedisDeliveryQueue({ ...redis, deliverer, name: 'demo-deliveries' }),
        }),
  });
  const fetch = (request: Request) => service.fetch(request);
  const api = ownPort === undefined ? fetch : ownPortApi(fetch, allow, ownPort);
  // Each account's newest 50, read back with that account's key only; a payload that names no
  // demo account is logged, not kept.
  const received = new Map<string, ReceivedDelivery[]>(
    options.accounts.map((account) => [account, []]),
  );

  /**
   * The secrets (`whsec_`) and signing keys (`whsk_`) that sign for the subscriptions of the account
   * a payload names: a receiver holds the secrets, and the public keys of the signing keys.
   */
  const secretsOf = async (raw: string): Promise<string[]> => {
    let account: unknown;
    try {
      account = (JSON.parse(raw) as { accountId?: unknown } | null)?.accountId;
    } catch {
      return [];
    }
    if (typeof account !== 'string' || account === '') return [];
    const page = await repository.list(account, {
      offset: 0,
      limit: options.maxSubscriptionsPerAccount,
    });
    const now = clock.now();
    const secrets = await Promise.all(
      // A subscription whose secrets the keys cannot read verifies nothing (the service says so).
      page.items.map((s) => repository.signingSecrets(account, s.id, now).catch(() => [])),
    );
    return secrets.flat();
  };

  return {
    service,
    api,

    async emit(body, accountCode, idempotencyKey) {
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
      try {
        const published = await service.publish(
          {
            accountCode,
            kind,
            propertyId: input.propertyId as string | undefined,
            data: Object.hasOwn(input, 'data') ? input.data : { test: true },
          },
          // A header sent twice is a key of its own, which the service refuses as any other.
          idempotencyKey === undefined ? undefined : { idempotencyKey: String(idempotencyKey) },
        );
        return json(202, { id: published.id, kind, deliveries: published.deliveries });
      } catch (error) {
        if (error instanceof DeliveryQueueError) {
          return problem(503, error.code, 'Deliveries not accepted', error.message);
        }
        if (!isInvalidRequestError(error)) throw error;
        if (error.code === 'idempotency_key_reused' || error.code === 'invalid_idempotency_key') {
          return problem(
            error.code === 'idempotency_key_reused' ? 409 : 400,
            error.code,
            'Idempotency key not usable',
            error.message,
          );
        }
        return problem(
          400,
          'invalid_test_event',
          'Invalid test event',
          `${error.message} Send a smaller or simpler data value.`,
        );
      }
    },

    async receive(raw, headers) {
      const keys = await secretsOf(raw);
      const secrets = keys.filter((key) => !key.startsWith(WEBHOOK_SIGNING_KEY_PREFIX));
      const publicKeys = keys
        .filter((key) => key.startsWith(WEBHOOK_SIGNING_KEY_PREFIX))
        .map(webhookPublicKeyOf);
      const verdict = verifyWebhook(raw, headers, {
        secrets:
          secrets.length === 0 && publicKeys.length === 0 ? [generateWebhookSecret()] : secrets,
        publicKeys,
        clock,
      });
      const schemes = [
        ...new Set(
          String(headers['webhook-signature'] ?? '')
            .split(' ')
            .map((entry) => entry.split(',')[0] ?? ''),
        ),
      ];
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        // kept as text
      }
      const kept = received.get(accountOf(body));
      kept?.push({ id: String(headers['webhook-id']), verified: verdict.ok, schemes, body });
      if (kept !== undefined && kept.length > 50) kept.shift();
      console.log(
        `demo receiver: delivery ${String(headers['webhook-id'])} ${verdict.ok ? `verified (${schemes.join(', ')})` : `refused (${verdict.code})`}`,
      );
      return verdict.ok
        ? { status: 204, headers: {}, body: '' }
        : problem(400, verdict.code, 'Not verified', verdict.message);
    },

    gone(headers) {
      console.log(`demo receiver: delivery ${String(headers['webhook-id'])} answered 410 Gone`);
      return problem(
        410,
        'endpoint_gone',
        'Gone',
        'This endpoint was taken down: send it nothing more (the service disables its subscription).',
      );
    },

    received: (accountCode) => json(200, { items: received.get(accountCode) ?? [] }),

    close: () => service.close(),
  };
}
