/**
 * The default transport against a real local receiver: what it refuses before connecting, the
 * agents it sends through, and how it reads the receiver's answer.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpTransport, type WebhookTransport } from '../../src/index.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

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
});
