/**
 * The portable suite: what every supported runtime must do with the built package, as a user of
 * it would. It imports nothing itself: the runner of each runtime hands it the package's modules
 * (bundled from dist/ by test/support/runtimes.ts), so that the same cases run in Node, Bun, Deno
 * and workerd. Each case throws on the first thing that is not as expected.
 */
import type * as Hono from 'hono';
import type * as HonoAdapter from '../../src/adapters/hono.js';
import type * as Client from '../../src/client/index.js';
import type * as Root from '../../src/index.js';
import type * as Testing from '../../src/testing/index.js';

/** The modules the suite runs against. */
export interface PortableModules {
  readonly root: typeof Root;
  readonly testing: typeof Testing;
  readonly client: typeof Client;
  readonly honoAdapter: typeof HonoAdapter;
  readonly hono: typeof Hono;
}

/**
 * What a module makes when it is loaded: a Worker's global scope refuses timers, I/O and random
 * numbers, so what users make there (a limiter, a Hono app, the service, a receiver, a cursor
 * codec, a cipher of secrets at rest) must be made without any.
 */
export function makeAtLoad(modules: PortableModules) {
  const { root, hono, honoAdapter } = modules;
  const limiter = root.createLimiter({ preset: root.presets.byAccountType });
  const app = new hono.Hono();
  app.use(honoAdapter.honoRateLimit({ limiter, identify: () => LIVE }));
  app.get('/booking/v1/reservations', (c) => c.json({ items: [] }));
  const service = root.createWebhookService({
    repository: new root.MemorySubscriptionRepository(),
    identify: () => ({ clientId: 'app', accountCode: 'ACME' }),
    onWarning: () => {},
  });
  const receiver = root.createWebhookReceiver({ secrets: SECRET, handle: () => {} });
  const codec = root.createCursorCodec<{ after: string }>({ signingKey: 'k'.repeat(32) });
  const cipher = root.aesGcmSecretCipherAsync({ keys: [{ id: '2026-01', key: SECRET_KEY }] });
  return { app, service, receiver, codec, cipher };
}

/** What {@link makeAtLoad} made. */
export type MadeAtLoad = ReturnType<typeof makeAtLoad>;

/** The outcome of one case. */
export interface CaseResult {
  readonly name: string;
  readonly ok: boolean;
  readonly error?: string;
}

/** The marker before the results on a runner's output. */
export const RESULTS_MARKER = 'PORTABLE-SUITE-RESULTS ';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
// A key pair made once by generateWebhookKeyPair (its derivation needs node:crypto).
const SIGNING_KEY = 'whsk_CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=';
const PUBLIC_KEY = 'whpk_/RckOFqgx1tk+3jNYC+h2ZH96/drE8WO1wLqyDXp9hg=';
// 32 bytes (0 to 31), in base64: a key of the secrets at rest.
const SECRET_KEY = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=';
const LIVE = { clientId: 'app', accountCode: 'ACME', accountType: 'live' } as const;

/** Throw `what` unless the condition holds. */
export function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(what);
}

/** Throw unless the two are the same as JSON. */
export function same(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

type Case = readonly [
  name: string,
  run: (m: PortableModules, made: MadeAtLoad) => Promise<void> | void,
];

const CASES: readonly Case[] = [
  [
    'global scope: a limiter, a Hono app, the service, a receiver and a cursor codec made at load answer',
    async (_modules, { app, service, receiver, codec }) => {
      same((await app.request('http://localhost/booking/v1/reservations')).status, 200, 'the app');
      try {
        const listed = await service.fetch(new Request('https://api.example/v1/subscriptions'));
        same(listed.status, 200, 'the service');
      } finally {
        await service.close();
      }
      const unsigned = await receiver.fetch(
        new Request('https://a.example/hooks', { method: 'POST', body: '{}' }),
      );
      same(unsigned.status, 401, 'the receiver, to an unsigned delivery');
      const token = codec.encode({ after: 'log_1' });
      same(codec.decode(token), { ok: true, state: { after: 'log_1' } }, 'the codec');
    },
  ],
  [
    'limits: a Live client refused, with a Retry-After that is exact on a fake clock',
    ({ root, testing }) => {
      const clock = new testing.FakeClock(T0);
      const limiter = root.createLimiter({ preset: root.presets.byAccountType, clock });
      const request = { ...LIVE, method: 'GET', path: '/booking/v1/reservations' };
      let refusal: Root.Decision | undefined;
      for (let i = 0; i < 10_000 && refusal === undefined; i++) {
        const decision = limiter.check(request);
        if (decision.allowed) decision.release();
        else refusal = decision;
      }
      check(refusal !== undefined && !refusal.allowed, 'no refusal');
      const seconds = refusal.retryAfterSeconds;
      check(Number.isInteger(seconds) && seconds >= 1, `Retry-After ${seconds}`);
      clock.advance(seconds * 1000 - 1);
      check(!limiter.check(request).allowed, 'admitted a millisecond before the Retry-After');
      clock.advance(1);
      const again = limiter.check(request);
      check(again.allowed, 'refused at the Retry-After');
      again.release();
    },
  ],
  [
    'pagination: a page validated, a page size refused with its problem',
    ({ root }) => {
      const validate = root.pageNumberValidator();
      const page = validate(new URLSearchParams('pageNumber=2&pageSize=20'));
      check(page.ok, 'page 2 of 20 refused');
      same(page.value, { pageNumber: 2, pageSize: 20 }, 'the page');
      const tooLarge = validate('pageSize=501');
      check(!tooLarge.ok, 'a page size of 501 admitted');
      const answer = root.problemResponse(tooLarge.problem);
      same(answer.status, 400, 'the status');
      const cursors = root.cursorValidator();
      const first = cursors({ limit: '10' });
      check(first.ok && first.value.limit === 10, 'a first cursor page refused');
    },
  ],
  [
    'subscriptions: a subscription validated, stored and matched',
    ({ root }) => {
      const index = new root.SubscriptionIndex();
      const outcome = root.createSubscription(
        { endpointUrl: 'https://hooks.example.com/in', events: ['reservation/*'] },
        'ACME',
        { index },
      );
      same(outcome.response.status, 201, 'the answer');
      const matched = index.match({ accountCode: 'ACME', kind: 'reservation/created' });
      same(matched.length, 1, 'the subscriptions matched');
      same(index.match({ accountCode: 'ACME', kind: 'folio/created' }).length, 0, 'a folio');
      const refused = root.createSubscription(
        { endpointUrl: 'https://10.0.0.1/in', events: [] },
        'ACME',
        { index },
      );
      same(refused.response.status, 400, 'a private endpoint with no events');
    },
  ],
  [
    'signing: a delivery signed and verified with v1 (HMAC-SHA256)',
    async ({ root, testing }) => {
      const input = { id: 'msg_1', timestamp: T0 / 1000, body: '{"type":"reservation/created"}' };
      const headers = await root.signWebhookAsync(input, SECRET);
      // The test vector of the Standard Webhooks specification, the same on every runtime.
      const vector = await root.signWebhookAsync(
        { id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: 1614265330, body: '{"test": 2432232314}' },
        SECRET,
      );
      same(vector['webhook-signature'], 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=', 'v1');
      const clock = new testing.FakeClock(T0);
      const verdict = await root.verifyWebhookAsync(input.body, headers, {
        secrets: SECRET,
        clock,
      });
      same(verdict, { ok: true, id: 'msg_1', timestamp: T0 / 1000 }, 'the verdict');
      const tampered = await root.verifyWebhookAsync(`${input.body} `, headers, {
        secrets: SECRET,
        clock,
      });
      check(!tampered.ok && tampered.code === 'no_matching_signature', 'a changed body verified');
    },
  ],
  [
    'signing: a delivery signed with v1a (ed25519), verified and received',
    async ({ root, testing }) => {
      const body = '{"type":"reservation/created"}';
      const input = { id: 'msg_2', timestamp: T0 / 1000, body };
      const headers = await root.signWebhookAsync(input, [SIGNING_KEY, SECRET]);
      check(/^v1a,\S+ v1,\S+$/.test(headers['webhook-signature']), 'both signatures');
      const clock = new testing.FakeClock(T0);
      const verdict = await root.verifyWebhookAsync(body, headers, {
        publicKeys: PUBLIC_KEY,
        clock,
      });
      same(verdict, { ok: true, id: 'msg_2', timestamp: T0 / 1000 }, 'the verdict');
      const handled: string[] = [];
      const receiver = root.createWebhookReceiver({
        publicKeys: PUBLIC_KEY,
        clock,
        handle: ({ id }) => {
          handled.push(id);
        },
      });
      const post = (text: string) =>
        receiver.fetch(
          new Request('https://a.example/hooks', { method: 'POST', headers, body: text }),
        );
      same((await post(body)).status, 200, 'the receiver');
      same((await post(body)).status, 200, 'a duplicate');
      same((await post(`${body} `)).status, 401, 'a changed body');
      same(handled, ['msg_2'], 'handled once');
    },
  ],
  [
    'hono: an app answering 429 with Retry-After, and a client waiting it out',
    async ({ root, testing, client, honoAdapter, hono }) => {
      const clock = new testing.FakeClock(T0);
      const limiter = root.createLimiter({ preset: root.presets.byAccountType, clock });
      const app = new hono.Hono();
      app.use(honoAdapter.honoRateLimit({ limiter, identify: () => LIVE }));
      app.get('/booking/v1/reservations', (c) => c.json({ items: [] }));
      const url = 'http://localhost/booking/v1/reservations';
      let refused: Response | undefined;
      for (let i = 0; i < 1000 && refused === undefined; i++) {
        const response = await app.request(url);
        if (response.status === 429) refused = response;
        else same(response.status, 200, 'an admitted request');
      }
      check(refused !== undefined, 'no 429');
      const retryAfter = Number(refused.headers.get('retry-after'));
      check(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ${retryAfter}`);
      check(refused.headers.get('service-tracking-id') !== null, 'no tracking id');
      // The client waits exactly what it was told, on the same fake clock.
      const waits: number[] = [];
      const retrying = client.createRetryingFetch({
        fetch: async (input, init) => app.request(input as string, init),
        clock,
        sleep: async (ms) => {
          waits.push(ms);
          clock.advance(ms);
        },
      });
      const answer = await retrying(url);
      same(answer.status, 200, 'after the wait');
      same(waits, [retryAfter * 1000], 'the waits');
    },
  ],
  [
    'service: subscriptions (HMAC and ed25519) created, listed and deleted over fetch',
    async ({ root, testing }) => {
      const clock = new testing.FakeClock(T0);
      const service = root.createWebhookService({
        repository: new root.MemorySubscriptionRepository(),
        identify: (request) => ({
          clientId: 'app',
          accountCode: request.headers.get('x-account') ?? '',
        }),
        clock,
        onWarning: () => {},
        delivery: { transport: async () => ({ status: 204, headers: {} }) },
      });
      const call = (method: string, path: string, body?: unknown) =>
        service.fetch(
          new Request(`https://api.example${path}`, {
            method,
            headers: { 'x-account': 'ACME', 'content-type': 'application/json' },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          }),
        );
      try {
        const created = await call('POST', '/v1/subscriptions', {
          endpointUrl: 'https://hooks.example.com/in',
          events: ['reservation/*'],
        });
        same(created.status, 201, 'created');
        const { id, secret } = (await created.json()) as { id: string; secret: string };
        check(secret.startsWith('whsec_'), 'a secret');
        const listed = await call('GET', '/v1/subscriptions?pageNumber=1&pageSize=20');
        same(listed.status, 200, 'listed');
        same(((await listed.json()) as { totalItems: number }).totalItems, 1, 'one listed');
        const signed = await call('POST', '/v1/subscriptions', {
          endpointUrl: 'https://hooks.example.com/ed25519',
          events: ['folio/*'],
          signatureType: 'ed25519',
        });
        same(signed.status, 201, 'an ed25519 subscription created');
        const made = (await signed.json()) as { id: string; publicKey: string };
        check(made.publicKey.startsWith('whpk_'), 'its public key');
        same((await call('DELETE', `/v1/subscriptions/${made.id}`)).status, 204, 'it deleted');
        same((await call('DELETE', `/v1/subscriptions/${id}`)).status, 204, 'deleted');
        const after = await call('GET', '/v1/subscriptions?pageNumber=1&pageSize=20');
        same(((await after.json()) as { totalItems: number }).totalItems, 0, 'none left');
      } finally {
        await service.close();
      }
    },
  ],
  [
    'secrets at rest: aesGcmSecretCipherAsync made at load encrypts, decrypts, and refuses a tampered secret',
    async ({ root }, { cipher }) => {
      const context = JSON.stringify(['ACME', 'sub_1']);
      const stored = await cipher.encrypt(SECRET, context);
      check(stored.startsWith('gcm1.2026-01.'), `the stored form ${stored}`);
      check(!stored.includes(SECRET.slice(6)), 'the secret shows in its stored form');
      same(await cipher.decrypt(stored, context), SECRET, 'decrypted');
      const refusal = async (text: string, under: string) => {
        const error = await cipher.decrypt(text, under).then(
          () => undefined,
          (e: unknown) => e,
        );
        check(root.isSecretCipherError(error), `${String(error)} is no SecretCipherError`);
        return error.code;
      };
      const last = stored.at(-1) === 'A' ? 'B' : 'A';
      const tampered = `${stored.slice(0, -1)}${last}`;
      same(await refusal(tampered, context), 'secret_not_authentic', 'a tampered tag');
      const moved = JSON.stringify(['ACME', 'sub_2']);
      same(await refusal(stored, moved), 'secret_not_authentic', 'another subscription');
      // The synchronous form reads the same text where the runtime has node:crypto, and says so
      // where it does not.
      const sync = root.aesGcmSecretCipher({ keys: [{ id: '2026-01', key: SECRET_KEY }] });
      try {
        same(sync.decrypt(stored, context), SECRET, 'decrypted by the synchronous form');
        same(await cipher.decrypt(sync.encrypt(SECRET, context), context), SECRET, 'and back');
      } catch (error) {
        check(root.isConfigurationError(error), `the synchronous form threw ${String(error)}`);
        same(error.code, 'unsupported_runtime', 'the synchronous form without node:crypto');
      }
    },
  ],
];

/** The names of the cases, in their order. */
export const PORTABLE_CASES: readonly string[] = CASES.map(([name]) => name);

/** Run every case, each to its end or its first failure. */
export function runPortableSuite(
  modules: PortableModules,
  made: MadeAtLoad,
): Promise<CaseResult[]> {
  return runCases(CASES, modules, made);
}

/** Run cases in order, each to its end or its first failure, with the same arguments. */
export async function runCases<A extends unknown[]>(
  cases: readonly (readonly [name: string, run: (...args: A) => Promise<void> | void])[],
  ...args: A
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const [name, run] of cases) {
    try {
      await run(...args);
      results.push({ name, ok: true });
    } catch (error) {
      const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      results.push({ name, ok: false, error: text });
    }
  }
  return results;
}
