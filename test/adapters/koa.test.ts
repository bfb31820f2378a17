/** The Koa adapter against real Koa on 127.0.0.1 (the shared adapter suite). */
import { createServer } from 'node:http';
import Koa from 'koa';
import { koaRateLimit } from '../../src/adapters/koa.js';
import { adapterSuite, type StartServer } from '../support/adapter-suite.js';
import { listen } from '../support/listen.js';

const start: StartServer = async (options, app) => {
  const koa = new Koa();
  // Koa logs every handler error unless silenced; the test throws on purpose.
  koa.silent = true;
  koa.use(
    koaRateLimit<Koa.Context>({
      ...options,
      identify: (ctx) => app.identify((name) => ctx.get(name) || undefined),
      skip: (ctx) => ctx.path === '/health',
    }),
  );
  koa.use(async (ctx) => {
    if (ctx.path === '/hold') {
      app.held();
      await new Promise((resolve) => ctx.req.once('close', resolve));
      return;
    }
    if (ctx.path === '/throw') throw new Error('handler failed');
    ctx.body = 'ok';
  });
  return listen(createServer(koa.callback()));
};

adapterSuite('Koa', start);
