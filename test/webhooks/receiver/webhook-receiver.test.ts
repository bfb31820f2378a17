/**
 * createWebhookReceiver over real HTTP on 127.0.0.1, as the node listener and as the fetch
 * handler behind the library's own bridge: verification (v1 and v1a), the problem answers, one
 * handle per message id (duplicates, concurrent deliveries, a failed handle retried), and the
 * tolerance on a fake clock. Deliveries are signed with the library's signWebhook.
 */
import { createServer } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFetchHandler } from '../../../src/adapters/node.js';
import {
  createWebhookReceiver,
  FakeClock,
  generateWebhookKeyPair,
  generateWebhookSecret,
  isConfigurationError,
  memorySeenStore,
  type ReceivedWebhook,
  signWebhook,
  type WebhookReceiver,
  type WebhookReceiverOptions,
  webhookReceiverProblemCodes,
} from '../../../src/index.js';
import type { StartedServer } from '../../support/adapter-suite.js';
import { listen } from '../../support/listen.js';
import { thrown } from '../../support/thrown.js';

const T = 1_700_000_000;
const secret = generateWebhookSecret();
const pair = generateWebhookKeyPair();

/** A receiver whose handle records what it got; `gate` holds handle until the test lets it go. */
function recording(options: Partial<WebhookReceiverOptions> = {}) {
  const handled: ReceivedWebhook[] = [];
  const clock = new FakeClock(T * 1000);
  let outcome: (delivery: ReceivedWebhook) => unknown = () => undefined;
  const receiver = createWebhookReceiver({
    secrets: secret,
    publicKeys: pair.publicKey,
    clock,
    onError: () => undefined,
    handle: async (delivery) => {
      handled.push(delivery);
      return outcome(delivery);
    },
    ...options,
  });
  return {
    receiver,
    handled,
    clock,
    setOutcome: (next: typeof outcome) => {
      outcome = next;
    },
  };
}

/** The two ways to serve a receiver over node:http. */
const MOUNTS = {
  'node listener': (receiver: WebhookReceiver) => createServer(receiver.node),
  'fetch handler through nodeFetchHandler': (receiver: WebhookReceiver) =>
    createServer(nodeFetchHandler(receiver)),
};

/** A signed delivery's request init. */
function delivery(
  id: string,
  body: string,
  keys: string | readonly string[] = secret,
  timestamp = T,
): { method: string; headers: Record<string, string>; body: string } {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signWebhook({ id, timestamp, body }, keys) },
    body,
  };
}

async function problemOf(response: Response): Promise<{ status: number; code: unknown }> {
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
  const body = (await response.json()) as { code: unknown; status: unknown };
  expect(body.status).toBe(response.status);
  return { status: response.status, code: body.code };
}

for (const [mount, serve] of Object.entries(MOUNTS)) {
  describe(`createWebhookReceiver, ${mount}`, () => {
    const r = recording();
    let server: StartedServer;
    beforeAll(async () => {
      server = await listen(serve(r.receiver));
    });
    afterAll(() => server.close());
    const post = (init: ReturnType<typeof delivery>) => fetch(`${server.url}/webhooks`, init);

    it('answers 200 after handle ran with the parsed payload, for v1 and for v1a', async () => {
      const before = r.handled.length;
      const v1 = await post(delivery('msg_v1', '{"type":"folio/created"}'));
      expect(v1.status).toBe(200);
      const v1a = await post(delivery('msg_v1a', '{"n":1}', pair.signingKey));
      expect(v1a.status).toBe(200);
      expect(r.handled.slice(before)).toEqual([
        {
          id: 'msg_v1',
          timestamp: T,
          payload: { type: 'folio/created' },
          body: '{"type":"folio/created"}',
        },
        { id: 'msg_v1a', timestamp: T, payload: { n: 1 }, body: '{"n":1}' },
      ]);
    });

    it('answers 401 invalid_signature for a bad or missing signature, and runs nothing', async () => {
      const before = r.handled.length;
      const stranger = delivery('msg_bad', '{}', generateWebhookSecret());
      expect(await problemOf(await post(stranger))).toEqual({
        status: 401,
        code: 'invalid_signature',
      });
      const tampered = { ...delivery('msg_bad', '{}'), body: '{ }' };
      expect(await problemOf(await post(tampered))).toEqual({
        status: 401,
        code: 'invalid_signature',
      });
      const unsigned = { method: 'POST', headers: {}, body: '{}' };
      expect(await problemOf(await post(unsigned))).toEqual({
        status: 401,
        code: 'invalid_signature',
      });
      // A v1a signature of another key pair: the public key in force does not verify it.
      const other = delivery('msg_bad', '{}', generateWebhookKeyPair().signingKey);
      expect(await problemOf(await post(other))).toEqual({
        status: 401,
        code: 'invalid_signature',
      });
      expect(r.handled.length).toBe(before);
    });

    it('answers 401 timestamp_out_of_tolerance past 300 s either way', async () => {
      const old = delivery('msg_old', '{}', secret, T - 301);
      expect(await problemOf(await post(old))).toEqual({
        status: 401,
        code: 'timestamp_out_of_tolerance',
      });
      const ahead = delivery('msg_ahead', '{}', secret, T + 301);
      expect((await problemOf(await post(ahead))).code).toBe('timestamp_out_of_tolerance');
      expect((await post(delivery('msg_edge', '{}', secret, T - 300))).status).toBe(200);
    });

    it('answers 400 invalid_json for a signed body that is not JSON', async () => {
      const response = await post(delivery('msg_text', 'not json'));
      expect(await problemOf(response)).toEqual({ status: 400, code: 'invalid_json' });
      expect(r.handled.some((d) => d.id === 'msg_text')).toBe(false);
    });

    it('answers a handled id 200 again without running handle', async () => {
      const first = await post(delivery('msg_dup', '{}'));
      const again = await post(delivery('msg_dup', '{}'));
      // A retry is signed anew, later, maybe with the other scheme: still the same message.
      r.clock.advance(60_000);
      const retry = await post(delivery('msg_dup', '{}', pair.signingKey, T + 60));
      r.clock.set(T * 1000);
      expect([first.status, again.status, retry.status]).toEqual([200, 200, 200]);
      expect(r.handled.filter((d) => d.id === 'msg_dup')).toHaveLength(1);
    });

    it('runs handle once for concurrent deliveries of one id; the others answer 409 and retry', async () => {
      let release: () => void = () => undefined;
      let started: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const began = new Promise<void>((resolve) => {
        started = resolve;
      });
      r.setOutcome((d) => {
        if (d.id !== 'msg_race') return undefined;
        started();
        return held;
      });
      const first = post(delivery('msg_race', '{}'));
      await began;
      const racing = await Promise.all([1, 2, 3].map(() => post(delivery('msg_race', '{}'))));
      for (const response of racing) {
        expect(await problemOf(response)).toEqual({ status: 409, code: 'delivery_in_progress' });
      }
      release();
      expect((await first).status).toBe(200);
      expect((await post(delivery('msg_race', '{}'))).status).toBe(200);
      expect(r.handled.filter((d) => d.id === 'msg_race')).toHaveLength(1);
      r.setOutcome(() => undefined);
    });

    it('answers 500 when handle throws, and lets the retry run it again', async () => {
      let failures = 1;
      r.setOutcome(() => {
        if (failures-- > 0) throw new Error('database down');
      });
      const failed = await post(delivery('msg_retry', '{}'));
      expect(await problemOf(failed)).toEqual({ status: 500, code: 'handler_failed' });
      expect((await post(delivery('msg_retry', '{}'))).status).toBe(200);
      expect((await post(delivery('msg_retry', '{}'))).status).toBe(200);
      expect(r.handled.filter((d) => d.id === 'msg_retry')).toHaveLength(2);
      r.setOutcome(() => undefined);
    });

    it('answers 405 to another method and 413 to a body over maxBodyBytes', async () => {
      const get = await fetch(`${server.url}/webhooks`);
      expect(await problemOf(get)).toEqual({ status: 405, code: 'method_not_allowed' });
      expect(get.headers.get('allow')).toBe('POST');
      const big = await post(delivery('msg_big', JSON.stringify('x'.repeat(1_048_577))));
      expect(await problemOf(big)).toEqual({ status: 413, code: 'body_too_large' });
    });
  });
}

describe('createWebhookReceiver, the step', () => {
  const headers = (id: string, body: string, timestamp: number) =>
    signWebhook({ id, timestamp, body }, secret);

  it('accepts a delivery iff its timestamp is within toleranceSeconds of the clock (fake clock)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 3600 }),
        fc.integer({ min: -4000, max: 4000 }),
        async (tolerance, skew) => {
          // Arrange
          const { receiver } = recording({
            toleranceSeconds: tolerance,
            seenTtlSeconds: Math.max(1, 2 * tolerance),
          });
          const body = '{}';
          // Act
          const answer = await receiver.receive(
            Buffer.from(body),
            headers('msg_t', body, T + skew),
          );
          // Assert
          const expected = Math.abs(skew) <= tolerance ? 200 : 401;
          expect(answer.status).toBe(expected);
          if (expected === 401) {
            expect(JSON.parse(answer.body).code).toBe('timestamp_out_of_tolerance');
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('runs handle for an id until it first succeeds, never after (any order of deliveries and failures)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            id: fc.constantFrom('a', 'b', 'c'),
            fails: fc.boolean(),
            wait: fc.integer({ min: 0, max: 120_000 }),
          }),
          { maxLength: 40 },
        ),
        async (steps) => {
          // Arrange
          const { receiver, clock, setOutcome } = recording({ seenTtlSeconds: 86_400 });
          const succeeded = new Map<string, number>();
          let fail = false;
          setOutcome((d) => {
            if (fail) throw new Error('no');
            succeeded.set(d.id, (succeeded.get(d.id) ?? 0) + 1);
          });
          for (const step of steps) {
            // Act
            clock.advance(step.wait);
            const at = Math.floor(clock.now() / 1000);
            fail = step.fails;
            const done = succeeded.has(step.id);
            const answer = await receiver.receive(Buffer.from('{}'), headers(step.id, '{}', at));
            // Assert: a handled id answers 200 unrun; else 200 iff this handle succeeded.
            expect(answer.status).toBe(done || !step.fails ? 200 : 500);
          }
          for (const count of succeeded.values()) expect(count).toBe(1);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('forgets a handled id after seenTtlSeconds, on the fake clock', async () => {
    const { receiver, clock, handled } = recording({ seenTtlSeconds: 600 });
    const send = () => {
      const at = Math.floor(clock.now() / 1000);
      return receiver.receive(Buffer.from('{}'), headers('msg_ttl', '{}', at));
    };
    await send();
    clock.advance(599_999);
    await send();
    expect(handled).toHaveLength(1);
    clock.advance(1);
    await send();
    expect(handled).toHaveLength(2);
  });

  it('answers 503 when the seen-store fails, and 200 once handle ran even if marking failed', async () => {
    const errors: string[] = [];
    const broken = recording({
      seen: {
        claim: () => Promise.reject(new Error('down')),
        complete: () => undefined,
        release: () => undefined,
      },
      onError: (event) => errors.push(event.phase),
    });
    const answer = await broken.receiver.receive(Buffer.from('{}'), headers('m', '{}', T));
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).code).toBe('seen_store_unavailable');
    expect(broken.handled).toHaveLength(0);
    const unmarked = recording({
      seen: { ...memorySeenStore(), complete: () => Promise.reject(new Error('down')) },
      onError: (event) => errors.push(event.phase),
    });
    const ran = await unmarked.receiver.receive(Buffer.from('{}'), headers('m', '{}', T));
    expect(ran.status).toBe(200);
    expect(errors).toEqual(['seen', 'seen']);
  });

  it('refuses a bad configuration with typed errors', () => {
    const handle = () => undefined;
    const cases: [Partial<WebhookReceiverOptions>, string][] = [
      [{}, 'invalid_webhook_secret'],
      [{ secrets: 'whsec_nope' }, 'invalid_webhook_secret'],
      [{ publicKeys: pair.signingKey }, 'invalid_webhook_public_key'],
      [{ publicKeys: 'whpk_short' }, 'invalid_webhook_public_key'],
      [{ secrets: secret, toleranceSeconds: 600, seenTtlSeconds: 900 }, 'invalid_option'],
      [{ secrets: secret, seen: {} as never }, 'invalid_option'],
    ];
    for (const [options, code] of cases) {
      const error = thrown(() => createWebhookReceiver({ handle, ...options }));
      expect(isConfigurationError(error) && error.code).toBe(code);
    }
    const noHandle = thrown(() => createWebhookReceiver({ secrets: secret } as never));
    expect(isConfigurationError(noHandle) && noHandle.code).toBe('invalid_option');
  });

  it('pins its problem codes', () => {
    expect([...webhookReceiverProblemCodes]).toEqual([
      'invalid_signature',
      'timestamp_out_of_tolerance',
      'invalid_json',
      'method_not_allowed',
      'body_too_large',
      'body_unreadable',
      'delivery_in_progress',
      'handler_failed',
      'seen_store_unavailable',
    ]);
  });
});
