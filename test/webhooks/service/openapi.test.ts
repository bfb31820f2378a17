import { Validator } from '@seriousme/openapi-schema-validator';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  createLimiter,
  defineEventCatalog,
  FakeClock,
  webhookServiceOpenApi,
  webhookServiceProblemCodes,
  window,
} from '../../../src/index.js';
import { routeTable } from '../../../src/webhooks/service/routes.js';
import { checkAnswer } from '../../support/openapi-check.js';
import { call, closingSetup, START } from '../../support/webhook-service.js';

const setup = closingSetup();

// biome-ignore lint/suspicious/noExplicitAny: the document is read as JSON
type Doc = any;

async function expectValid(document: object): Promise<void> {
  const result = await new Validator().validate(document as Record<string, unknown>);
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
}

/** Every `{ path, method }` the document lists. */
function operationsOf(document: Doc): string[] {
  return Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(
    ([path, item]) =>
      Object.keys(item)
        .filter((key) => key !== 'parameters')
        .map((method) => `${method.toUpperCase()} ${path}`),
  );
}

/** Every problem code the document says some answer can carry. */
function codesOf(document: Doc): Set<string> {
  const codes = new Set<string>();
  const visit = (value: unknown): void => {
    if (typeof value !== 'object' || value === null) return;
    const { code } = (value as { properties?: { code?: { enum?: string[] } } }).properties ?? {};
    for (const name of code?.enum ?? []) codes.add(name);
    for (const inner of Object.values(value)) visit(inner);
  };
  visit(document.paths);
  visit(document.components.responses);
  return codes;
}

const parameter = (document: Doc, name: string) => document.components.parameters[name].schema;

describe('webhookServiceOpenApi: the webhook service OpenAPI 3.1 document', () => {
  it('is a valid OpenAPI 3.1 document for the default options, a base path, a catalog and a limiter', async () => {
    await expectValid(webhookServiceOpenApi());
    const based = webhookServiceOpenApi({ basePath: '/webhooks' });
    await expectValid(based);
    expect(based.servers).toEqual([{ url: '/webhooks' }]);
    const catalog = defineEventCatalog({ folio: ['created', 'closed'], reservation: '*' });
    const limiter = createLimiter({ policies: [window(3, '60s')], clock: new FakeClock(START) });
    await expectValid(webhookServiceOpenApi({ basePath: '/a/b', catalog, limiter }));
  });

  it('property: for any base path, body size and subscription limit, the document is valid, served where the service serves it, and tells those values', async () => {
    // Dot segments are refused as a base path (a URL's path never holds one).
    const segment = fc
      .stringMatching(/^[A-Za-z0-9._~-]{1,12}$/)
      .filter((part) => part !== '.' && part !== '..');
    await fc.assert(
      fc.asyncProperty(
        fc.array(segment, { maxLength: 3 }).map((parts) => parts.map((p) => `/${p}`).join('')),
        fc.integer({ min: 1, max: 2 ** 30 }),
        fc.integer({ min: 1, max: 100_000 }),
        async (basePath, maxBodyBytes, maxSubscriptionsPerAccount) => {
          const options = { basePath, maxBodyBytes, maxSubscriptionsPerAccount };
          const document: Doc = webhookServiceOpenApi(options);
          await expectValid(document);
          expect(document.servers).toEqual([{ url: basePath === '' ? '/' : basePath }]);
          const body = document.paths['/v1/subscriptions'].post.requestBody.description;
          expect(body).toContain(`${maxBodyBytes} bytes`);
          expect(document.components.schemas.SubscriptionRequest.description).toContain(
            `${maxSubscriptionsPerAccount} subscriptions`,
          );
          const { service } = setup(options);
          const served = await service.fetch(
            new Request(`http://api.test${basePath}/v1/openapi.json`),
          );
          expect(served.status).toBe(200);
          expect(await served.json()).toEqual(document);
          await service.close();
        },
      ),
      { numRuns: 15 },
    );
  });

  it('lists every route of the route table, and no other', () => {
    const document = webhookServiceOpenApi();
    const listed = operationsOf(document);
    const table = routeTable.map((route) => `${route.method} ${route.path}`);
    expect([...listed].sort()).toEqual([...table].sort());
    expect(new Set(listed).size).toBe(listed.length);
  });

  it('holds every problem code the service answers', () => {
    const codes = codesOf(webhookServiceOpenApi());
    for (const code of webhookServiceProblemCodes) expect(codes).toContain(code);
    for (const code of ['invalid_subscription_request', 'page_size_too_large', 'limit_too_large']) {
      expect(codes).toContain(code);
    }
  });

  it('tells the page sizes of the specification: business data 20 by default, 200 at most; analytical data 50 and 500', () => {
    const document: Doc = webhookServiceOpenApi();
    expect(parameter(document, 'pageSize')).toMatchObject({
      default: 20,
      maximum: 200,
      minimum: 1,
    });
    expect(parameter(document, 'limit')).toMatchObject({ default: 50, maximum: 500, minimum: 1 });
    expect(parameter(document, 'pageNumber')).toMatchObject({ minimum: 1 });
    expect(parameter(document, 'cursor').maxLength).toBeGreaterThan(0);
    const list = document.paths['/v1/subscriptions'].get.parameters.map((p: Doc) => p.$ref);
    expect(list).toEqual([
      '#/components/parameters/pageNumber',
      '#/components/parameters/pageSize',
    ]);
    const logs = document.paths['/v1/audit-logs'].get.parameters.map((p: Doc) => p.$ref);
    expect(logs).toEqual(
      ['limit', 'cursor', 'outcome', 'since', 'until'].map((n) => `#/components/parameters/${n}`),
    );
  });

  it('tells the documented limits of the subscription fields', () => {
    const document: Doc = webhookServiceOpenApi({ maxBodyBytes: 1000 });
    const request = document.components.schemas.SubscriptionRequest;
    expect(request.required).toEqual(['endpointUrl', 'events']);
    expect(request.properties.description.maxLength).toBe(256);
    expect(request.properties.rateLimit).toMatchObject({ minimum: 1, maximum: 10_000 });
    expect(request.properties.headers.maxProperties).toBe(20);
    expect(request.properties.signatureType.enum).toEqual(['hmac-sha256', 'ed25519']);
    const create = document.paths['/v1/subscriptions'].post;
    expect(create.requestBody.description).toContain('1000 bytes');
    expect(
      create.responses['409'].content['application/problem+json'].schema.properties.code.enum,
    ).toEqual(['subscription_limit_reached']);
  });

  it('names the events of a catalog, and the service own topic', () => {
    const catalog = defineEventCatalog({ folio: ['created'] });
    const document: Doc = webhookServiceOpenApi({ catalog });
    const items = document.components.schemas.SubscriptionRequest.properties.events.items;
    expect(items.enum).toContain('folio/created');
    expect(items.enum).toContain('folio/*');
    expect(items.enum.some((kind: string) => kind.startsWith('operational/'))).toBe(true);
  });

  it('refuses a bad option as createWebhookService does', () => {
    expect(() => webhookServiceOpenApi({ basePath: 'webhooks/' })).toThrow(ConfigurationError);
    expect(() => webhookServiceOpenApi({ maxBodyByte: 1 } as never)).toThrow(ConfigurationError);
  });

  it('is served at GET {basePath}/v1/openapi.json without identify, HEAD too; other methods need an identity', async () => {
    const identified: string[] = [];
    const { service } = setup({
      basePath: '/webhooks',
      identify: (request) => {
        identified.push(request.url);
        return undefined;
      },
    });
    const response = await service.fetch(new Request('http://api.test/webhooks/v1/openapi.json'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual(webhookServiceOpenApi({ basePath: '/webhooks' }));
    const head = await service.fetch(
      new Request('http://api.test/webhooks/v1/openapi.json', { method: 'HEAD' }),
    );
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    expect(identified).toEqual([]);
    const posted = await call(service, 'POST', '/webhooks/v1/openapi.json', { account: null });
    expect(posted.status).toBe(401);
    const elsewhere = await call(service, 'GET', '/v1/openapi.json', { account: null });
    expect(elsewhere.status).toBe(401);
  });

  it('is not counted by the limiter', async () => {
    const clock = new FakeClock(START);
    const limiter = createLimiter({ policies: [window(2, '60s')], clock });
    const { service } = setup({ limiter, clock });
    for (let i = 0; i < 5; i++) {
      expect((await call(service, 'GET', '/v1/openapi.json', { account: null })).status).toBe(200);
    }
    expect((await call(service, 'GET', '/v1/subscriptions')).status).toBe(200);
    expect((await call(service, 'GET', '/v1/subscriptions')).status).toBe(200);
    expect((await call(service, 'GET', '/v1/subscriptions')).status).toBe(429);
  });

  it('the check of the tests refuses an answer the document does not describe', async () => {
    const { service } = setup();
    const problem = (code: string, status: number) =>
      JSON.stringify({ type: `urn:x:${code}`, title: 'T', status, code });
    const json = 'application/json; charset=utf-8';
    const problemType = 'application/problem+json';
    const refused = [
      // A status the route does not answer.
      ['GET', '/v1/subscriptions', { status: 418, contentType: json, text: '{}' }],
      // A member the schema does not hold.
      [
        'GET',
        '/v1/subscriptions',
        {
          status: 200,
          contentType: json,
          text: '{"items":[],"pageNumber":1,"pageSize":20,"totalItems":0,"endOfData":true,"links":{"first":"/"},"extra":1}',
        },
      ],
      // A problem code the route does not answer.
      [
        'GET',
        '/v1/audit-logs',
        { status: 404, contentType: problemType, text: problem('subscription_not_found', 404) },
      ],
      // Another content type.
      ['GET', '/v1/subscriptions/x', { status: 404, contentType: 'text/plain', text: 'no' }],
      // A body where the document has none.
      ['DELETE', '/v1/subscriptions/x', { status: 204, contentType: null, text: '{}' }],
    ] as const;
    for (const [method, path, answer] of refused) {
      await expect(checkAnswer(service, method, path, answer), `${method} ${path}`).rejects.toThrow(
        /OpenAPI document|document's schema|document says|document has none/,
      );
    }
    await checkAnswer(service, 'GET', '/v1/subscriptions/x', {
      status: 404,
      contentType: problemType,
      text: problem('subscription_not_found', 404),
    });
    await checkAnswer(service, 'GET', '/nowhere', {
      status: 404,
      contentType: problemType,
      text: problem('route_not_found', 404),
    });
  });
});
