/**
 * The default transport against a real local receiver: what it refuses before connecting, the
 * agents it sends through, and how it reads the receiver's answer.
 */
import { createServer as createHttpServer, Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeliverer,
  generateWebhookSecret,
  httpTransport,
  isConfigurationError,
  ssrfGuard,
  type WebhookTransport,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';
import { startReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

const post = (transport: WebhookTransport, url: string) =>
  transport({ url, headers: { 'content-type': 'application/json' }, body: '{}', timeoutMs: 5_000 });

/** The transport's error, or undefined when it got an answer. */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: { code: string; message: string }) => e,
  );

/** A raw TCP server on 127.0.0.1 that hands each connection to `onConnection`. */
async function rawServer(onConnection: (socket: Socket) => void) {
  const sockets: Socket[] = [];
  const server: Server = createNetServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** An agent that counts the connections it opens and keeps their sockets. */
function countingAgent<A extends HttpAgent>(agent: A): A & { sockets: Socket[] } {
  const sockets: Socket[] = [];
  const open = (agent as unknown as { createConnection: (...args: unknown[]) => Socket })
    .createConnection;
  Object.assign(agent, {
    createConnection: (...args: unknown[]) => {
      const socket = open.apply(agent, args);
      sockets.push(socket);
      return socket;
    },
  });
  return Object.assign(agent, { sockets });
}

describe('httpTransport', () => {
  it('fails a URL that does not parse, or one that is not http or https, before connecting', async () => {
    const transport = httpTransport({ allow: ['127.0.0.1'] });
    const before = receiver.received.length;
    const notUrl = await failure(post(transport, 'hooks.example.com/in'));
    expect(notUrl).toMatchObject({
      code: 'connection_failed',
      message: '"hooks.example.com/in" is no URL.',
    });
    const ftp = await failure(post(transport, `ftp://127.0.0.1:${receiver.port}/in`));
    expect(ftp).toMatchObject({
      code: 'connection_failed',
      message: 'Cannot POST to ftp: URLs.',
    });
    expect(receiver.received.length).toBe(before);
  });

  it("sends through the agent given for the endpoint's scheme, https over TLS", async () => {
    const http = countingAgent(new HttpAgent());
    const https = countingAgent(new HttpsAgent());
    const transport = httpTransport({ allow: ['127.0.0.1'], agent: { http, https } });
    try {
      expect((await post(transport, `${receiver.url}/plain`)).status).toBe(204);
      expect([http.sockets.length, https.sockets.length]).toEqual([1, 0]);
      // The receiver speaks no TLS: the handshake fails, and nothing reaches it.
      const before = receiver.received.length;
      const tls = await failure(post(transport, `https://127.0.0.1:${receiver.port}/secure`));
      expect(tls?.code).toBe('connection_failed');
      expect([http.sockets.length, https.sockets.length]).toEqual([1, 1]);
      expect(receiver.received.length).toBe(before);
    } finally {
      http.destroy();
      https.destroy();
    }
  });

  it('joins a response header sent several times into one value', async () => {
    receiver.respond((_, res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.writeHead(200).end();
      return undefined;
    });
    try {
      const response = await post(httpTransport({ allow: ['127.0.0.1'] }), `${receiver.url}/in`);
      expect(response.headers['set-cookie']).toBe('a=1, b=2');
    } finally {
      receiver.respond(() => ({ status: 204 }));
    }
  });

  it('reports the status of a receiver that drops the connection in the middle of its body', async () => {
    receiver.respond((_, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('cut short', () => res.socket?.destroy());
      return undefined;
    });
    const http = countingAgent(new HttpAgent());
    try {
      const transport = httpTransport({ allow: ['127.0.0.1'], agent: { http } });
      expect((await post(transport, `${receiver.url}/in`)).status).toBe(200);
      // The connection ends after the answer: its error must not escape as an uncaught one.
      const socket = http.sockets[0]!;
      if (!socket.destroyed) await new Promise((closed) => socket.once('close', closed));
      await new Promise<void>((resolve) => setImmediate(resolve));
    } finally {
      receiver.respond(() => ({ status: 204 }));
      http.destroy();
    }
  });

  it('never follows a redirect: the 3xx is the answer, and nothing is sent to its Location', async () => {
    const transport = httpTransport({ allow: ['127.0.0.1'] });
    for (const status of [301, 302, 303, 307, 308]) {
      receiver.respond(() => ({
        status,
        headers: { location: `http://169.254.169.254/latest/meta-data?from=${status}` },
      }));
      const before = receiver.received.length;
      const response = await post(transport, `${receiver.url}/in`);
      expect(response.status).toBe(status);
      expect(receiver.received.length).toBe(before + 1);
    }
    receiver.respond(() => ({ status: 204 }));
  });

  it('answers at the headers of a body that never ends, and the timeout then closes the connection', async () => {
    let written = 0;
    let closed: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const server = createHttpServer((req, res) => {
      req.resume();
      res.on('close', () => closed());
      res.writeHead(200);
      const pour = () => {
        while (!res.destroyed) {
          written += 64 * 1024;
          if (!res.write(Buffer.alloc(64 * 1024))) {
            res.once('drain', pour);
            return;
          }
        }
      };
      pour();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      const transport = httpTransport({ allow: ['127.0.0.1'] });
      const response = await transport({
        url: `http://127.0.0.1:${port}/in`,
        headers: {},
        body: '{}',
        timeoutMs: 200,
      });
      expect(response.status).toBe(200);
      await done;
      expect(written).toBeGreaterThan(0);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reads at most about 64 KiB of a body that never ends or announces 1 GB, then closes the connection; the attempt is delivered', async () => {
    const CAP = 64 * 1024;
    for (const announced of [undefined, 1_000_000_000]) {
      // The receiver counts what it wrote until its connection closed, writing only as fast as
      // it is read (what the sockets buffer in between aside).
      let written = 0;
      let closed: () => void = () => undefined;
      const done = new Promise<void>((resolve) => {
        closed = resolve;
      });
      const server = createHttpServer((req, res) => {
        req.resume();
        res.on('close', () => closed());
        res.writeHead(200, announced === undefined ? {} : { 'content-length': String(announced) });
        const pour = () => {
          while (!res.destroyed) {
            written += 16 * 1024;
            if (!res.write(Buffer.alloc(16 * 1024))) {
              res.once('drain', pour);
              return;
            }
          }
        };
        pour();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      try {
        const deliverer = createDeliverer({
          secrets: () => [generateWebhookSecret()],
          transport: httpTransport({ allow: ['127.0.0.1'] }),
          // Long: only the cap can close the connection during the test.
          timeoutMs: 600_000,
        });
        const step = await deliverer.attempt({
          id: 'msg_1',
          subscriptionId: 'sub',
          endpointUrl: `http://127.0.0.1:${port}/in`,
          body: '{}',
          attempts: 0,
        });
        expect(step.report?.outcome).toBe('delivered');
        await done;
        // At most the cap read, plus what the two sockets' buffers held: far below what an
        // endless read would take.
        expect(written).toBeLessThan(CAP + 16 * 1024 * 1024);
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    }
  });

  it('reads a short body to its end and keeps the connection for the next delivery', async () => {
    const agent = countingAgent(new HttpAgent({ keepAlive: true }));
    const transport = httpTransport({ allow: ['127.0.0.1'], agent: { http: agent } });
    receiver.respond((_, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(1024));
      return undefined;
    });
    try {
      for (let i = 0; i < 3; i++)
        expect((await post(transport, `${receiver.url}/in`)).status).toBe(200);
      expect(agent.sockets).toHaveLength(1);
    } finally {
      receiver.respond(() => ({ status: 204 }));
      agent.destroy();
    }
  });

  it('times out a receiver that accepts the connection but never reads, or never sends its headers', async () => {
    const transport = httpTransport({ allow: ['127.0.0.1'] });
    const silent = await rawServer((socket) => socket.pause());
    const slow = await rawServer((socket) => socket.write('HTTP/1.1 200 OK\r\nx-slow: '));
    try {
      for (const [url, body] of [
        [silent.url, 'x'.repeat(10_000_000)],
        [slow.url, '{}'],
      ] as const) {
        const error = await failure(transport({ url, headers: {}, body, timeoutMs: 200 }));
        expect(error).toMatchObject({ code: 'timeout' });
      }
    } finally {
      await silent.close();
      await slow.close();
    }
  });

  it('fails with connection_failed when the receiver resets the connection mid-request', async () => {
    const reset = await rawServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
    try {
      const transport = httpTransport({ allow: ['127.0.0.1'] });
      const error = await failure(
        transport({ url: reset.url, headers: {}, body: '{}', timeoutMs: 2_000 }),
      );
      expect(error).toMatchObject({ code: 'connection_failed' });
    } finally {
      await reset.close();
    }
  });
});

describe('httpTransport options', () => {
  const AGENT = 'must be an http.Agent such as new https.Agent({ keepAlive: true })';
  it.each([
    [
      'a misspelt option',
      { alow: ['127.0.0.1'] },
      'httpTransport has no option "alow"; did you mean "allow"? Its options are allow, lookup, guard, agent.',
    ],
    [
      'a misspelt agent',
      { agent: { htps: new HttpsAgent() } },
      'agent has no option "htps"; did you mean "https"? Its options are http, https.',
    ],
    [
      'agents that are no object',
      { agent: 'keep-alive' },
      'agent must be an object such as { https: new https.Agent({ keepAlive: true }) }, got "keep-alive".',
    ],
    [
      'an agent that is no http.Agent',
      { agent: { http: {} } },
      `agent.http ${AGENT}, got an object.`,
    ],
    ['an agent that is null', { agent: { https: null } }, `agent.https ${AGENT}, got null.`],
    [
      'a guard without lookup()',
      { guard: { refusal: () => undefined } },
      'guard must be an SsrfGuard from ssrfGuard() with refusal() and lookup(), got an object.',
    ],
    [
      'a lookup that is no function',
      { lookup: 'dns' },
      'lookup must be a function that resolves as dns.lookup does with { all: true }, got "dns".',
    ],
    [
      'options that are an array',
      [],
      "httpTransport options must be an object such as { allow: ['127.0.0.1'] }, or left out, got an array.",
    ],
  ])('refuses %s with invalid_option, in the one wording', (_, options, message) => {
    const error = thrown(() => httpTransport(options as never));
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(message);
  });

  it('refuses an agent whose getter throws as no plain data', () => {
    const agent = Object.defineProperty({}, 'https', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    const error = thrown(() => httpTransport({ agent } as never));
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(
      'agent options must be plain data, got an object that threw when read.',
    );
  });

  it('refuses a bad allow-list entry with its own code, as ssrfGuard does', () => {
    for (const make of [
      () => httpTransport({ allow: ['127.0.0.1', 'localhost'] }),
      () => ssrfGuard({ allow: ['127.0.0.1', 'localhost'] }),
    ]) {
      const error = thrown(make);
      expect(isConfigurationError(error) && error.code).toBe('invalid_address_allow_list');
      expect((error as Error).message).toBe(
        'allow[1] must be an IP address or CIDR range such as 127.0.0.1 or 10.0.0.0/8, got "localhost".',
      );
    }
    const typo = thrown(() => ssrfGuard({ lookp: () => undefined } as never));
    expect(isConfigurationError(typo) && typo.code).toBe('invalid_option');
    expect((typo as Error).message).toBe(
      'ssrfGuard has no option "lookp"; did you mean "lookup"? Its options are allow, lookup.',
    );
  });
});
