/** The Fastify plugin against real Fastify 5 on 127.0.0.1 (the shared adapter suite). */
import Fastify from 'fastify';
import { fastifyRateLimit } from '../../src/adapters/fastify.js';
import { adapterSuite, type StartServer } from '../support/adapter-suite.js';
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
