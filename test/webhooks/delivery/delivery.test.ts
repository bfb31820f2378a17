/**
 * Delivery against a real local receiver on a fake clock: signatures that the standardwebhooks
 * package verifies, retries on the schedule, Retry-After, 410, give-ups, and every attempt reported.
 */
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeliverer,
  createWebhookMessage,
  type DeliveryAttempt,
  type DeliveryOptions,
  deliver,
  deliveryJob,
  FakeClock,
  formatHttpDate,
  generateWebhookSecret,
  httpTransport,
  isConfigurationError,
  retrySchedule,
  SecretCipherError,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';
import { startReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

const secret = generateWebhookSecret();

/** A deliverer on a fake clock (started at the real time so that standardwebhooks accepts it). */
function setup(options: Partial<DeliveryOptions> = {}) {
  const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000);
  const reports: DeliveryAttempt[] = [];
  const waits: number[] = [];
  const gone: string[] = [];
  const deliverer = createDeliverer({
    secrets: () => [secret],
    transport: httpTransport({ allow: ['127.0.0.1'] }),
    clock,
    random: () => 0,
    onAttempt: (a) => void reports.push(a),
    onGone: (id) => void gone.push(id),
    ...options,
  });
  const sleep = async (ms: number) => {
    waits.push(ms);
    clock.advance(ms);
  };
  const message = createWebhookMessage(
    { accountCode: 'ACME', kind: 'folio/created', propertyId: 'BER', data: { folioId: 'F1' } },
    {
      clock,
      generateId: () => `msg_${receiver.received.length}_${Math.random().toString(36).slice(2)}`,
    },
  );
  const job = deliveryJob(message, { id: 'sub-1', endpointUrl: `${receiver.url}/in` });
  return {
    clock,
    reports,
    waits,
    gone,
    deliverer,
    sleep,
    job,
    run: () => deliver(deliverer, job, sleep, clock),
  };
}

/** Answer with these statuses (and headers) in turn, then 204. */
function answers(...replies: Array<{ status: number; headers?: Record<string, string> }>) {
  const queue = [...replies];
  receiver.respond(() => queue.shift() ?? { status: 204 });
}

describe('deliver', () => {
  it('POSTs the envelope as JSON with Standard Webhooks headers that the standardwebhooks package verifies', async () => {
    answers({ status: 200 });
    const { run, job, reports } = setup();
    const before = receiver.received.length;
    const last = await run();
    expect(last).toMatchObject({ outcome: 'delivered', status: 200, attempt: 1 });
    const got = receiver.received[before]!;
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['webhook-id']).toBe(job.id);
    const payload = new Webhook(secret).verify(got.body, {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    });
    expect(payload).toMatchObject({
      id: job.id,
      topic: 'folio',
      type: 'folio/created',
      accountId: 'ACME',
      propertyId: 'BER',
      data: { folioId: 'F1' },
    });
    expect(reports).toEqual([last]);
  });

  it('retries non-2xx answers on the schedule, with the same webhook-id and a fresh timestamp', async () => {
    answers({ status: 500 }, { status: 302 }, { status: 400 });
    const { run, waits, reports, clock, job } = setup();
    const start = clock.now();
    const before = receiver.received.length;
    const last = await run();
    expect(last).toMatchObject({ outcome: 'delivered', attempt: 4, status: 204 });
    // random() = 0: each wait is the full backoff, 5 s, 20 s, 80 s.
    expect(waits).toEqual([5_000, 20_000, 80_000]);
    const got = receiver.received.slice(before);
    expect(got.map((d) => d.headers['webhook-id'])).toEqual([job.id, job.id, job.id, job.id]);
    expect(got.map((d) => Number(d.headers['webhook-timestamp']) * 1000 - start)).toEqual([
      0, 5_000, 25_000, 105_000,
    ]);
    expect(reports.map((r) => [r.outcome, r.status, r.nextAttemptAt])).toEqual([
      ['retry', 500, start + 5_000],
      ['retry', 302, start + 25_000],
      ['retry', 400, start + 105_000],
      ['delivered', 204, undefined],
    ]);
  });

  it("honours a receiver's Retry-After on 429 (seconds) and 503 (HTTP-date)", async () => {
    const { run, waits, clock } = setup();
    answers(
      { status: 429, headers: { 'retry-after': '120' } },
      { status: 503, headers: { 'retry-after': formatHttpDate(clock.now() + 120_000 + 42_000) } },
      { status: 500, headers: { 'retry-after': '999' } },
    );
    await run();
    // The 500's Retry-After is not read: only 429 and 503 carry one that binds.
    expect(waits).toEqual([120_000, 42_000, 80_000]);
  });

  it('keeps a hostile Retry-After within the schedule: ignorable ones get the backoff, far ones wait maxEndpointPauseMs (1 h)', async () => {
    const cases: Array<[string, (now: number) => string, number]> = [
      ['zero', () => '0', 5_000],
      ['a past date', () => 'Mon, 01 Jan 1990 00:00:00 GMT', 5_000],
      ['negative', () => '-1', 5_000],
      ['exponent', () => '1e12', 5_000],
      ['fraction', () => '1.5', 5_000],
      ['garbage', () => 'soon\u00ff', 5_000],
      ['a list', () => '1, 2', 5_000],
      ['huge', () => '9'.repeat(400), 3_600_000],
      ['a date past the age limit', (now) => formatHttpDate(now + 25 * 3_600_000), 3_600_000],
    ];
    for (const [, value, expected] of cases) {
      const { deliverer, job, clock } = setup();
      answers({ status: 429, headers: { 'retry-after': value(clock.now()) } });
      const step = await deliverer.attempt(job);
      expect(step).toMatchObject({ done: false, at: clock.now() + expected });
    }
    receiver.respond(() => ({ status: 204 }));
  });

  it('signs each retry with the secrets in force at that attempt, and stops at a 410 on a retry', async () => {
    const rotated = generateWebhookSecret();
    let current = [secret];
    answers({ status: 500 }, { status: 410 });
    const { run, gone } = setup({
      secrets: () => current,
      onAttempt: () => {
        current = [rotated]; // rotated between the first attempt and its retry
      },
    });
    const before = receiver.received.length;
    expect(await run()).toMatchObject({ outcome: 'disabled', reason: 'gone', attempt: 2 });
    expect(gone).toEqual(['sub-1']);
    const [first, retry] = receiver.received.slice(before);
    const verify = (key: string, got: typeof first) =>
      new Webhook(key).verify(got!.body, {
        'webhook-id': String(got!.headers['webhook-id']),
        'webhook-timestamp': String(got!.headers['webhook-timestamp']),
        'webhook-signature': String(got!.headers['webhook-signature']),
      });
    expect(() => verify(secret, first)).not.toThrow();
    expect(() => verify(rotated, retry)).not.toThrow();
    expect(() => verify(secret, retry)).toThrow();
  });

  it('410 Gone disables the subscription and stops', async () => {
    answers({ status: 410 });
    const { run, gone, waits } = setup();
    expect(await run()).toMatchObject({ outcome: 'disabled', reason: 'gone', status: 410 });
    expect(gone).toEqual(['sub-1']);
    expect(waits).toEqual([]);
  });

  it('disables on 410 and reports every attempt when onAttempt and onGone reject or throw', async () => {
    for (const onGone of [
      () => Promise.reject(new Error('store down')),
      () => {
        throw new Error('store down');
      },
    ]) {
      answers({ status: 500 }, { status: 410 });
      const { run } = setup({ onAttempt: () => Promise.reject(new Error('log down')), onGone });
      expect(await run()).toMatchObject({ outcome: 'disabled', reason: 'gone', attempt: 2 });
    }
  });

  it('gives up after maxAttempts, or once its max age is up (the last wait ending at it)', async () => {
    receiver.respond(() => ({ status: 500 }));
    const three = setup({ schedule: retrySchedule({ maxAttempts: 3 }) });
    const before = receiver.received.length;
    expect(await three.run()).toMatchObject({
      outcome: 'failed',
      reason: 'attempts_exhausted',
      attempt: 3,
    });
    expect(receiver.received.length - before).toBe(3);
    const young = setup({ schedule: retrySchedule({ maxAgeMs: 30_000 }) });
    expect(await young.run()).toMatchObject({ outcome: 'failed', reason: 'max_age', attempt: 4 });
    // 5 s, 20 s, then the 80 s wait cut to the 5 s left of the 30 s: the fourth attempt at 30 s.
    expect(young.waits).toEqual([5_000, 20_000, 5_000]);
    receiver.respond(() => ({ status: 204 }));
  });

  it('never starts an attempt the schedule does not allow, counting the attempts a queue says were started and lost', async () => {
    // From the schedule's words: "maxAttempts: attempts in all, the first one included";
    // "maxAgeMs: no attempt starts later than this after the first".
    const allowed = (
      started: number,
      age: number | undefined,
      maxAttempts: number,
      maxAgeMs: number,
    ) => started < maxAttempts && (age === undefined || age <= maxAgeMs);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 12 }),
        fc.option(fc.integer({ min: 0, max: 200_000 }), { nil: undefined }),
        async (maxAttempts, maxAgeMs, started, age) => {
          const clock = new FakeClock(1_700_000_000_000);
          const reports: DeliveryAttempt[] = [];
          let sent = 0;
          const deliverer = createDeliverer({
            secrets: () => [secret],
            transport: async () => {
              sent += 1;
              return { status: 500, headers: {} };
            },
            clock,
            random: () => 0,
            schedule: retrySchedule({ maxAttempts, maxAgeMs }),
            onAttempt: (a) => void reports.push(a),
          });
          const job = {
            ...deliveryJob(
              { id: 'msg_1', body: '{}' },
              { id: 'sub-1', endpointUrl: 'https://example.com/in' },
            ),
            attempts: started,
            ...(age === undefined ? {} : { firstAttemptAt: clock.now() - age }),
          };
          const step = await deliverer.attempt(job);
          expect(sent).toBe(allowed(started, age, maxAttempts, maxAgeMs) ? 1 : 0);
          expect(reports).toEqual([step.report]);
          if (sent === 0) {
            expect(step.report).toMatchObject({
              outcome: 'failed',
              attempt: started,
              reason: started >= maxAttempts ? 'attempts_exhausted' : 'max_age',
              error: { code: 'not_attempted' },
            });
          }
        },
      ),
    );
  });

  it('reports a job the queue gave up on as lost, with the attempts started, and never rejects', async () => {
    const { deliverer, job, reports, clock } = setup();
    const lost = await deliverer.lost!(
      { ...job, attempts: 2 },
      { code: 'stalled', message: 'job stalled more than allowable limit' },
    );
    expect(lost).toEqual({
      id: job.id,
      subscriptionId: 'sub-1',
      endpointUrl: job.endpointUrl,
      attempt: 2,
      at: clock.now(),
      error: { code: 'stalled', message: 'job stalled more than allowable limit' },
      outcome: 'lost',
    });
    expect(reports).toEqual([lost]);
    const failing = setup({ onAttempt: () => Promise.reject(new Error('log down')) });
    const unreadable = new Proxy({} as typeof job, {
      get() {
        throw new Error('trap');
      },
    });
    expect(await failing.deliverer.lost!(unreadable, null as never)).toMatchObject({
      id: 'undefined',
      attempt: 0,
      outcome: 'lost',
      error: { code: 'undefined', message: 'undefined' },
    });
  });

  it('never reaches a private address unless allowed, and does not retry it', async () => {
    const { run, reports } = setup({ transport: httpTransport() });
    const before = receiver.received.length;
    expect(await run()).toMatchObject({
      outcome: 'failed',
      reason: 'forbidden_address',
      error: { code: 'forbidden_address' },
    });
    expect(reports).toHaveLength(1);
    expect(receiver.received.length).toBe(before);
  });

  it('by default sends through the SSRF guard with no allow-list, and times attempts by the system clock', async () => {
    const deliverer = createDeliverer({ secrets: () => [secret] });
    const { job } = setup();
    const before = receiver.received.length;
    const earliest = Date.now();
    const step = await deliverer.attempt(job);
    const latest = Date.now();
    expect(step).toMatchObject({
      done: true,
      report: {
        outcome: 'failed',
        reason: 'forbidden_address',
        error: { code: 'forbidden_address' },
      },
    });
    expect(step.report?.at).toBeGreaterThanOrEqual(earliest);
    expect(step.report?.at).toBeLessThanOrEqual(latest);
    expect(receiver.received.length).toBe(before);
  });

  it('retries when a transport fails with an error of its own, reported as connection_failed with its message', async () => {
    for (const [failure, message] of [
      [new Error('socket hang up'), 'socket hang up'],
      ['proxy refused', 'proxy refused'],
    ] as const) {
      const { deliverer, job, clock } = setup({ transport: () => Promise.reject(failure) });
      const step = await deliverer.attempt(job);
      expect(step).toMatchObject({
        done: false,
        at: clock.now() + 5_000,
        job: { attempts: 1 },
        report: { outcome: 'retry', error: { code: 'connection_failed', message } },
      });
      expect(step.report).toBeDefined();
      expect(step.report?.status).toBeUndefined();
    }
  });

  it('ends a job whose secrets cannot be read, as for a subscription without secrets', async () => {
    const before = receiver.received.length;
    for (const secrets of [
      () => {
        throw new Error('secret store down');
      },
      () => Promise.reject(new Error('secret store down')),
    ]) {
      const run = setup({ secrets });
      expect(await run.run()).toMatchObject({ outcome: 'failed', reason: 'no_secret', attempt: 1 });
      expect(run.waits).toEqual([]);
    }
    expect(receiver.received.length).toBe(before);
  });

  it('ends a job whose secrets are there but unreadable (a SecretCipherError) as secret_unreadable, not no_secret', async () => {
    const before = receiver.received.length;
    const unreadable = new SecretCipherError(
      'unknown_secret_key',
      'A signing secret of subscription "sub-1" cannot be read.',
      { accountCode: 'ACME', subscriptionId: 'sub-1' },
    );
    for (const secrets of [
      () => {
        throw unreadable;
      },
      () => Promise.reject(unreadable),
    ]) {
      const run = setup({ secrets });
      expect(await run.run()).toMatchObject({
        outcome: 'failed',
        reason: 'secret_unreadable',
        attempt: 1,
        error: { code: 'unknown_secret_key', message: unreadable.message },
      });
      expect(run.waits).toEqual([]);
    }
    expect(receiver.received.length).toBe(before);
  });

  it('ends a job whose subscription has no secret any more, and survives a failing logger', async () => {
    const none = setup({ secrets: () => undefined });
    expect(await none.run()).toMatchObject({ outcome: 'failed', reason: 'no_secret' });
    answers({ status: 204 });
    const noisy = setup({
      onAttempt: () => {
        throw new Error('log store down');
      },
    });
    expect(await noisy.run()).toMatchObject({ outcome: 'delivered' });
  });

  it('fails a malformed job, or one whose id or secret signing refuses, once, without a retry', async () => {
    const badSecret = setup({ secrets: () => ['whsec_short'] });
    expect(await badSecret.run()).toMatchObject({
      outcome: 'failed',
      reason: 'invalid_job',
      error: { code: 'invalid_webhook_secret' },
    });
    const badId = setup();
    expect(
      await deliver(badId.deliverer, { ...badId.job, id: 'has space' }, badId.sleep, badId.clock),
    ).toMatchObject({
      outcome: 'failed',
      reason: 'invalid_job',
      error: { code: 'invalid_option' },
    });
    expect([...badSecret.waits, ...badId.waits]).toEqual([]);
    const before = receiver.received.length;
    for (const [broken, problem] of [
      [{ endpointUrl: 'not a url' }, 'no absolute URL'],
      [{ body: { not: 'serialised' } }, 'the serialised message'],
      [{ attempts: -1 }, 'whole number >= 0'],
      [{ id: 42 }, 'a string id and subscriptionId'],
      [{ firstAttemptAt: Number.NaN }, 'firstAttemptAt must be a time in ms'],
      [null, 'not an object'],
    ] as const) {
      const run = setup();
      const job = (broken === null ? null : { ...run.job, ...broken }) as never;
      const report = await deliver(run.deliverer, job, run.sleep, run.clock);
      expect(report).toMatchObject({
        outcome: 'failed',
        reason: 'invalid_job',
        error: { code: 'invalid_job' },
      });
      expect(report.error?.message).toContain(problem);
    }
    expect(receiver.received.length).toBe(before);
  });

  it('ends a job whose secrets are null, as for a subscription without secrets', async () => {
    const before = receiver.received.length;
    const none = setup({ secrets: () => null as never });
    expect(await none.run()).toMatchObject({ outcome: 'failed', reason: 'no_secret', attempt: 1 });
    expect(receiver.received.length).toBe(before);
  });

  it('never rejects: a job whose fields throw fails as invalid_job, a random source that throws draws 0', async () => {
    const run = setup();
    const hostile = new Proxy(run.job, {
      get() {
        throw new Error('getter exploded');
      },
    });
    const report = await deliver(run.deliverer, hostile, run.sleep, run.clock);
    expect(report).toMatchObject({
      outcome: 'failed',
      reason: 'invalid_job',
      error: { code: 'invalid_job', message: expect.stringContaining('getter exploded') },
    });
    answers({ status: 500 });
    const dice = setup({
      random: () => {
        throw new Error('no entropy');
      },
    });
    expect(await dice.run()).toMatchObject({ outcome: 'delivered', attempt: 2 });
    expect(dice.waits).toEqual([5_000]);
  });

  it('refuses a timeout that timers cannot hold, instead of timing every attempt out', () => {
    for (const timeoutMs of [2 ** 31, 2 ** 32, Number.MAX_SAFE_INTEGER]) {
      const error = thrown(() => createDeliverer({ secrets: () => [secret], timeoutMs }));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
    expect(() =>
      createDeliverer({ secrets: () => [secret], timeoutMs: 2 ** 31 - 1 }),
    ).not.toThrow();
  });

  it('refuses extra headers that HTTP cannot carry (CR/LF, bad names, non-strings) when it is made, naming the one at fault', () => {
    const NAME =
      "headers name must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~) such as user-agent";
    const VALUE = 'must be a string without control characters (CR, LF, NUL)';
    const OBJECT =
      "headers must be an object of HTTP header names and string values, such as { 'user-agent': 'acme-webhooks/1.0' }";
    const throwing = Object.defineProperty({}, 'x-trace', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    for (const [headers, message] of [
      [
        { 'user-agent': 'agent\r\nx-injected: 1' },
        `headers.user-agent ${VALUE}, got "agent\\r\\nx-injected: 1".`,
      ],
      [{ 'x-nul': 'a\u0000b' }, `headers.x-nul ${VALUE}, got "a\\u0000b".`],
      [{ 'bad name': 'x' }, `${NAME}, got "bad name".`],
      [{ '': 'x' }, `${NAME}, got "".`],
      [{ 'x-number': 42 }, `headers.x-number ${VALUE}, got 42.`],
      [{ 'x-nan': Number.NaN }, `headers.x-nan ${VALUE}, got NaN.`],
      [{ 'x-null': null }, `headers.x-null ${VALUE}, got null.`],
      ['user-agent: x', `${OBJECT}, got "user-agent: x".`],
      [['user-agent', 'x'], `${OBJECT}, got an array.`],
      [null, `${OBJECT}, got null.`],
      [
        throwing,
        "headers must be an object of HTTP header names and string values, such as { 'user-agent': 'acme-webhooks/1.0' }, got an object that threw when read.",
      ],
    ] as const) {
      const error = thrown(() => createDeliverer({ secrets: () => [secret], headers } as never));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toBe(message);
    }
  });

  it('refuses a deliverer without secrets or with a bad timeout', () => {
    for (const options of [{}, { secrets: () => [secret], timeoutMs: 0 }]) {
      const error = thrown(() => createDeliverer(options as DeliveryOptions));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
  });
});
