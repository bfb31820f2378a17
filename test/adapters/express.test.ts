/** The Express adapter against real Express 5 on 127.0.0.1 (the shared adapter suite). */
import { createServer } from 'node:http';
import express, { type Request } from 'express';
import { expressRateLimit } from '../../src/adapters/express.js';
import { adapterSuite, type StartServer } from '../support/adapter-suite.js';
import { listen } from '../support/listen.js';

const start: StartServer = async (options, app) => {
  const server = express();
  server.use(
    expressRateLimit({
      ...options,
      identify: (req: Request) => app.identify((name) => req.get(name)),
      skip: (req) => req.path === '/health',
    }),
  );
  server.get('/hold', () => app.held());
  server.get('/throw', () => {
    throw new Error('handler failed');
  });
  server.use((_req, res) => {
    res.type('text/plain').send('ok');
  });
  return listen(createServer(server));
};

adapterSuite('Express', start);
