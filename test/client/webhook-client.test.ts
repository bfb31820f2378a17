/**
 * The webhook service's client against the real service over HTTP on 127.0.0.1: every route's
 * method, lists read across pages to their end, the problems thrown as WebhookApiError with their
 * status, code and pointers, and a 429 waited out as its Retry-After asks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { nodeFetchHandler } from '../../src/adapters/node.js';
import {
  createWebhookClient,
  isWebhookApiError,
  WebhookApiError,
  type WebhookClientOptions,
  webhookApiErrorCodes,
} from '../../src/client/index.js';
import {
  ApiConventionsError,
  ConfigurationError,
  createLimiter,
  type DeliveryAttempt,
  type DeliveryJob,
  FakeClock,
  retrySchedule,
  window,
} from '../../src/index.js';
import type { StartedServer } from '../support/adapter-suite.js';
import { listen } from '../support/listen.js';
import { heldQueue, type ServiceSetup, START, serviceSetup } from '../support/webhook-service.js';

const { held, make } = heldQueue();
let made: ServiceSetup;
let server: StartedServer;
beforeAll(async () => {
  made = serviceSetup({ queue: make, delivery: { schedule: retrySchedule({ maxAttempts: 1 }) } });
  server = await listen(createServer(nodeFetchHandler(made.service)));
});
afterAll(async () => {
  await server.close();
  await made.service.close();
});

/** A client of the shared service, identified as `account` (the service reads `x-account`). */
const clientOf = (account: string, more: Partial<WebhookClientOptions> = {}) =>
  createWebhookClient({ baseUrl: server.url, headers: { 'x-account': account }, ...more });

const body = (n = 0) => ({
  endpointUrl: `https://hooks.example.com/in/${n}`,
  events: ['reservation/*'],
});

/** What a call rejects with; a call that resolves fails the test. */
async function thrown(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('the call did not reject');
}

async function all<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** An attempt of `subscriptionId`, the `n`-th of its log. */
const anAttempt = (
  subscriptionId: string,
  n: number,
  outcome: 'delivered' | 'failed',
): DeliveryAttempt => ({
  id: `msg_${subscriptionId}_${n}`,
  subscriptionId,
  endpointUrl: 'https://hooks.example.com/in/0',
  attempt: 1,
  at: START + n,
  status: outcome === 'delivered' ? 204 : 503,
  outcome,
});

describe('createWebhookClient: one method per route', () => {
  it('creates, gets, updates, rotates and deletes a subscription as the routes answer', async () => {
    const client = clientOf('CRUD');
    const created = await client.subscriptions.create({
      ...body(),
      description: 'Billing',
      metadata: { owner: 'ops' },
    });
    expect(created).toMatchObject({
      ...body(),
      description: 'Billing',
      metadata: { owner: 'ops' },
      signatureType: 'hmac-sha256',
      status: 'enabled',
    });
    expect(created.secret).toMatch(/^whsec_/);
    const { secret: _, ...view } = created;
    expect(await client.subscriptions.get(created.id)).toEqual(view);

    const updated = await client.subscriptions.update(created.id, {
      status: 'disabled',
      description: null,
    });
    expect(updated).toMatchObject({
      id: created.id,
      status: 'disabled',
      disabledReason: 'requested',
    });
    expect(updated.description).toBeUndefined();

    const rotated = await client.subscriptions.rotateSecret(created.id);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    expect(typeof rotated.previousSecretsExpireAt).toBe('string');

    const ed25519 = await client.subscriptions.create({ ...body(1), signatureType: 'ed25519' });
    expect(ed25519.publicKey).toMatch(/^whpk_/);
    expect(ed25519.secret).toBeUndefined();

    await expect(client.subscriptions.delete(created.id)).resolves.toBeUndefined();
    const gone = await thrown(() => client.subscriptions.get(created.id));
    expect(gone).toMatchObject({
      name: 'WebhookApiError',
      status: 404,
      code: 'subscription_not_found',
    });
  });

  it('lists every subscription across pages, in creation order, each once; pages() gives the page bodies', async () => {
    const client = clientOf('PAGES');
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push((await client.subscriptions.create(body(n))).id);

    const listed = await all(client.subscriptions.list({ pageSize: 2 }));
    expect(listed.map((s) => s.id)).toEqual(ids);
    const pages = await all(client.subscriptions.list({ pageSize: 2 }).pages());
    expect(pages.map((p) => [p.pageNumber, p.items.length, p.endOfData, p.totalItems])).toEqual([
      [1, 2, false, 5],
      [2, 2, false, 5],
      [3, 1, true, 5],
    ]);
    expect(
      (await all(client.subscriptions.list({ pageSize: 2, startPage: 3 }))).map((s) => s.id),
    ).toEqual(ids.slice(4));
  });

  it("lists a subscription's attempts and the audit log across cursor pages, newest first, filtered", async () => {
    const client = clientOf('LOG');
    const a = await client.subscriptions.create(body(0));
    const b = await client.subscriptions.create(body(1));
    for (let n = 0; n < 7; n++) {
      await made.repository.recordAttempt(
        'LOG',
        anAttempt(a.id, n, n % 2 === 0 ? 'failed' : 'delivered'),
      );
    }
    await made.repository.recordAttempt('LOG', anAttempt(b.id, 7, 'failed'));

    const ofA = await all(client.subscriptions.attempts(a.id, { limit: 3 }));
    expect(ofA.map((attempt) => attempt.id)).toEqual(
      [6, 5, 4, 3, 2, 1, 0].map((n) => `msg_${a.id}_${n}`),
    );
    const pages = await all(client.subscriptions.attempts(a.id, { limit: 3 }).pages());
    expect(pages.map((p) => p.items.length)).toEqual([3, 3, 1]);
    expect(pages.at(-1)?.nextCursor).toBeNull();

    const failed = await all(
      client.subscriptions.attempts(a.id, { limit: 2, outcome: ['failed'] }),
    );
    expect(failed.map((attempt) => attempt.id)).toEqual(
      [6, 4, 2, 0].map((n) => `msg_${a.id}_${n}`),
    );

    const audit = await all(client.auditLogs({ limit: 2, since: new Date(START + 5) }));
    expect(audit.map((attempt) => attempt.id)).toEqual([
      `msg_${b.id}_7`,
      `msg_${a.id}_6`,
      `msg_${a.id}_5`,
    ]);
    expect(audit[0]).toMatchObject({ subscriptionId: b.id, outcome: 'failed', status: 503 });
  });

  it("replays a subscription's failed messages and one message, as the 202s say", async () => {
    const client = clientOf('ACME');
    const sub = await client.subscriptions.create(body());
    made.answer = { status: 500, headers: {} };
    const published = await made.service.publish({
      accountCode: 'ACME',
      kind: 'reservation/created',
    });
    const attempt = async () => {
      const job = held.jobs.find((j: DeliveryJob) => j.subscriptionId === sub.id);
      held.jobs.length = 0;
      expect(job).toBeDefined();
      return held.deliverer!.attempt(job!);
    };
    expect((await attempt()).report).toMatchObject({ outcome: 'failed' });

    const replayed = await client.subscriptions.replay(sub.id, { since: new Date(START) });
    expect(replayed).toEqual({
      subscriptionId: sub.id,
      since: new Date(START).toISOString(),
      deliveries: 1,
      queued: 1,
      paced: 0,
    });
    expect((await attempt()).report).toMatchObject({ outcome: 'failed', replay: 1 });

    const message = await client.messages.replay(published.id);
    expect(message).toEqual({ messageId: published.id, deliveries: 1, queued: 1, paced: 0 });
    const log = await all(client.subscriptions.attempts(sub.id));
    expect(log.map((a) => a.replay)).toEqual([1, undefined]);
    held.jobs.length = 0;
  });
});

describe('createWebhookClient: problems thrown as WebhookApiError', () => {
  it('carries status, code, title, detail and each issue at its JSON pointer', async () => {
    const client = clientOf('BAD');
    const error = await thrown(() =>
      client.subscriptions.create({
        ...body(),
        headers: { Host: 'x.example.com' },
        rateLimit: 0,
      }),
    );
    expect(error).toBeInstanceOf(WebhookApiError);
    expect(error).toBeInstanceOf(ApiConventionsError);
    const problem = error as WebhookApiError;
    expect([problem.status, problem.code, problem.method]).toEqual([
      400,
      'invalid_subscription_request',
      'POST',
    ]);
    expect(problem.url).toBe(`${server.url}/v1/subscriptions`);
    expect(typeof problem.title).toBe('string');
    expect(typeof problem.detail).toBe('string');
    expect(problem.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'forbidden_header', path: '/headers/Host' }),
        expect.objectContaining({ code: 'invalid_rate_limit', path: '/rateLimit' }),
      ]),
    );
    expect(problem.message).toContain('invalid_subscription_request');
  });

  it('names the query parameter of a bad filter, the 404 of an unknown message, the 409 of a disabled replay, the 401 of no identity', async () => {
    const client = clientOf('BAD');
    const sub = await client.subscriptions.create(body());
    const filter = await thrown(() => all(client.auditLogs({ since: 'yesterday' })));
    expect(filter).toMatchObject({ status: 400, code: 'invalid_query', parameter: 'since' });

    const message = await thrown(() => client.messages.replay('msg_nobody'));
    expect(message).toMatchObject({ status: 404, code: 'message_not_found' });

    await client.subscriptions.update(sub.id, { status: 'disabled' });
    const disabled = await thrown(() =>
      client.subscriptions.replay(sub.id, { since: new Date(START) }),
    );
    expect(disabled).toMatchObject({ status: 409, code: 'subscription_disabled' });

    const badSince = await thrown(() =>
      clientOf('BAD').subscriptions.replay(sub.id, { since: 'soon' }),
    );
    expect(badSince).toMatchObject({ status: 400, code: 'invalid_replay' });
    expect((badSince as WebhookApiError).errors[0]?.path).toBe('/since');

    const anonymous = createWebhookClient({ baseUrl: server.url });
    const unauthenticated = await thrown(() => all(anonymous.subscriptions.list()));
    expect(unauthenticated).toMatchObject({ status: 401, code: 'unauthenticated' });
  });

  it('is network_error when no answer comes and invalid_response for an answer that is no problem', async () => {
    const refused = createWebhookClient({
      baseUrl: 'https://api.example.com',
      fetch: async () => {
        throw new TypeError('fetch failed');
      },
    });
    const network = await thrown(() => refused.subscriptions.get('x'));
    expect(network).toMatchObject({ code: 'network_error', status: undefined });
    expect((network as Error).cause).toBeInstanceOf(TypeError);

    const proxy = createWebhookClient({
      baseUrl: 'https://api.example.com/base/',
      fetch: async () => new Response('<html>Bad gateway</html>', { status: 502 }),
    });
    const gateway = await thrown(() => proxy.subscriptions.get('x'));
    expect(gateway).toMatchObject({ code: 'invalid_response', status: 502, errors: [] });
    expect((gateway as WebhookApiError).url).toBe(
      'https://api.example.com/base/v1/subscriptions/x',
    );

    const notJson = createWebhookClient({
      baseUrl: 'https://api.example.com',
      fetch: async () => new Response('ok', { status: 200 }),
    });
    expect(await thrown(() => notJson.subscriptions.get('x'))).toMatchObject({
      code: 'invalid_response',
      status: 200,
    });
  });

  it('gives an abort its own reason back', async () => {
    const controller = new AbortController();
    controller.abort(new Error('left the page'));
    const error = await thrown(() =>
      clientOf('ACME').subscriptions.get('x', { signal: controller.signal }),
    );
    expect(isWebhookApiError(error)).toBe(false);
    expect((error as Error).message).toBe('left the page');
  });

  it('pins the catalogue of its own codes, and its guard works across copies of the package', () => {
    expect([...webhookApiErrorCodes]).toEqual([
      'network_error',
      'invalid_response',
      'rate_limited',
    ]);
    const error = new WebhookApiError('subscription_not_found', 'x', {
      method: 'GET',
      url: 'http://a/',
      status: 404,
    });
    expect(isWebhookApiError(error)).toBe(true);
    expect(error.errors).toEqual([]);
    const foreign = Object.assign(new Error('x'), {
      name: 'WebhookApiError',
      code: 'network_error',
      [Symbol.for('api-conventions.error')]: true,
    });
    expect(isWebhookApiError(foreign)).toBe(true);
    expect(isWebhookApiError(new ApiConventionsError('x', 'y'))).toBe(false);
  });
});

describe('createWebhookClient: the service behind a limiter', () => {
  const opened: Array<{ server: StartedServer; made: ServiceSetup }> = [];
  afterEach(async () => {
    for (const open of opened.splice(0)) {
      await open.server.close();
      await open.made.service.close();
    }
  });
  async function limited() {
    const clock = new FakeClock(START);
    const limiter = createLimiter({ policies: [window(2, '60s')], clock });
    const limitedMade = serviceSetup({ limiter, clock });
    const limitedServer = await listen(createServer(nodeFetchHandler(limitedMade.service)));
    opened.push({ server: limitedServer, made: limitedMade });
    return { clock, url: limitedServer.url };
  }

  it('waits out a 429 as its Retry-After asks, then answers', async () => {
    const { clock, url } = await limited();
    const slept: number[] = [];
    let token = 0;
    const client = createWebhookClient({
      baseUrl: url,
      // A function: made afresh for each request, as a renewed token would be.
      headers: () => {
        token++;
        return { 'x-account': 'ACME' };
      },
      retry: {
        clock,
        sleep: async (ms) => {
          slept.push(ms);
          clock.advance(ms);
        },
      },
    });
    for (let n = 0; n < 3; n++) await client.subscriptions.create(body(n));
    expect(slept).toHaveLength(1);
    expect(slept[0]).toBeGreaterThan(0);
    expect(slept[0]! % 1000).toBe(0);
    expect(slept[0]!).toBeLessThanOrEqual(60_000);
    expect(token).toBe(3);
    expect(await all(client.subscriptions.list())).toHaveLength(3);
  });

  it('throws rate_limited with status 429 once the retries are spent', async () => {
    const { url } = await limited();
    const client = createWebhookClient({
      baseUrl: url,
      headers: { 'x-account': 'ACME' },
      retry: { maxRetries: 0 },
    });
    await client.subscriptions.create(body(0));
    await client.subscriptions.create(body(1));
    const error = await thrown(() => all(client.subscriptions.list()));
    expect(error).toMatchObject({ name: 'WebhookApiError', code: 'rate_limited', status: 429 });
  });
});

describe('createWebhookClient: lists read to their end', () => {
  it('yields every subscription once, in creation order, whatever the page size', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 9 }),
        fc.integer({ min: 1, max: 4 }),
        async (count, pageSize) => {
          // Arrange: an account of its own per run, with `count` subscriptions.
          const client = clientOf(`PROP${run++}`);
          const ids: string[] = [];
          for (let n = 0; n < count; n++) ids.push((await client.subscriptions.create(body(n))).id);
          // Act
          const listed = await all(client.subscriptions.list({ pageSize }));
          // Assert: the oracle is the order of creation.
          expect(listed.map((s) => s.id)).toEqual(ids);
        },
      ),
      { numRuns: 15 },
    );
  });
});

describe('createWebhookClient: options and portability', () => {
  it('refuses a baseUrl that is not an absolute http(s) URL, and unknown options, before any request', () => {
    for (const options of [
      {},
      { baseUrl: '/v1' },
      { baseUrl: 'ftp://a.example.com' },
      { baseUrl: 'https://a', header: {} },
    ]) {
      expect(() => createWebhookClient(options as WebhookClientOptions)).toThrow(
        ConfigurationError,
      );
    }
    expect(() => createWebhookClient({ baseUrl: 'https://a', headers: 'x' as never })).toThrow(
      /headers must be/,
    );
    expect(() => createWebhookClient({ baseUrl: 'https://a', retry: 5 as never })).toThrow(
      /retry must be/,
    );
    expect(() => createWebhookClient({ baseUrl: 'https://a', retry: { maxRetries: -1 } })).toThrow(
      ConfigurationError,
    );
  });

  it('src/client imports no node: module of its own, so that it can run in browsers and workers', () => {
    const dir = resolve(import.meta.dirname, '../../src/client');
    for (const file of readdirSync(dir)) {
      expect(readFileSync(join(dir, file), 'utf8'), file).not.toMatch(/from ['"]node:/);
    }
  });
});
