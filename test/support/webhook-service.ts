import { afterEach } from 'vitest';
/** A webhook service on a memory repository, a fake clock and a recording transport, and calls to it. */
import {
  createWebhookService,
  type Deliverer,
  type DeliveryJob,
  type DeliveryQueue,
  FakeClock,
  MemorySubscriptionRepository,
  type SubscriptionRepository,
  type TransportRequest,
  type TransportResponse,
  type WebhookService,
  type WebhookServiceOptions,
} from '../../src/index.js';
import { eventually } from './eventually.js';
import { checkAnswer } from './openapi-check.js';

export const START = 1_700_000_000_000;

export interface ServiceSetup {
  readonly service: WebhookService;
  readonly repository: SubscriptionRepository;
  readonly clock: FakeClock;
  /** Every request the transport was handed. */
  readonly sent: TransportRequest[];
  /** Failures told to onError. */
  readonly errors: unknown[];
  /** What the transport answers next (200 unless changed). */
  answer: TransportResponse;
}

/** Identify a request by its `x-account` header (no header: not identified). */
export const byAccountHeader = (request: Request) => {
  const account = request.headers.get('x-account');
  return account === null ? undefined : { clientId: 'app', accountCode: account };
};

/**
 * `serviceSetup` for a test file: every service it makes is closed after each test (call it at the
 * top level of the file).
 */
export function closingSetup(): typeof serviceSetup {
  const open: ServiceSetup[] = [];
  afterEach(async () => {
    for (const made of open.splice(0)) await made.service.close();
  });
  return (options = {}) => {
    const made = serviceSetup(options);
    open.push(made);
    return made;
  };
}

export function serviceSetup(
  options: Partial<WebhookServiceOptions> & {
    repository?: SubscriptionRepository;
    clock?: FakeClock;
  } = {},
): ServiceSetup {
  const clock = options.clock ?? new FakeClock(START);
  const repository = options.repository ?? new MemorySubscriptionRepository();
  const sent: TransportRequest[] = [];
  const errors: unknown[] = [];
  const setup: ServiceSetup = {
    service: undefined as unknown as WebhookService,
    repository,
    clock,
    sent,
    errors,
    answer: { status: 200, headers: {} },
  };
  const service = createWebhookService({
    identify: byAccountHeader,
    pollIntervalMs: 0,
    onError: (error) => errors.push(error),
    ...options,
    repository,
    clock,
    delivery: {
      transport: async (request) => {
        sent.push(request);
        return setup.answer;
      },
      ...options.delivery,
    },
  });
  (setup as { service: WebhookService }).service = service;
  return setup;
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  // biome-ignore lint/suspicious/noExplicitAny: a parsed JSON body, read by the tests
  readonly body: any;
}

/**
 * One request through `service.fetch`, its body read and parsed when it is JSON. The answer is
 * checked against the OpenAPI document the service serves: one it does not describe throws.
 */
export async function call(
  service: WebhookService,
  method: string,
  path: string,
  init: {
    account?: string | null;
    body?: unknown;
    raw?: RequestInit['body'];
    headers?: Record<string, string>;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.account !== null) headers['x-account'] = init.account ?? 'ACME';
  let body: RequestInit['body'] | undefined = init.raw;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const request = new Request(`http://api.test${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body, duplex: 'half' }),
  } as RequestInit);
  const response = await service.fetch(request);
  const text = await response.text();
  await checkAnswer(service, method, path, {
    status: response.status,
    contentType: response.headers.get('content-type'),
    text,
  });
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/** Wait for a condition, polling between turns of the event loop (see `eventually`). */
export async function until(condition: () => boolean, what = 'the condition'): Promise<void> {
  await eventually(what, condition, 1);
}

/** A valid create body. */
export const subscriptionBody = (over: Record<string, unknown> = {}) => ({
  endpointUrl: 'https://hooks.example.com/in',
  events: ['reservation/*'],
  ...over,
});

/** A repository that delegates to `inner`, with some operations replaced. */
export function repositoryWith(
  inner: SubscriptionRepository,
  overrides: Partial<Record<keyof SubscriptionRepository, unknown>>,
): SubscriptionRepository {
  const delegate: Record<string, unknown> = {};
  for (const name of [
    'create',
    'get',
    'list',
    'update',
    'delete',
    'rotateSecret',
    'signingSecrets',
    'unreadableSecrets',
    'changesSince',
    'watch',
    'recordAttempt',
    'attempts',
    'deleteAttemptsBefore',
    'recordMessage',
    'claimDeliveries',
    'replay',
    'deliveryStatus',
    'deleteMessagesBefore',
  ] as const) {
    const method = inner[name] as ((...args: unknown[]) => unknown) | undefined;
    if (method !== undefined) delegate[name] = method.bind(inner);
  }
  return { ...delegate, ...overrides } as unknown as SubscriptionRepository;
}

/** A queue that only holds jobs; the test runs their attempts with the deliverer it was given. */
export function heldQueue() {
  const held: { deliverer?: Deliverer; jobs: DeliveryJob[] } = { jobs: [] };
  const make = (deliverer: Deliverer): DeliveryQueue => {
    held.deliverer = deliverer;
    return {
      enqueue: async (job) => {
        held.jobs.push(job);
      },
      close: async () => [],
    };
  };
  return { held, make };
}
