/**
 * A receiver's Retry-After is bounded: it pauses the delivery for at most `maxEndpointPauseMs` (1 h
 * by default); a negative, garbage or past value is ignored (the schedule's own wait applies); 502
 * and 504 slow down as 429 and 503 do (Standard Webhooks, "Delivery success and failure"); a
 * ten-year Retry-After waits the bound and the delivery is tried again within its schedule, where it
 * used to end at once as `failed/max_age`. On a fake clock and a fake transport, and once over real
 * HTTP.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeliverer,
  createWebhookService,
  type DeliveryJob,
  type DeliveryOptions,
  type DeliveryStep,
  deliver,
  deliveryJob,
  FakeClock,
  formatHttpDate,
  generateWebhookSecret,
  httpTransport,
  isConfigurationError,
  MemorySubscriptionRepository,
  parseRetryAfter,
  retrySchedule,
  type TransportResponse,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';
import { startReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const START = 1_700_000_000_000; // Tue, 14 Nov 2023 22:13:20 GMT
const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const TEN_YEARS_S = 10 * 365 * 24 * 3_600;
/** The first wait of the default schedule with `random() = 0` (the full backoff). */
const FIRST_BACKOFF = 5 * SECOND;
const SLOWING = [429, 502, 503, 504] as const;

const secret = generateWebhookSecret();
const message = { id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', body: '{"type":"reservation/created"}' };
const subscription = { id: 'sub-1', endpointUrl: 'https://hooks.example.com/in' };

/** A deliverer on a fake clock whose transport answers `replies` in turn, then 204. */
function setup(options: Partial<DeliveryOptions> = {}, ...replies: TransportResponse[]) {
  const clock = new FakeClock(START);
  const sentAt: number[] = [];
  const deliverer = createDeliverer({
    secrets: () => [secret],
    transport: async () => {
      sentAt.push(clock.now());
      return replies.shift() ?? { status: 204, headers: {} };
    },
    clock,
    random: () => 0,
    ...options,
  });
  const sleep = async (ms: number) => {
    clock.advance(ms);
  };
  const job = deliveryJob(message, subscription);
  return {
    clock,
    deliverer,
    sentAt,
    job,
    run: (from = job) => deliver(deliverer, from, sleep, clock),
  };
}

const answer = (status: number, retryAfter?: string): TransportResponse => ({
  status,
  headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter },
});

/** When a step's job runs again, or what ended it. */
const next = (step: DeliveryStep) =>
  step.done ? { ended: step.report.outcome, reason: step.report.reason } : { at: step.at };

describe("a receiver's Retry-After, bounded by maxEndpointPauseMs", () => {
  it('a ten-year Retry-After pauses the delivery for 1 h, then it is tried again within its schedule, not failed/max_age', async () => {
    for (const tenYears of [String(TEN_YEARS_S), formatHttpDate(START + TEN_YEARS_S * SECOND)]) {
      const { run, sentAt } = setup({}, answer(503, tenYears));
      expect(await run()).toMatchObject({ outcome: 'delivered', attempt: 2 });
      expect(sentAt).toEqual([START, START + HOUR]);
    }
  });

  it('a pause that outlasts the max age ends at it: the delivery gets its attempt there, and is given up only once its age is up', async () => {
    // The first attempt was 23.5 h ago: the bound of 1 h would pass the 24 h max age.
    const old: DeliveryJob = {
      ...deliveryJob(message, subscription),
      attempts: 3,
      firstAttemptAt: START - 23 * HOUR - 30 * MINUTE,
    };
    const delivered = setup({}, answer(429, String(TEN_YEARS_S)));
    expect(await delivered.run(old)).toMatchObject({ outcome: 'delivered', attempt: 5 });
    expect(delivered.sentAt).toEqual([START, START + 30 * MINUTE]);
    // Still answered 429 at its max age: nothing can start within it any more.
    const refused = setup({}, answer(429, String(TEN_YEARS_S)), answer(429, String(TEN_YEARS_S)));
    expect(await refused.run(old)).toMatchObject({ outcome: 'failed', reason: 'max_age' });
    expect(refused.sentAt).toEqual([START, START + 30 * MINUTE]);
  });

  it('takes maxEndpointPauseMs as the bound, and a shorter Retry-After as asked', async () => {
    const { deliverer, job } = setup(
      { maxEndpointPauseMs: 10 * MINUTE },
      answer(503, '7200'),
      answer(503, '120'),
    );
    const first = await deliverer.attempt(job);
    expect(next(first)).toEqual({ at: START + 10 * MINUTE });
    const second = await deliverer.attempt((first as { job: DeliveryJob }).job);
    expect(next(second)).toEqual({ at: START + 120 * SECOND });
  });

  it('ignores a negative, fractional, garbage, zero or past Retry-After: the schedule’s own wait applies', async () => {
    const ignored = [
      '-1',
      '-120',
      '1.5',
      '1e3',
      'soon',
      '',
      '120 s',
      '0',
      formatHttpDate(START - MINUTE),
      'Mon, 01 Jan 1990 00:00:00 GMT',
      'Tue, 14 Nov 2023 25:14:50 GMT',
    ];
    for (const status of SLOWING) {
      for (const value of ignored) {
        const { deliverer, job } = setup({}, answer(status, value));
        expect([status, value, next(await deliverer.attempt(job))]).toEqual([
          status,
          value,
          { at: START + FIRST_BACKOFF },
        ]);
      }
    }
  });

  it('reads it with 429, 502, 503 and 504 alike, as delay-seconds and in the three HTTP-date forms', async () => {
    const in90s = [
      '90',
      'Tue, 14 Nov 2023 22:14:50 GMT', // IMF-fixdate
      'Tuesday, 14-Nov-23 22:14:50 GMT', // rfc850-date
      'Tue Nov 14 22:14:50 2023', // asctime-date
    ];
    for (const status of SLOWING) {
      for (const value of in90s) {
        const { deliverer, job } = setup({}, answer(status, value));
        expect([status, value, next(await deliverer.attempt(job))]).toEqual([
          status,
          value,
          { at: START + 90 * SECOND },
        ]);
      }
    }
  });

  it('502 and 504 without Retry-After wait the schedule’s backoff; a Retry-After on another status is not read', async () => {
    for (const reply of [answer(502), answer(504), answer(500, '120'), answer(404, '120')]) {
      const { deliverer, job } = setup({}, reply);
      expect(next(await deliverer.attempt(job))).toEqual({ at: START + FIRST_BACKOFF });
    }
    const { run, sentAt } = setup({}, answer(502), answer(504), answer(504, '60'));
    expect(await run()).toMatchObject({ outcome: 'delivered', attempt: 4 });
    expect(sentAt).toEqual([START, START + 5 * SECOND, START + 25 * SECOND, START + 85 * SECOND]);
  });

  it('the next attempt is never later than now + maxEndpointPauseMs for a Retry-After read, is the schedule’s for one ignored, and max_age comes only once the max age is up', async () => {
    const header = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.integer({ min: -10 * DAY, max: 10 * 365 * DAY }).map((s) => String(Math.trunc(s / 1000))),
      fc.bigInt({ min: 0n, max: 10n ** 30n }).map(String),
      fc.integer({ min: -10 * DAY, max: 30 * DAY }).map((d) => formatHttpDate(START + d)),
      fc.constantFrom('0', '-1', '1.5', 'Sun Nov  6 08:49:37 1994'),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.option(header, { nil: undefined }),
        fc.constantFrom(429, 502, 503, 504, 500, 404, 302),
        fc.record({
          maxAttempts: fc.integer({ min: 1, max: 10 }),
          maxAgeMs: fc.integer({ min: 0, max: 3 * DAY }),
          initialDelayMs: fc.integer({ min: 0, max: 10 * MINUTE }),
          jitter: fc.double({ min: 0, max: 1, noNaN: true }),
        }),
        fc.integer({ min: 1, max: 3 * DAY }),
        fc.integer({ min: 0, max: 9 }),
        fc.integer({ min: 0, max: 4 * DAY }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        async (value, status, options, bound, attempts, age, draw) => {
          const schedule = retrySchedule(options);
          fc.pre(bound <= schedule.maxAgeMs);
          const made = { maxEndpointPauseMs: bound, schedule, random: () => draw };
          const job: DeliveryJob = {
            ...deliveryJob(message, subscription),
            attempts,
            ...(attempts === 0 ? {} : { firstAttemptAt: START - age }),
          };
          const firstAt = attempts === 0 ? START : START - age;
          const withHeader = next(await setup(made, answer(status, value)).deliverer.attempt(job));
          const without = next(await setup(made, answer(status)).deliverer.attempt(job));
          // From the requirement: read with 429, 502, 503, 504; negative, garbage, past: ignored.
          const asked = parseRetryAfter(value, START);
          const ignorable =
            !SLOWING.includes(status as (typeof SLOWING)[number]) || !asked || asked <= 0;
          if (ignorable) expect(withHeader).toEqual(without);
          if ('at' in withHeader && !ignorable) {
            expect(withHeader.at).toBeLessThanOrEqual(START + bound);
          }
          for (const step of [withHeader, without]) {
            if ('at' in step) {
              expect(step.at).toBeGreaterThanOrEqual(START);
              expect(step.at - firstAt).toBeLessThanOrEqual(schedule.maxAgeMs);
            } else if (step.reason === 'max_age') {
              expect(START - firstAt).toBeGreaterThanOrEqual(schedule.maxAgeMs);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the maxEndpointPauseMs option', () => {
  const makers = {
    createDeliverer: (options: Partial<DeliveryOptions>) =>
      createDeliverer({ secrets: () => [secret], ...options }),
    createWebhookService: (options: Partial<DeliveryOptions>) =>
      createWebhookService({
        repository: new MemorySubscriptionRepository(),
        identify: () => undefined,
        delivery: options,
      }),
  };

  describe.each(Object.entries(makers))('of %s', (maker, make) => {
    const name = maker === 'createDeliverer' ? 'maxEndpointPauseMs' : 'delivery.maxEndpointPauseMs';

    it('refuses what is no whole number of ms above 0, naming the option', () => {
      for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '3600000', null]) {
        const error = thrown(() => make({ maxEndpointPauseMs: bad as never }));
        expect(isConfigurationError(error) && error.code).toBe('invalid_option');
        expect((error as Error).message).toMatch(
          new RegExp(`^${name.replace('.', '\\.')} must be`),
        );
      }
    });

    it('refuses a bound above the schedule’s maxAgeMs, which could never be waited out', () => {
      const error = thrown(() =>
        make({ schedule: { maxAgeMs: MINUTE }, maxEndpointPauseMs: MINUTE + 1 }),
      );
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toBe(
        `${name} must be a whole number of ms from 1 to the schedule's maxAgeMs (60000), got 60001.`,
      );
    });

    it('takes a bound up to maxAgeMs, and leaves the 1 h default to a shorter maxAgeMs', () => {
      expect(() =>
        make({ schedule: { maxAgeMs: MINUTE }, maxEndpointPauseMs: MINUTE }),
      ).not.toThrow();
      expect(() => make({ maxEndpointPauseMs: 1 })).not.toThrow();
      expect(() => make({ schedule: { maxAgeMs: MINUTE } })).not.toThrow();
    });
  });
});

describe('over real HTTP', () => {
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver.close());

  it('a receiver answering 503 with Retry-After is tried again after it, and after 1 h when it asks for ten years', async () => {
    for (const [retryAfter, wait] of [
      ['30', 30 * SECOND],
      [formatHttpDate(START + 42 * SECOND), 42 * SECOND],
      [String(TEN_YEARS_S), HOUR],
    ] as const) {
      const replies = [{ status: 503, headers: { 'retry-after': retryAfter } }];
      receiver.respond(() => replies.shift() ?? { status: 204 });
      const before = receiver.received.length;
      const { run } = setup({ transport: httpTransport({ allow: ['127.0.0.1'] }) });
      const job = deliveryJob(message, { id: 'sub-1', endpointUrl: `${receiver.url}/in` });
      const last = await run(job);
      expect(last).toMatchObject({ outcome: 'delivered', status: 204, attempt: 2 });
      expect(receiver.received.length - before).toBe(2);
      // The second attempt started when the receiver asked, or at the bound.
      expect(last.at).toBe(START + wait);
    }
  });
});
