/**
 * A subscription's optional settings through the service's API: description, rateLimit, headers,
 * metadata and signatureType created, read, listed and changed by PATCH, every bad one a 400 at its
 * JSON pointer; and its headers sent with each delivery over real HTTP, a PATCH changing what the
 * next delivery sends.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createWebhookService,
  type DeliveryAttempt,
  httpTransport,
  MemorySubscriptionRepository,
  verifyWebhook,
  type WebhookServiceOptions,
} from '../../../src/index.js';
import { eventLog } from '../../support/demo-service.js';
import { forbiddenHeaderName, validHeaders } from '../../support/webhook-arbitraries.js';
import { startReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import {
  byAccountHeader,
  call,
  closingSetup,
  subscriptionBody,
} from '../../support/webhook-service.js';

const setup = closingSetup();

const SETTINGS = {
  description: 'Billing, production',
  rateLimit: 50,
  headers: { 'X-Team': 'billing', Authorization: 'Bearer t0k3n' },
  metadata: { owner: 'ops', region: 'eu' },
  signatureType: 'ed25519',
};

describe('the optional settings through the API', () => {
  it('create answers them; get and list return them; signatureType defaults to hmac-sha256', async () => {
    const { service } = setup();
    const created = await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(SETTINGS),
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject(SETTINGS);
    const read = await call(service, 'GET', `/v1/subscriptions/${created.body.id}`);
    expect(read.body).toMatchObject(SETTINGS);
    const plain = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    expect(plain.body.signatureType).toBe('hmac-sha256');
    for (const name of ['description', 'rateLimit', 'headers', 'metadata']) {
      expect(plain.body).not.toHaveProperty(name);
    }
    const list = await call(service, 'GET', '/v1/subscriptions');
    expect(list.body.items).toEqual([read.body, strip(plain.body)]);
  });

  it('PATCH sets, replaces and removes them; other fields keep them', async () => {
    const { service } = setup();
    const created = await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(SETTINGS),
    });
    const path = `/v1/subscriptions/${created.body.id}`;
    const replaced = await call(service, 'PATCH', path, {
      body: { headers: { 'X-Other': '1' }, rateLimit: 10_000, signatureType: 'hmac-sha256' },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.headers).toEqual({ 'X-Other': '1' });
    expect(replaced.body).toMatchObject({ rateLimit: 10_000, signatureType: 'hmac-sha256' });
    const moved = await call(service, 'PATCH', path, { body: { events: ['folio/*'] } });
    expect(moved.body).toMatchObject({
      description: SETTINGS.description,
      metadata: SETTINGS.metadata,
    });
    const removed = await call(service, 'PATCH', path, {
      body: { description: null, rateLimit: null, headers: null, metadata: null },
    });
    expect(removed.status).toBe(200);
    for (const name of ['description', 'rateLimit', 'headers', 'metadata']) {
      expect(removed.body).not.toHaveProperty(name);
    }
    expect((await call(service, 'GET', path)).body).toEqual(removed.body);
  });

  it('refuses bad settings with 400 and every issue at its pointer, on create and on PATCH', async () => {
    const { service } = setup();
    const bad = {
      description: 'd'.repeat(257),
      rateLimit: 0,
      headers: { Host: 'evil.example', 'X-A': 'a\r\nb' },
      metadata: { a: 1 },
      signatureType: 'rsa',
    };
    const expected = [
      ['/description', 'description_too_long'],
      ['/rateLimit', 'invalid_rate_limit'],
      ['/headers/Host', 'forbidden_header'],
      ['/headers/X-A', 'invalid_header_value'],
      ['/metadata/a', 'wrong_type'],
      ['/signatureType', 'invalid_signature_type'],
    ];
    const create = await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(bad),
    });
    expect(create.status).toBe(400);
    expect(create.headers.get('content-type')).toContain('application/problem+json');
    expect(create.body.errors.map((e: { path: string; code: string }) => [e.path, e.code])).toEqual(
      expected,
    );
    expect(create.body.detail).toContain('/headers/Host');
    const created = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const patch = await call(service, 'PATCH', `/v1/subscriptions/${created.body.id}`, {
      body: bad,
    });
    expect(patch.status).toBe(400);
    expect(patch.body.errors.map((e: { path: string; code: string }) => [e.path, e.code])).toEqual(
      expected,
    );
  });

  it('nasty inputs are 400s, never a 500', async () => {
    const { service } = setup();
    const raw = [
      '{"endpointUrl":"https://hooks.example.com/in","events":["folio/created"],"headers":{"__proto__":{"x":"y"}}}',
      '{"endpointUrl":"https://hooks.example.com/in","events":["folio/created"],"metadata":{"a":"\\u0000"}}',
      '{"endpointUrl":"https://hooks.example.com/in","events":["folio/created"],"description":"\\ud800"}',
      '{"endpointUrl":"https://hooks.example.com/in","events":["folio/created"],"rateLimit":1e400}',
      `{"endpointUrl":"https://hooks.example.com/in","events":["folio/created"],"headers":{"X-A":"${'a'.repeat(10_000)}"}}`,
    ];
    for (const body of raw) {
      const answer = await call(service, 'POST', '/v1/subscriptions', {
        raw: body,
        headers: { 'content-type': 'application/json' },
      });
      expect(answer.status).toBe(400);
      expect(answer.body.errors[0].path).toMatch(/^\/(headers|metadata|description|rateLimit)/);
    }
  });

  it('any valid headers object round-trips through create and get unchanged', async () => {
    const { service } = setup();
    await fc.assert(
      fc.asyncProperty(validHeaders, async (headers) => {
        // Act
        const created = await call(service, 'POST', '/v1/subscriptions', {
          body: subscriptionBody({ headers }),
        });
        const read = await call(service, 'GET', `/v1/subscriptions/${created.body.id}`);
        // Assert
        expect(created.status).toBe(201);
        expect(read.body.headers).toEqual(headers);
        await call(service, 'DELETE', `/v1/subscriptions/${created.body.id}`);
      }),
      { numRuns: 60 },
    );
  });

  it('any headers object with a forbidden name is refused with a 400 naming it', async () => {
    const { service } = setup();
    await fc.assert(
      fc.asyncProperty(validHeaders, forbiddenHeaderName, async (headers, name) => {
        fc.pre(!Object.keys(headers).some((n) => n.toLowerCase() === name.toLowerCase()));
        const answer = await call(service, 'POST', '/v1/subscriptions', {
          body: subscriptionBody({ headers: { ...headers, [name]: 'x' } }),
        });
        expect(answer.status).toBe(400);
        const pointer = `/headers/${name.replaceAll('~', '~0')}`;
        expect(answer.body.errors).toContainEqual(
          expect.objectContaining({ code: 'forbidden_header', path: pointer }),
        );
      }),
      { numRuns: 60 },
    );
  });
});

/** A subscription as listed: without the secret only create answers. */
function strip(view: Record<string, unknown>) {
  const { secret: _, ...rest } = view;
  return rest;
}

describe('the headers of a subscription over real HTTP', () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  async function start(delivery: Partial<NonNullable<WebhookServiceOptions['delivery']>> = {}) {
    const receiver: WebhookReceiver = await startReceiver();
    const attempts = eventLog<DeliveryAttempt>();
    const service = createWebhookService({
      repository: new MemorySubscriptionRepository(),
      identify: byAccountHeader,
      pollIntervalMs: 0,
      endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
      delivery: {
        transport: httpTransport({ allow: ['127.0.0.1'] }),
        onAttempt: attempts.push,
        ...delivery,
      },
    });
    closers.push(
      () => receiver.close(),
      () => service.close(),
    );
    return { receiver, service };
  }

  it('each delivery carries the subscription’s headers; a PATCH changes what the next one sends', async () => {
    const { receiver, service } = await start();
    const created = await call(service, 'POST', '/v1/subscriptions', {
      body: {
        endpointUrl: `${receiver.url}/in`,
        events: ['reservation/*'],
        headers: { 'X-Team': 'billing', Authorization: 'Bearer one', 'X-Spaced': 'a b' },
        metadata: { secretish: 'never sent' },
      },
    });
    expect(created.status).toBe(201);
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await receiver.waitFor(1);
    const first = receiver.received[0]!.headers;
    expect(first['x-team']).toBe('billing');
    expect(first.authorization).toBe('Bearer one');
    expect(first['x-spaced']).toBe('a b');
    expect(first['content-type']).toBe('application/json');
    expect(first['webhook-id']).toBeDefined();
    expect(first['webhook-signature']).toMatch(/^v1,/);
    expect(JSON.stringify(first)).not.toContain('never sent');
    expect(receiver.received[0]!.body).not.toContain('never sent');

    const patched = await call(service, 'PATCH', `/v1/subscriptions/${created.body.id}`, {
      body: { headers: { Authorization: 'Bearer two' } },
    });
    expect(patched.status).toBe(200);
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await receiver.waitFor(2);
    const second = receiver.received[1]!.headers;
    expect(second.authorization).toBe('Bearer two');
    expect(second).not.toHaveProperty('x-team');

    await call(service, 'PATCH', `/v1/subscriptions/${created.body.id}`, {
      body: { headers: null },
    });
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await receiver.waitFor(3);
    expect(receiver.received[2]!.headers).not.toHaveProperty('authorization');
  });

  it('a subscription’s header replaces the service-wide one of the same name, in any case', async () => {
    const { receiver, service } = await start({
      headers: { 'x-env': 'service', 'x-service-only': 'kept' },
    });
    await call(service, 'POST', '/v1/subscriptions', {
      body: {
        endpointUrl: `${receiver.url}/in`,
        events: ['reservation/*'],
        headers: { 'X-Env': 'subscription', 'User-Agent': 'acme-hooks/2' },
      },
    });
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await receiver.waitFor(1);
    // Both names sent would arrive joined ("service, subscription").
    const sent = receiver.received[0]!.headers;
    expect(sent['x-env']).toBe('subscription');
    expect(sent['x-service-only']).toBe('kept');
    expect(sent['user-agent']).toBe('acme-hooks/2');
  });

  it('a subscription created with ed25519 is delivered signed v1a, verified with its public key', async () => {
    const { receiver, service } = await start();
    const created = await call(service, 'POST', '/v1/subscriptions', {
      body: {
        endpointUrl: `${receiver.url}/in`,
        events: ['reservation/*'],
        signatureType: 'ed25519',
      },
    });
    expect(created.body.signatureType).toBe('ed25519');
    expect(created.body).not.toHaveProperty('secret');
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await receiver.waitFor(1);
    const [delivery] = receiver.received;
    expect(delivery!.headers['webhook-signature']).toMatch(/^v1a,\S+$/);
    const publicKeys = [created.body.publicKey];
    expect(verifyWebhook(delivery!.body, delivery!.headers, { publicKeys }).ok).toBe(true);
  });
});
