/** The Hono adapter against real Hono 4 on @hono/node-server, 127.0.0.1 (the shared adapter suite). */
import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { honoRateLimit } from '../../src/adapters/hono.js';
import { adapterSuite, type StartServer } from '../support/adapter-suite.js';
import { listen } from '../support/listen.js';

const start: StartServer = async (options, app) => {
  const hono = new Hono();
  hono.use(
    honoRateLimit({
      ...options,
      identify: (c) => app.identify((name) => c.req.header(name)),
      skip: (c) => c.req.path === '/health',
    }),
  );
  hono.get('/hold', async (c) => {
    app.held();
    await new Promise((resolve) => c.req.raw.signal.addEventListener('abort', resolve));
    return c.text('gone');
  });
  hono.get('/throw', () => {
    throw new Error('handler failed');
  });
  hono.all('*', (c) => c.text('ok'));
  hono.onError((_error, c) => c.text('failed', 500));
  return listen(createAdaptorServer({ fetch: hono.fetch }) as Server);
};

adapterSuite('Hono', start);
