/**
 * The node:http adapter against a real node:http server on 127.0.0.1: the shared adapter suite, and
 * handlers that fail (rejecting before they answer, or throwing after the headers went out).
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { describe, expect, it } from 'vitest';
import { nodeRateLimit } from '../../src/adapters/node.js';
import {
  concurrency,
  createLimiter,
  FakeClock,
  type RateLimitErrorEvent,
} from '../../src/index.js';
import { adapterSuite, expectFullThrottle, type StartServer } from '../support/adapter-suite.js';
import { send } from '../support/http-client.js';
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

/** Read a response until it ends or its connection drops: status, body, whether it completed. */
function sendToClose(base: string, path: string) {
  return new Promise<{ status: number; body: string; complete: boolean }>((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('error', () => undefined);
      res.on('close', () => resolve({ status: res.statusCode ?? 0, body, complete: res.complete }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('node:http adapter: handlers that fail', () => {
  async function failingService() {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [concurrency(2, { name: 'throttle' })], clock });
    const events: RateLimitErrorEvent<IncomingMessage>[] = [];
    const limit = nodeRateLimit({
      limiter,
      identify: () => ({ clientId: 'c1', accountCode: 'ACME' }),
      onError: (event) => events.push(event),
    });
    const handle = async (req: IncomingMessage, res: ServerResponse) => {
      if (req.url === '/reject') throw new Error('database down');
      // Headers and part of the body are out when the handler fails.
      res.writeHead(200, { 'content-type': 'text/plain' });
      await new Promise((flushed) => res.write('first half', flushed));
      throw new Error('render failed');
    };
    const app = await listen(createServer((req, res) => limit(req, res, () => handle(req, res))));
    return { app, limiter, clock, events };
  }

  it('an async handler that rejects before answering gets a 500 with problem details, gives its lease back and is reported', async () => {
    const { app, limiter, clock, events } = await failingService();
    try {
      for (let i = 0; i < 3; i++) {
        const failed = await send(app.url, '/reject');
        expect(failed.status).toBe(500);
        expect(failed.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(JSON.parse(failed.body)).toMatchObject({ status: 500, code: 'internal_error' });
      }
      expectFullThrottle(limiter, clock, 'c1', 2);
      expect(events.map((e) => [e.phase, (e.error as Error).message])).toEqual([
        ['handler', 'database down'],
        ['handler', 'database down'],
        ['handler', 'database down'],
      ]);
    } finally {
      await app.close();
    }
  });

  it('a handler that fails after the headers were sent has its response cut short, gives its lease back and is reported', async () => {
    const { app, limiter, clock, events } = await failingService();
    try {
      for (let i = 0; i < 3; i++) {
        const cut = await sendToClose(app.url, '/late');
        expect(cut).toEqual({ status: 200, body: 'first half', complete: false });
      }
      expectFullThrottle(limiter, clock, 'c1', 2);
      expect(events.map((e) => [e.phase, (e.error as Error).message])).toEqual([
        ['handler', 'render failed'],
        ['handler', 'render failed'],
        ['handler', 'render failed'],
      ]);
    } finally {
      await app.close();
    }
  });
});
