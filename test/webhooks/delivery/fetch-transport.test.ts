/**
 * The transport through fetch, for runtimes without node:http: what it refuses before sending,
 * what it sends, how it reads the answer, and that a deliverer takes it by default where
 * node:http is missing. The fetch is the test's own: nothing leaves the process.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createDeliverer,
  FakeClock,
  fetchTransport,
  isConfigurationError,
  RESPONSE_BODY_CAP,
  type WebhookTransport,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

interface Sent {
  readonly url: string;
  readonly init: RequestInit;
}

/** A fetch that records what it was asked and answers with `answer`. */
function recordingFetch(answer: (url: string, init: RequestInit) => Promise<Response> | Response) {
  const sent: Sent[] = [];
  const fetch = (async (input: URL | string, init: RequestInit = {}) => {
    sent.push({ url: String(input), init });
    return answer(String(input), init);
  }) as typeof globalThis.fetch;
  return { sent, fetch };
}

const post = (transport: WebhookTransport, url: string, timeoutMs = 5_000) =>
  transport({ url, headers: { 'content-type': 'application/json' }, body: '{"a":1}', timeoutMs });

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: { name: string; code: string; message: string }) => e,
  );

describe('fetchTransport', () => {
  it('POSTs the body with the headers, follows no redirect, and answers the status and headers', async () => {
    const { sent, fetch } = recordingFetch(
      () =>
        new Response('ok', {
          status: 302,
          headers: { 'content-type': 'text/plain', location: '/elsewhere', 'x-a': 'b' },
        }),
    );
    const answer = await post(fetchTransport({ fetch }), 'https://hooks.example.com/in');
    expect(answer).toEqual({
      status: 302,
      headers: { 'content-type': 'text/plain', location: '/elsewhere', 'x-a': 'b' },
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]?.url).toBe('https://hooks.example.com/in');
    expect(sent[0]?.init).toMatchObject({
      method: 'POST',
      body: '{"a":1}',
      redirect: 'manual',
      headers: { 'content-type': 'application/json' },
    });
  });

  it('refuses an address written in the URL that is not public, unless allowed, without sending', async () => {
    const { sent, fetch } = recordingFetch(() => new Response(null, { status: 204 }));
    const transport = fetchTransport({ fetch });
    for (const url of [
      'http://127.0.0.1/in',
      'https://10.1.2.3/in',
      'https://[::1]/in',
      'https://169.254.169.254/latest',
      'https://[::ffff:192.168.0.1]/in',
    ]) {
      const error = await failure(post(transport, url));
      expect(error?.name, url).toBe('ForbiddenAddressError');
    }
    expect(sent).toEqual([]);
    const allowed = fetchTransport({ fetch, allow: ['127.0.0.1'] });
    expect((await post(allowed, 'http://127.0.0.1:8080/in')).status).toBe(204);
    // A name is fetch's to resolve: sent as it is.
    expect((await post(transport, 'https://localhost.example/in')).status).toBe(204);
  });

  it('fails with connection_failed for what is no http(s) URL or a fetch that rejects, and timeout when the signal ran out', async () => {
    const { fetch } = recordingFetch((_url, init) => {
      if (init.signal?.aborted) throw new DOMException('timed out', 'TimeoutError');
      throw new TypeError('fetch failed');
    });
    const transport = fetchTransport({ fetch });
    expect(await failure(post(transport, 'not a url'))).toMatchObject({
      code: 'connection_failed',
    });
    expect(await failure(post(transport, 'ftp://hooks.example.com/in'))).toMatchObject({
      code: 'connection_failed',
      message: 'Cannot POST to ftp: URLs.',
    });
    expect(await failure(post(transport, 'https://hooks.example.com/in'))).toMatchObject({
      code: 'connection_failed',
      message: 'Could not deliver to hooks.example.com: fetch failed.',
    });
    // A signal that has run out by the time fetch looks at it: the attempt's timeout.
    const late = recordingFetch(async (_url, init) => {
      await new Promise<void>((resolve) => init.signal?.addEventListener('abort', () => resolve()));
      throw new DOMException('timed out', 'TimeoutError');
    });
    expect(
      await failure(post(fetchTransport({ fetch: late.fetch }), 'https://a.example/', 1)),
    ).toMatchObject({
      code: 'timeout',
      message: 'No answer from a.example within 1 ms.',
    });
  });

  it('reads a body up to the cap and cancels a longer one, announced or not', async () => {
    for (const size of [0, 10, RESPONSE_BODY_CAP, RESPONSE_BODY_CAP + 1, 4 * RESPONSE_BODY_CAP]) {
      for (const announce of [true, false]) {
        let pulled = 0;
        let cancelled = false;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (pulled >= size) {
              controller.close();
              return;
            }
            const chunk = Math.min(16 * 1024, size - pulled);
            pulled += chunk;
            controller.enqueue(new Uint8Array(chunk));
          },
          cancel() {
            cancelled = true;
          },
        });
        const headers: Record<string, string> = announce ? { 'content-length': String(size) } : {};
        const { fetch } = recordingFetch(() => new Response(body, { status: 200, headers }));
        expect((await post(fetchTransport({ fetch }), 'https://a.example/')).status).toBe(200);
        const what = `${size} bytes, announced: ${announce}`;
        if (size <= RESPONSE_BODY_CAP) expect(cancelled, what).toBe(false);
        // A body still arriving past the cap is cancelled (one just past it may have ended first).
        if (size >= 2 * RESPONSE_BODY_CAP || (announce && size > RESPONSE_BODY_CAP)) {
          expect(cancelled, what).toBe(true);
        }
        // Read up to the cap and one chunk more; the stream pulls one more into its queue.
        expect(pulled).toBeLessThanOrEqual(RESPONSE_BODY_CAP + 2 * 16 * 1024);
      }
    }
  });

  it('refuses options it does not know, a bad allow-list entry or a fetch that is no function', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<unknown>(
          { alow: [] },
          { allow: ['not an address'] },
          { fetch: 'fetch' },
          'options',
        ),
        (options) => {
          expect(isConfigurationError(thrown(() => fetchTransport(options as never)))).toBe(true);
        },
      ),
    );
  });
});

describe('the deliveries’ default transport', () => {
  it('is fetchTransport where the runtime has no node:http, sending through the global fetch', async () => {
    vi.spyOn(process, 'getBuiltinModule').mockImplementation((() => undefined) as never);
    const { sent, fetch } = recordingFetch(() => new Response(null, { status: 204 }));
    vi.stubGlobal('fetch', fetch);
    const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
    const deliverer = createDeliverer({
      secrets: () => ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      clock,
    });
    const step = await deliverer.attempt({
      id: 'msg_1',
      subscriptionId: 'sub_1',
      endpointUrl: 'https://hooks.example.com/in',
      body: '{}',
      attempts: 0,
    });
    expect(step.done && step.report.outcome).toBe('delivered');
    expect(sent.map(({ url }) => url)).toEqual(['https://hooks.example.com/in']);
    expect(new Headers(sent[0]?.init.headers).get('webhook-signature')).toMatch(/^v1,/);
  });
});
