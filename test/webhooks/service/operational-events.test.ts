/**
 * The service's operational events, as its documentation states them: `subscription-disabled`
 * when the service disables a subscription, `attempt-exhausted` when a delivery is given up,
 * `attempt-failing` after the third failed attempt of a message, `attempt-recovered` at the first
 * success after a failing streak; to every subscription of the account that names them, never to
 * the one they are about, and none about the delivery of an operational event. `attempt-recovered`
 * on PGlite too, whose repository tells the streak a success ended.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type DeliveryJob,
  exampleEventCatalog,
  httpTransport,
  isInvalidRequestError,
  retrySchedule,
  type TransportRequest,
  verifyWebhook,
} from '../../../src/index.js';
import { TestDatabases } from '../../postgres/databases.js';
import { pgliteInMemory } from '../../support/pglite-template.js';
import { startReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import {
  call,
  closingSetup,
  heldQueue,
  type ServiceSetup,
  until,
} from '../../support/webhook-service.js';

const setup = closingSetup();
const FOUR_ATTEMPTS = retrySchedule({ maxAttempts: 4, initialDelayMs: 1_000, jitter: 0 });

interface Operational {
  readonly id: string;
  readonly type: string;
  readonly accountId: string;
  // biome-ignore lint/suspicious/noExplicitAny: the event's data, read by the tests
  readonly data: any;
}

/** A service on a held queue whose transport answers per endpoint host. */
async function harness(options: Parameters<ReturnType<typeof closingSetup>>[0] = {}) {
  const { held, make } = heldQueue();
  const statuses = new Map<string, number>();
  const made = setup({
    queue: make,
    ...options,
    delivery: {
      schedule: FOUR_ATTEMPTS,
      transport: async (request: TransportRequest) => ({
        status: statuses.get(new URL(request.url).host) ?? 200,
        headers: {},
      }),
      ...options.delivery,
    },
  });
  const subscribe = async (host: string, events: string[], over: Record<string, unknown> = {}) => {
    const created = await call(made.service, 'POST', '/v1/subscriptions', {
      body: { endpointUrl: `https://${host}/in`, events, ...over },
    });
    expect(created.status).toBe(201);
    return created.body.id as string;
  };
  // Jobs taken from the queue so far, not yet run.
  const queued: DeliveryJob[] = [];
  // Every job ever queued, in order.
  const seen: DeliveryJob[] = [];
  const take = () => {
    const jobs = held.jobs.splice(0);
    queued.push(...jobs);
    seen.push(...jobs);
  };
  /** Run the first queued job matching `which` once; a retry goes back to the queue. */
  const run = async (which: (job: DeliveryJob) => boolean) => {
    take();
    const at = queued.findIndex(which);
    expect(at).toBeGreaterThanOrEqual(0);
    const [job] = queued.splice(at, 1);
    const step = await held.deliverer!.attempt(job!);
    if (!step.done) queued.push(step.job);
    take();
    return step;
  };
  /** Every operational job queued so far (first attempts), with its event. */
  const operational = (): Array<{ job: DeliveryJob; event: Operational }> => {
    take();
    return seen
      .filter((job) => job.attempts === 0)
      .map((job) => ({ job, event: JSON.parse(job.body) as Operational }))
      .filter(({ event }) => event.type.startsWith('operational/'));
  };
  return { made, statuses, subscribe, run, operational, queued };
}

const reservation = (made: ServiceSetup) =>
  made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });

describe('operational events', () => {
  it('attempt-failing after the third failed attempt, once; attempt-recovered at the next success; to the subscriptions that name them, whatever their properties', async () => {
    const h = await harness();
    const a = await h.subscribe('a.example.com', ['reservation/*']);
    const all = await h.subscribe('w.example.com', ['operational/*']);
    const berlin = await h.subscribe('p.example.com', ['operational/*'], { propertyIds: ['BER'] });
    await h.subscribe('x.example.com', ['operational/attempt-exhausted']);
    h.statuses.set('a.example.com', 500);
    const first = await reservation(h.made);
    for (let i = 0; i < 2; i++) await h.run((job) => job.id === first.id);
    expect(h.operational()).toEqual([]);
    await h.run((job) => job.id === first.id);
    const failing = h.operational();
    expect(failing.map(({ job }) => job.subscriptionId).sort()).toEqual([all, berlin].sort());
    expect(failing[0]!.event).toMatchObject({
      type: 'operational/attempt-failing',
      accountId: 'ACME',
      data: { subscriptionId: a, messageId: first.id, attempts: 3 },
    });
    h.statuses.set('a.example.com', 200);
    await h.run((job) => job.id === first.id);
    const events = h.operational().map(({ event }) => event);
    expect(events.filter((e) => e.type === 'operational/attempt-failing')).toHaveLength(2);
    const recovered = events.filter((e) => e.type === 'operational/attempt-recovered');
    expect(recovered).toHaveLength(2);
    expect(recovered[0]!.data).toEqual({
      subscriptionId: a,
      messageId: first.id,
      failingSince: new Date(h.made.clock.now()).toISOString(),
      failedMessages: 1,
    });
    // A success with no streak before it raises nothing.
    const second = await reservation(h.made);
    await h.run((job) => job.id === second.id);
    expect(h.operational()).toHaveLength(4);
    expect(h.made.errors).toEqual([]);
  });

  it('attempt-exhausted when the schedule is spent, to a subscription that names that kind alone too', async () => {
    const h = await harness();
    const a = await h.subscribe('a.example.com', ['reservation/*']);
    const exhaustedOnly = await h.subscribe('x.example.com', ['operational/attempt-exhausted']);
    const all = await h.subscribe('w.example.com', ['operational/*']);
    h.statuses.set('a.example.com', 500);
    const message = await reservation(h.made);
    for (let i = 0; i < 4; i++) await h.run((job) => job.id === message.id);
    const events = h.operational();
    const exhausted = events.filter(({ event }) => event.type === 'operational/attempt-exhausted');
    expect(exhausted.map(({ job }) => job.subscriptionId).sort()).toEqual(
      [exhaustedOnly, all].sort(),
    );
    expect(exhausted[0]!.event.data).toEqual({
      subscriptionId: a,
      messageId: message.id,
      attempts: 4,
      reason: 'attempts_exhausted',
    });
    // The failing one (third attempt) went to the subscription of every operational event only.
    expect(
      events
        .filter(({ event }) => event.type === 'operational/attempt-failing')
        .map(({ job }) => job.subscriptionId),
    ).toEqual([all]);
  });

  it('subscription-disabled for a 410 and for an endpoint failing too long, with the reason; none for a subscription disabled on request', async () => {
    const h = await harness({ disableAfterMs: 0, disableMinMessages: 1 });
    const gone = await h.subscribe('g.example.com', ['reservation/*']);
    const failing = await h.subscribe('f.example.com', ['reservation/*']);
    const requested = await h.subscribe('r.example.com', ['reservation/*']);
    const all = await h.subscribe('w.example.com', ['operational/subscription-disabled']);
    h.statuses.set('g.example.com', 410);
    h.statuses.set('f.example.com', 500);
    const message = await reservation(h.made);
    await h.run((job) => job.id === message.id && job.subscriptionId === gone);
    await h.run((job) => job.id === message.id && job.subscriptionId === failing);
    const patched = await call(h.made.service, 'PATCH', `/v1/subscriptions/${requested}`, {
      body: { status: 'disabled' },
    });
    expect(patched.status).toBe(200);
    const events = h.operational();
    expect(events.map(({ job }) => job.subscriptionId)).toEqual([all, all]);
    expect(events.map(({ event }) => [event.type, event.data])).toEqual([
      ['operational/subscription-disabled', { subscriptionId: gone, reason: 'endpoint_gone' }],
      [
        'operational/subscription-disabled',
        { subscriptionId: failing, reason: 'endpoint_failing' },
      ],
    ]);
  });

  it('never to the subscription an event is about', async () => {
    const h = await harness();
    const self = await h.subscribe('s.example.com', ['reservation/*', 'operational/*']);
    const other = await h.subscribe('o.example.com', ['operational/*']);
    h.statuses.set('s.example.com', 500);
    const message = await reservation(h.made);
    for (let i = 0; i < 3; i++) await h.run((job) => job.id === message.id);
    const events = h.operational();
    expect(events.map(({ job }) => job.subscriptionId)).toEqual([other]);
    expect(events[0]!.event.data.subscriptionId).toBe(self);
  });

  it('no operational event about the delivery of one: an endpoint failing them raises nothing more', async () => {
    const h = await harness();
    await h.subscribe('a.example.com', ['reservation/*']);
    const watcher = await h.subscribe('w.example.com', ['operational/*']);
    await h.subscribe('v.example.com', ['operational/*']);
    h.statuses.set('a.example.com', 500);
    h.statuses.set('w.example.com', 500);
    const message = await reservation(h.made);
    for (let i = 0; i < 3; i++) await h.run((job) => job.id === message.id);
    expect(h.operational()).toHaveLength(2);
    const failingId = h.operational()[0]!.event.id;
    for (let i = 0; i < 4; i++) {
      await h.run((job) => job.id === failingId && job.subscriptionId === watcher);
    }
    expect(h.operational()).toHaveLength(2);
    const log = await h.made.repository.attempts('ACME', { subscriptionId: watcher, limit: 10 });
    expect(log.map((entry) => entry.outcome)).toEqual(['failed', 'retry', 'retry', 'retry']);
  });

  it('platforms cannot publish operational kinds: invalid_event at /kind, nothing recorded', async () => {
    const h = await harness();
    await h.subscribe('w.example.com', ['operational/*']);
    const refused = await h.made.service
      .publish({ accountCode: 'ACME', kind: 'operational/attempt-failing', data: {} })
      .catch((error: unknown) => error);
    expect(isInvalidRequestError(refused) && [refused.code, refused.pointer]).toEqual([
      'invalid_event',
      '/kind',
    ]);
    expect(h.operational()).toEqual([]);
  });

  it('a service with a catalog knows the topic: operational/* and its kinds accepted, a misspelt kind refused with a suggestion', async () => {
    const h = await harness({ catalog: exampleEventCatalog });
    await h.subscribe('w.example.com', ['operational/*', 'folio/created']);
    await h.subscribe('x.example.com', ['operational/attempt-recovered']);
    const misspelt = await call(h.made.service, 'POST', '/v1/subscriptions', {
      body: { endpointUrl: 'https://y.example.com/in', events: ['operational/attempt-faling'] },
    });
    expect(misspelt.status).toBe(400);
    expect(JSON.stringify(misspelt.body)).toContain('operational/attempt-failing');
  });
});

describe('operational events on PGlite', () => {
  const databases = new TestDatabases();
  // PGlite alone: the file needs no PostgreSQL server.
  beforeAll(async () => {
    databases.lite = await pgliteInMemory();
  });
  afterAll(() => databases.stop());

  it('attempt-recovered at the first success after a failing streak, with when it started and its messages; none for a success without one', async () => {
    const repository = await databases.open('pglite');
    try {
      const h = await harness({ repository });
      const a = await h.subscribe('a.example.com', ['reservation/*']);
      const watcher = await h.subscribe('w.example.com', ['operational/attempt-recovered']);
      h.statuses.set('a.example.com', 500);
      const first = await reservation(h.made);
      const second = await reservation(h.made);
      const failingSince = h.made.clock.now();
      await h.run((job) => job.id === first.id);
      h.made.clock.advance(1_000);
      await h.run((job) => job.id === second.id);
      expect(h.operational()).toEqual([]);
      h.statuses.set('a.example.com', 200);
      await h.run((job) => job.id === first.id);
      const events = h.operational();
      expect(events.map(({ job }) => job.subscriptionId)).toEqual([watcher]);
      expect(events[0]!.event).toMatchObject({
        type: 'operational/attempt-recovered',
        accountId: 'ACME',
        data: {
          subscriptionId: a,
          messageId: first.id,
          failingSince: new Date(failingSince).toISOString(),
          failedMessages: 2,
        },
      });
      await h.run((job) => job.id === second.id);
      expect(h.operational()).toHaveLength(1);
      expect(h.made.errors).toEqual([]);
    } finally {
      await repository.close();
    }
  });
});

describe('operational events over HTTP', () => {
  let receiver: WebhookReceiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  it('a subscription-disabled event reaches a real receiver signed with its subscription secret', async () => {
    receiver = await startReceiver((delivery) => ({
      status: delivery.path === '/gone' ? 410 : 204,
    }));
    const made = setup({
      endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
      delivery: { transport: httpTransport({ allow: ['127.0.0.1'] }) },
    });
    const watcher = await call(made.service, 'POST', '/v1/subscriptions', {
      body: { endpointUrl: `${receiver.url}/ops`, events: ['operational/*'] },
    });
    const gone = await call(made.service, 'POST', '/v1/subscriptions', {
      body: { endpointUrl: `${receiver.url}/gone`, events: ['reservation/*'] },
    });
    await made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await receiver.waitFor(2);
    const delivery = receiver.received.find((r) => r.path === '/ops')!;
    const headers = Object.fromEntries(
      Object.entries(delivery.headers).map(([name, value]) => [name, String(value)]),
    );
    const verified = verifyWebhook(delivery.body, headers, {
      secrets: [watcher.body.secret],
      clock: made.clock,
    });
    expect(verified.ok).toBe(true);
    expect(JSON.parse(delivery.body)).toMatchObject({
      type: 'operational/subscription-disabled',
      data: { subscriptionId: gone.body.id, reason: 'endpoint_gone' },
    });
    await until(() => made.errors.length === 0);
  });
});
