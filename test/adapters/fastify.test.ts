/**
 * The Fastify plugin against real Fastify 5 on 127.0.0.1 (the shared adapter suite), and on
 * Fastify's HTTP/2 server without TLS.
 */
import { connect as connectHttp2 } from 'node:http2';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { fastifyRateLimit } from '../../src/adapters/fastify.js';
import { adapterSuite, type StartServer } from '../support/adapter-suite.js';
import { heldThrottle } from '../support/async-store.js';
import { closeSignal, resetWhileHeld } from '../support/http2.js';
import { listen } from '../support/listen.js';

const start: StartServer = async (options, app) => {
  const fastify = Fastify({ logger: false });
  await fastify.register(fastifyRateLimit, {
    ...options,
    identify: (request) => app.identify((name) => request.headers[name] as string | undefined),
    skip: (request) => request.url === '/health',
  });
  fastify.get('/hold', () => {
    app.held();
    return new Promise(() => undefined);
  });
  fastify.get('/throw', async () => {
    throw new Error('handler failed');
  });
  fastify.get('/*', async (_request, reply) => reply.type('text/plain').send('ok'));
  await fastify.ready();
  return listen(fastify.server, async () => {
    fastify.server.closeAllConnections();
    await fastify.close();
  });
};

adapterSuite('Fastify', start);

describe('Fastify plugin on HTTP/2', () => {
  it('a stream reset while an asynchronous store decides gets no handler, and its lease comes back', async () => {
    const { store, limiter } = heldThrottle();
    let handled = 0;
    const stream = closeSignal();
    const fastify = Fastify({ logger: false, http2: true });
    fastify.addHook('onRequest', (_request, reply, done) => {
      reply.raw.on('close', stream.seen);
      done();
    });
    await fastify.register(fastifyRateLimit, {
      limiter,
      identify: () => ({ clientId: 'c1', accountCode: 'ACME' }),
    });
    fastify.get('/hold', () => {
      handled++;
      return new Promise(() => undefined);
    });
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    const { port } = fastify.server.address() as AddressInfo;
    const client = connectHttp2(`http://127.0.0.1:${port}`);
    try {
      await resetWhileHeld(client, '/hold', store, stream.closed);
      expect(handled).toBe(0);
    } finally {
      client.close();
      await fastify.close();
    }
  });
});
