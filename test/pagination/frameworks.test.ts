/**
 * The pagination validators as services call them: a tiny list endpoint in Express 5, Fastify 5,
 * Koa 3, Hono 4 and node:http on 127.0.0.1, each validating the query its framework parsed and
 * answering the validator's problem details, called over real HTTP with one table of query strings.
 * The source of the query must not change the answer: every framework gives the same status, code
 * and page for the same query string.
 */
import { createServer, type Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { type Context, Hono, type HonoRequest } from 'hono';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCursorCodec,
  cursorValidator,
  type PaginationValidation,
  pageNumberValidator,
  problemResponse,
  type QueryInput,
} from '../../src/index.js';
import type { StartedServer } from '../support/adapter-suite.js';
import { keyA, keyForeign } from '../support/cursor-keys.js';
import { send } from '../support/http-client.js';
import { listen } from '../support/listen.js';

/** What an endpoint answers, whatever the framework. */
interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const codec = createCursorCodec<{ offset: number }>({ signingKey: keyA });
const validatePage = pageNumberValidator();
const validateCursor = cursorValidator({ codec });

function answer<T>(result: PaginationValidation<T>, page: (value: T) => unknown): Answer {
  if (!result.ok) return problemResponse(result.problem);
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(page(result.value)),
  };
}

/** `GET /items`: page-number pagination. */
function items(query: QueryInput): Answer {
  return answer(validatePage(query), (value) => value);
}

/** `GET /logs`: cursor pagination; the next cursor is bound to this request's filters. */
function logs(query: QueryInput): Answer {
  return answer(validateCursor(query), ({ limit, state }) => {
    const offset = state?.offset ?? 0;
    return { limit, offset, nextCursor: codec.encode({ offset: offset + limit }, { query }) };
  });
}

/** Where a service takes its query from: the framework and the expression it reads. */
interface QuerySource {
  readonly name: string;
  start(): Promise<StartedServer>;
}

function startExpress(parser: 'simple' | 'extended'): Promise<StartedServer> {
  const app = express();
  app.set('query parser', parser);
  app.get('/items', (req, res) => {
    const { status, headers, body } = items(req.query as QueryInput);
    res.status(status).set(headers).send(body);
  });
  app.get('/logs', (req, res) => {
    const { status, headers, body } = logs(req.query as QueryInput);
    res.status(status).set(headers).send(body);
  });
  return listen(createServer(app));
}

async function startFastify(): Promise<StartedServer> {
  const fastify = Fastify({ logger: false });
  const route = (handle: (query: QueryInput) => Answer) => {
    return async (request: FastifyRequest, reply: FastifyReply) => {
      const { status, headers, body } = handle(request.query as QueryInput);
      return reply.code(status).headers(headers).send(body);
    };
  };
  fastify.get('/items', route(items));
  fastify.get('/logs', route(logs));
  await fastify.ready();
  return listen(fastify.server, async () => {
    fastify.server.closeAllConnections();
    await fastify.close();
  });
}

function startKoa(): Promise<StartedServer> {
  const koa = new Koa();
  koa.silent = true;
  koa.use((ctx) => {
    const handle = ctx.path === '/items' ? items : ctx.path === '/logs' ? logs : undefined;
    if (handle === undefined) return;
    const { status, headers, body } = handle(ctx.query as QueryInput);
    ctx.status = status;
    ctx.set(headers);
    ctx.body = body;
  });
  return listen(createServer(koa.callback()));
}

function startHono(read: (req: HonoRequest) => QueryInput): Promise<StartedServer> {
  const hono = new Hono();
  const route = (handle: (query: QueryInput) => Answer) => {
    return (c: Context) => {
      const { status, headers, body } = handle(read(c.req));
      return new Response(body, { status, headers });
    };
  };
  hono.get('/items', route(items));
  hono.get('/logs', route(logs));
  return listen(createAdaptorServer({ fetch: hono.fetch }) as Server);
}

function startNode(): Promise<StartedServer> {
  return listen(
    createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const handle = url.pathname === '/items' ? items : logs;
      const { status, headers, body } = handle(url.searchParams);
      res.writeHead(status, headers).end(body);
    }),
  );
}

/** The sources that hand the validators the whole query, as the docs recommend for each framework. */
const sources: QuerySource[] = [
  { name: 'node:http new URL(req.url).searchParams', start: startNode },
  { name: 'Express 5 req.query (simple parser, the default)', start: () => startExpress('simple') },
  { name: 'Express 5 req.query (extended qs parser)', start: () => startExpress('extended') },
  { name: 'Fastify 5 request.query', start: startFastify },
  { name: 'Koa 3 ctx.query', start: startKoa },
  {
    name: 'Hono 4 new URL(c.req.url).searchParams',
    start: () => startHono((req) => new URL(req.url).searchParams),
  },
];

/** The outcome that must not depend on the source: status, problem code and content type, or the page. */
type Outcome = { status: number; code?: unknown; type?: string | undefined; page?: unknown };

async function call(server: StartedServer, target: string): Promise<Outcome> {
  const response = await send(server.url, target);
  const body = JSON.parse(response.body) as Record<string, unknown>;
  if (response.status === 200) return { status: 200, page: body };
  const type = String(response.headers['content-type']).split(';')[0];
  return { status: response.status, code: body.code, type };
}

const refused = (code: string): Outcome => ({
  status: 400,
  code,
  type: 'application/problem+json',
});

const started = new Map<string, StartedServer>();

beforeAll(async () => {
  for (const source of sources) started.set(source.name, await source.start());
});

afterAll(async () => {
  await Promise.all([...started.values()].map((server) => server.close()));
});

/** Call every source with one request target and expect the same outcome from each. */
async function expectEverySource(target: string, expected: Outcome): Promise<void> {
  const outcomes: Record<string, Outcome> = {};
  for (const [name, server] of started) outcomes[name] = await call(server, target);
  expect(outcomes).toEqual(Object.fromEntries(sources.map(({ name }) => [name, expected])));
}

const thirtyDigits = '123456789012345678901234567890';

/** Values every numeric parameter refuses as not_a_decimal_integer, as they appear in a URL. */
const notDecimal = [
  '-1',
  '1.5',
  '1e2',
  '+5', // a plus in a query string is a space
  '%2B5',
  '%205',
  '5%20',
  '0x10',
  '', // `pageSize=`
  '5%00',
];

describe('page-number validator behind every framework', () => {
  const accepted: [string, { pageNumber: number; pageSize: number }][] = [
    ['/items', { pageNumber: 1, pageSize: 20 }],
    ['/items?pageSize=200', { pageNumber: 1, pageSize: 200 }],
    ['/items?pageNumber=3&pageSize=007', { pageNumber: 3, pageSize: 7 }],
    ['/items?pageSize=1&status=a&status=b', { pageNumber: 1, pageSize: 1 }],
  ];
  it.each(accepted)('accepts %s the same everywhere', async (target, page) => {
    await expectEverySource(target, { status: 200, page });
  });

  const refusals: [string, string][] = [
    ['/items?pageSize=201', 'page_size_too_large'],
    ['/items?pageSize=0', 'page_size_too_small'],
    ['/items?pageNumber=0', 'page_number_too_small'],
    [`/items?pageSize=${thirtyDigits}`, 'page_size_too_large'],
    [`/items?pageNumber=${thirtyDigits}`, 'page_number_too_large'],
    ...notDecimal.map((value): [string, string] => [
      `/items?pageSize=${value}`,
      'not_a_decimal_integer',
    ]),
    ['/items?pageSize', 'not_a_decimal_integer'],
    ['/items?pageSize=1&pageSize=2', 'parameter_repeated'],
    ['/items?pageSize=5&pageSize=5', 'parameter_repeated'],
  ];
  it.each(refusals)('refuses %s with %s everywhere', async (target, code) => {
    await expectEverySource(target, refused(code));
  });
});

describe('cursor validator behind every framework', () => {
  const issue = (offset: number, query: string) => codec.encode({ offset }, { query });
  const open = issue(10, 'status=open');
  const [payload = '', signature = ''] = open.split('.');
  const foreign = createCursorCodec<{ offset: number }>({ signingKey: keyForeign }).encode(
    { offset: 10 },
    { query: 'status=open' },
  );
  const altered = `${issue(99, 'status=open').split('.')[0]}.${signature}`;

  const accepted: [string, { limit: number; offset: number }][] = [
    ['/logs', { limit: 50, offset: 0 }],
    ['/logs?limit=500', { limit: 500, offset: 0 }],
    [`/logs?status=open&limit=5&cursor=${open}`, { limit: 5, offset: 10 }],
  ];
  it.each(accepted)('accepts %s the same everywhere', async (target, page) => {
    const outcome: Outcome = { status: 200, page: expect.objectContaining(page) };
    await expectEverySource(target, outcome);
  });

  const refusals: [string, string][] = [
    ['/logs?limit=501', 'limit_too_large'],
    ['/logs?limit=0', 'limit_too_small'],
    [`/logs?limit=${thirtyDigits}`, 'limit_too_large'],
    ...notDecimal.map((value): [string, string] => [
      `/logs?limit=${value}`,
      'not_a_decimal_integer',
    ]),
    ['/logs?limit=1&limit=2', 'parameter_repeated'],
    ['/logs?cursor=', 'cursor_malformed'],
    ['/logs?cursor', 'cursor_malformed'],
    [`/logs?status=open&cursor=${payload}`, 'cursor_malformed'],
    [`/logs?status=open&cursor=${open.slice(0, -1)}`, 'cursor_malformed'],
    [`/logs?status=open&cursor=${altered}`, 'cursor_invalid_signature'],
    [`/logs?status=open&cursor=${foreign}`, 'cursor_invalid_signature'],
    [`/logs?status=closed&cursor=${open}`, 'cursor_query_mismatch'],
    [`/logs?cursor=${open}`, 'cursor_query_mismatch'],
    [`/logs?status=open&status=closed&cursor=${open}`, 'cursor_query_mismatch'],
    [`/logs?status=open&cursor=${open}&cursor=${open}`, 'parameter_repeated'],
  ];
  it.each(refusals)('refuses %s with %s everywhere', async (target, code) => {
    await expectEverySource(target, refused(code));
  });

  it('a cursor a framework issued is accepted by that framework for the same filters only', async () => {
    for (const [name, server] of started) {
      const first = await call(server, '/logs?status=open&limit=2');
      const { nextCursor } = first.page as { nextCursor: string };
      const next = await call(server, `/logs?limit=3&status=open&cursor=${nextCursor}`);
      const other = await call(server, `/logs?status=closed&limit=2&cursor=${nextCursor}`);
      expect({ name, next: next.page, other }).toEqual({
        name,
        next: expect.objectContaining({ limit: 3, offset: 2 }),
        other: refused('cursor_query_mismatch'),
      });
    }
  });
});

/**
 * The bracket forms: `qs` (Express's extended parser) reads `pageSize[]=5` as an array and
 * `pageSize[x]=5` as an object of `pageSize`, which the validators refuse; every other parser keeps
 * `pageSize[]` as a parameter of its own name, which is not `pageSize`, so the default (or the plain
 * value beside it) applies. Both answers are safe: no page is larger than the maximum.
 */
describe('bracket forms, which only qs reads as the parameter itself', () => {
  const qsParser = 'Express 5 req.query (extended qs parser)';
  const cases: [string, Outcome, Outcome][] = [
    [
      '/items?pageSize[]=5',
      refused('parameter_repeated'),
      { status: 200, page: { pageNumber: 1, pageSize: 20 } },
    ],
    [
      '/items?pageSize[x]=5',
      refused('parameter_not_a_string'),
      { status: 200, page: { pageNumber: 1, pageSize: 20 } },
    ],
    [
      '/items?pageSize=5&pageSize[]=6',
      refused('parameter_repeated'),
      { status: 200, page: { pageNumber: 1, pageSize: 5 } },
    ],
    [
      '/logs?limit[]=5',
      refused('parameter_repeated'),
      { status: 200, page: expect.objectContaining({ limit: 50 }) },
    ],
  ];
  it.each(cases)(
    '%s: refused by qs, the default or the plain value elsewhere',
    async (target, byQs, byOthers) => {
      for (const [name, server] of started) {
        expect({ name, outcome: await call(server, target) }).toEqual({
          name,
          outcome: name === qsParser ? byQs : byOthers,
        });
      }
    },
  );
});

/**
 * Query objects that lose part of the query before the validator sees it. The validator cannot
 * tell what is missing, so these answers differ from the table above: read the whole query instead
 * (`new URL(c.req.url).searchParams` in Hono, or the raw query string).
 */
describe('query objects that lose part of the query', () => {
  const partial: QuerySource[] = [
    { name: 'Hono 4 c.req.query()', start: () => startHono((req) => req.query()) },
    {
      name: 'Hono 4 c.req.queries()',
      start: () => startHono((req) => req.queries() as QueryInput),
    },
  ];
  const servers = new Map<string, StartedServer>();
  beforeAll(async () => {
    for (const source of partial) servers.set(source.name, await source.start());
  });
  afterAll(async () => {
    await Promise.all([...servers.values()].map((server) => server.close()));
  });
  const through = async (name: string, target: string) => {
    const server = servers.get(name) ?? started.get(name);
    if (server === undefined) throw new Error(`no server ${name}`);
    return call(server, target);
  };

  it("Hono's c.req.query() keeps only the first of a repeated parameter, which is then accepted", async () => {
    const target = '/items?pageSize=1&pageSize=2';
    expect(await through('Hono 4 c.req.query()', target)).toEqual({
      status: 200,
      page: { pageNumber: 1, pageSize: 1 },
    });
    expect(await through('Hono 4 new URL(c.req.url).searchParams', target)).toEqual(
      refused('parameter_repeated'),
    );
  });

  it("Hono's c.req.queries() hands every value over as an array, so every given parameter is repeated", async () => {
    expect(await through('Hono 4 c.req.queries()', '/items?pageSize=5')).toEqual(
      refused('parameter_repeated'),
    );
    expect(await through('Hono 4 c.req.queries()', '/items')).toEqual({
      status: 200,
      page: { pageNumber: 1, pageSize: 20 },
    });
  });

  it("Express's parsers drop every parameter after the 1000th, so a repeated one there is not seen", async () => {
    const target = `/items?${'x=1&'.repeat(1000)}pageSize=1&pageSize=2`;
    const outcomes: Record<string, Outcome> = {};
    for (const [name, server] of started) outcomes[name] = await call(server, target);
    const defaults = { status: 200, page: { pageNumber: 1, pageSize: 20 } };
    expect(outcomes).toEqual(
      Object.fromEntries(
        sources.map(({ name }) => [
          name,
          name.startsWith('Express') ? defaults : refused('parameter_repeated'),
        ]),
      ),
    );
  });
});
