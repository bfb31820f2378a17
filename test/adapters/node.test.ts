/** The node:http adapter against a real node:http server on 127.0.0.1 (the shared adapter suite). */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { nodeRateLimit } from '../../src/adapters/node.js';
import { adapterSuite, type StartServer } from '../support/adapter-suite.js';
import { listen } from '../support/listen.js';

const start: StartServer = async (options, app) => {
  const limit = nodeRateLimit({
    ...options,
    identify: (req: IncomingMessage) => app.identify((name) => req.headers[name] as string),
    skip: (req) => req.url === '/health',
  });
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/hold') return app.held();
    if (req.url === '/throw') throw new Error('handler failed');
    res.end('ok');
  };
  const server = createServer((req, res) => limit(req, res, () => handle(req, res)));
  return listen(server);
};

adapterSuite('node:http', start);
