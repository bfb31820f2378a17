// Run from a scratch project that has the packed tarball installed: the public API works end to end.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import * as esm from 'api-conventions';
import * as esmClient from 'api-conventions/client';
import * as esmOtel from 'api-conventions/otel';
import * as esmQueueRedis from 'api-conventions/queue-redis';
import * as esmRedis from 'api-conventions/redis';

const require = createRequire(`${process.cwd()}/`);
const cjs = require('api-conventions');
const cjsClient = require('api-conventions/client');
const cjsRedis = require('api-conventions/redis');
const cjsQueueRedis = require('api-conventions/queue-redis');
const cjsOtel = require('api-conventions/otel');

// The redis subpath loads from ESM and CJS with no Redis client installed (both are optional peers).
for (const peer of ['ioredis', 'redis', 'bullmq']) {
  let found = true;
  try {
    require.resolve(peer);
  } catch {
    found = false;
  }
  if (found)
    throw new Error(`${peer} is installed in the smoke project; the check needs it absent`);
}
for (const [label, redis] of [
  ['esm', esmRedis],
  ['cjs', cjsRedis],
]) {
  if (typeof redis.RedisStore !== 'function' || typeof redis.ioredisClient !== 'function') {
    throw new Error(`${label}: api-conventions/redis exports`);
  }
  let code;
  try {
    new redis.RedisStore({ client: {} });
  } catch (error) {
    code = error.code;
  }
  if (code !== 'invalid_redis_client') throw new Error(`${label}: RedisStore without a client`);
}

// The queue-redis subpath loads without bullmq (an optional peer, passed in by the user).
for (const [label, queueRedis] of [
  ['esm', esmQueueRedis],
  ['cjs', cjsQueueRedis],
]) {
  let code;
  try {
    queueRedis.createRedisDeliveryQueue({ bullmq: {}, connection: {} });
  } catch (error) {
    code = error.code;
  }
  if (code !== 'invalid_option')
    throw new Error(`${label}: createRedisDeliveryQueue without bullmq`);
}

for (const [label, lib] of [
  ['esm', esm],
  ['cjs', cjs],
]) {
  const problem = lib.problemDetails({ code: 'x', title: 'X', status: 400 });
  if (problem.status !== 400 || problem.type !== `${lib.DEFAULT_PROBLEM_TYPE_BASE}x`) {
    throw new Error(`${label}: problemDetails`);
  }
  const validate = lib.pageNumberValidator();
  const accepted = validate('pageNumber=2&pageSize=200');
  const refused = validate({ pageSize: '201' });
  if (!accepted.ok || accepted.value.pageSize !== 200 || refused.ok) {
    throw new Error(`${label}: pageNumberValidator`);
  }
  if (refused.problem.code !== 'page_size_too_large' || refused.problem.status !== 400) {
    throw new Error(`${label}: page_size_too_large problem`);
  }
  const codec = lib.createCursorCodec({ signingKey: 'k'.repeat(32) });
  const decoded = codec.decode(codec.encode({ after: 7 }));
  if (!decoded.ok || decoded.state.after !== 7) throw new Error(`${label}: cursor codec`);
  // Limits: a Development client gets 5 per second, then a 429 decision with a whole-second retry.
  const clock = new lib.FakeClock(0);
  const limiter = lib.createLimiter({ preset: lib.presets.byAccountType, clock });
  const ask = () =>
    limiter.check({
      clientId: 'c',
      accountCode: 'A',
      accountType: 'development',
      method: 'GET',
      path: '/x',
    });
  for (let i = 0; i < 5; i++) {
    const d = ask();
    if (!d.allowed) throw new Error(`${label}: limiter refused request ${i}`);
    d.release();
  }
  const sixth = ask();
  if (sixth.allowed || sixth.retryAfterSeconds !== 1 || sixth.policy.name !== 'global: 5 per 1 s') {
    throw new Error(
      `${label}: expected a 1 s refusal by "global: 5 per 1 s", got ${JSON.stringify({ allowed: sixth.allowed, retryAfterSeconds: sixth.retryAfterSeconds, policy: sixth.policy?.name })}`,
    );
  }
  // Webhooks: create a subscription into an index, then route an event to it.
  const index = new lib.SubscriptionIndex();
  const created = lib.createSubscription(
    {
      endpointUrl: 'https://hooks.example.com/in',
      events: ['reservation/*'],
      propertyIds: ['BER'],
    },
    'ACME',
    { index, generateId: () => 'sub-1' },
  );
  const matched = index.match({
    accountCode: 'ACME',
    kind: 'reservation/created',
    propertyId: 'BER',
  });
  const refusedSubscription = lib.createSubscription(
    { endpointUrl: 'https://0x7f.1/', events: ['*'] },
    'ACME',
  );
  if (created.status !== 201 || matched.length !== 1 || matched[0].id !== 'sub-1') {
    throw new Error(`${label}: createSubscription / SubscriptionIndex`);
  }
  // Delivery: sign with the Standard Webhooks test vector, verify it back.
  const vector = lib.signWebhook(
    { id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: 1614265330, body: '{"test": 2432232314}' },
    'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  );
  if (vector['webhook-signature'] !== 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=') {
    throw new Error(`${label}: signWebhook`);
  }
  const verdict = lib.verifyWebhook('{"test": 2432232314}', vector, {
    secrets: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    clock: new lib.FakeClock(1614265330 * 1000),
  });
  if (!verdict.ok) throw new Error(`${label}: verifyWebhook`);
  if (
    refusedSubscription.status !== 400 ||
    JSON.parse(refusedSubscription.response.body).errors.length !== 2
  ) {
    throw new Error(`${label}: subscription validation`);
  }
}

// The client subpath reads a list from a real local server, across a 429 with Retry-After.
let requests = 0;
const server = createServer((req, res) => {
  requests++;
  if (requests === 1) {
    res
      .writeHead(429, { 'retry-after': '1', 'content-type': 'text/plain' })
      .end('Too many requests');
    return;
  }
  const page = Number(new URL(req.url, 'http://x').searchParams.get('pageNumber'));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ items: page <= 2 ? [page * 10, page * 10 + 1] : [] }));
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/items`;
try {
  for (const [label, client] of [
    ['esm', esmClient],
    ['cjs', cjsClient],
  ]) {
    requests = 0;
    const waits = [];
    const fetch = client.createRetryingFetch({ sleep: async (ms) => void waits.push(ms) });
    const items = [];
    for await (const item of client.pageNumberItems({ url, pageSize: 2, fetch })) items.push(item);
    if (items.join() !== '10,11,20,21' || waits.join() !== '1000') {
      throw new Error(`${label}: client read ${items.join()} after waits ${waits.join()}`);
    }
  }
} finally {
  server.close();
}

// Every adapter subpath, from ESM and CJS, in front of its real framework (the frameworks are
// optional peers: they come from the repository's own node_modules, not from the tarball).
const repo = createRequire(new URL('../package.json', import.meta.url));
const express = repo('express');
const Fastify = repo('fastify');
const Koa = repo('koa');
const { Hono } = repo('hono');
const { createAdaptorServer } = repo('@hono/node-server');

const adapters = {
  node: (m, limiter, identify) =>
    createServer((req, res) =>
      m.nodeRateLimit({ limiter, identify })(req, res, () => res.end('ok')),
    ),
  express: (m, limiter, identify) => {
    const app = express();
    app.use(m.expressRateLimit({ limiter, identify }));
    app.use((_req, res) => res.send('ok'));
    return createServer(app);
  },
  fastify: async (m, limiter, identify) => {
    const app = Fastify();
    await app.register(m.fastifyRateLimit, { limiter, identify });
    app.get('/*', async () => 'ok');
    await app.ready();
    return app.server;
  },
  hono: (m, limiter, identify) => {
    const app = new Hono();
    app.use(m.honoRateLimit({ limiter, identify }));
    app.get('*', (c) => c.text('ok'));
    return createAdaptorServer({ fetch: app.fetch });
  },
  koa: (m, limiter, identify) => {
    const app = new Koa();
    app.use(m.koaRateLimit({ limiter, identify }));
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    return createServer(app.callback());
  },
};

for (const [name, build] of Object.entries(adapters)) {
  for (const [label, adapter] of [
    ['esm', await import(`api-conventions/${name}`)],
    ['cjs', require(`api-conventions/${name}`)],
  ]) {
    const limiter = esm.createLimiter({
      policies: [esm.window(1, '60s', { name: 'one a minute' })],
    });
    const app = await build(adapter, limiter, () => ({ clientId: 'c', accountCode: 'A' }));
    await new Promise((resolve) => app.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${app.address().port}/booking/v1/reservations`;
    try {
      const first = await fetch(base);
      const second = await fetch(base);
      const body = await second.text();
      if (
        first.status !== 200 ||
        second.status !== 429 ||
        !body.includes('Limit hit: one a minute.')
      ) {
        throw new Error(`${label} ${name}: answered ${first.status} then ${second.status} ${body}`);
      }
      if (!/^[1-9][0-9]*$/.test(second.headers.get('retry-after') ?? '')) {
        throw new Error(`${label} ${name}: Retry-After ${second.headers.get('retry-after')}`);
      }
    } finally {
      app.closeAllConnections();
      await new Promise((resolve) => app.close(resolve));
    }
  }
}

// The webhook client from the client subpath throws the service's problem as a WebhookApiError.
for (const [label, client] of [
  ['esm', esmClient],
  ['cjs', cjsClient],
]) {
  const webhooks = client.createWebhookClient({
    baseUrl: 'https://api.example.com',
    fetch: async () =>
      new Response(JSON.stringify({ status: 404, code: 'subscription_not_found', title: 'x' }), {
        status: 404,
        headers: { 'content-type': 'application/problem+json' },
      }),
  });
  const error = await webhooks.subscriptions.get('x').catch((caught) => caught);
  if (!client.isWebhookApiError(error) || error.code !== 'subscription_not_found') {
    throw new Error(`${label} createWebhookClient: ${error}`);
  }
}

// The pacing client from the client subpath spaces requests under a preset with a fake clock.
for (const [label, client] of [
  ['esm', esmClient],
  ['cjs', cjsClient],
]) {
  const clock = new esm.FakeClock(0);
  const pacer = client.createPacer({
    preset: esm.presets.development,
    clock,
    sleep: async (ms) => void clock.advance(ms),
  });
  const times = [];
  for (let i = 0; i < 6; i++) {
    const done = await pacer.acquire({ method: 'GET', url: 'https://api.example/x' });
    times.push(clock.now());
    done();
  }
  if (times.filter((t) => t === 0).length !== 5 || times[5] < 1_000) {
    throw new Error(`${label}: pacer sent at ${times.join()}`);
  }
}

// The otel subpath subscribes a meter to the channels that both builds publish on, and lets go.
for (const [label, otel] of [
  ['esm', esmOtel],
  ['cjs', cjsOtel],
]) {
  const added = [];
  const counter = { add: (value, attributes) => void added.push([value, attributes]) };
  const meter = {
    createCounter: () => counter,
    createHistogram: () => ({ record() {} }),
    createUpDownCounter: () => counter,
  };
  const stop = otel.registerMetrics({ meter });
  const lib = label === 'esm' ? esm : cjs;
  const limiter = lib.createLimiter({
    policies: [lib.window(1, '1s')],
    clock: new lib.FakeClock(0),
  });
  limiter.check({ clientId: 'c', accountCode: 'a', method: 'GET', path: '/x' });
  stop();
  limiter.check({ clientId: 'c', accountCode: 'a', method: 'GET', path: '/x' });
  if (added.length !== 1 || added[0][1].outcome !== 'admitted') {
    throw new Error(`${label} otel: recorded ${JSON.stringify(added)}`);
  }
}
