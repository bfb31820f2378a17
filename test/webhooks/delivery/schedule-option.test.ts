/**
 * The `schedule` option of the deliverer and of the service's `delivery`, read by the one options
 * reader: a schedule from retrySchedule(), or its options completed with the documented defaults
 * (docs/delivery.md, "Retries": 5 s, times 4, at most 6 h a wait, 8 attempts, 24 h, jitter 0.5).
 * A misspelt key, an array or a string is refused up front, as a top-level option is; before, they
 * were taken as given and every attempt was retried at once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createDeliverer,
  createWebhookService,
  type DeliveryAttempt,
  deliveryJob,
  FakeClock,
  MemorySubscriptionRepository,
  retrySchedule,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

const HOUR = 3_600_000;
/** The defaults as docs/delivery.md states them. */
const DOCUMENTED = {
  initialDelayMs: 5_000,
  factor: 4,
  maxDelayMs: 6 * HOUR,
  maxAttempts: 8,
  maxAgeMs: 24 * HOUR,
  jitter: 0.5,
};

const makers = {
  createDeliverer: (schedule: unknown) =>
    createDeliverer({
      secrets: () => ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      schedule: schedule as never,
    }),
  createWebhookService: (schedule: unknown) =>
    createWebhookService({
      repository: new MemorySubscriptionRepository(),
      identify: () => undefined,
      delivery: { schedule: schedule as never },
    }),
};

describe.each(Object.entries(makers))('the schedule option of %s', (name, make) => {
  const prefix = name === 'createDeliverer' ? 'schedule' : 'delivery.schedule';

  it('refuses a misspelt key with the nearest name, as a top-level option is', () => {
    const error = thrown(() => make({ maxAttemps: 3 })) as Error;
    expect(error).toMatchObject({ name: 'ConfigurationError', code: 'invalid_option' });
    expect(error.message).toContain(`${prefix} has no option "maxAttemps"`);
    expect(error.message).toContain('did you mean "maxAttempts"');
  });

  it('refuses an array, a string, null and a value out of range, naming the option', () => {
    for (const bad of [[], 'x', null, 42, { maxAttempts: 0 }, { jitter: 2 }, { factor: 0.5 }]) {
      const error = thrown(() => make(bad)) as Error;
      expect(error).toMatchObject({ name: 'ConfigurationError', code: 'invalid_option' });
      expect(error.message).toMatch(new RegExp(`^${prefix.replace('.', '\\.')}`));
    }
  });

  it('takes a schedule from retrySchedule() and any valid subset of its options', () => {
    expect(() => make(retrySchedule({ maxAttempts: 3 }))).not.toThrow();
    expect(() => make({ maxAttempts: 3 })).not.toThrow();
    expect(() => make({})).not.toThrow();
  });
});

/** The attempts of one job to a receiver that always answers 500, on a fake clock. */
async function attemptsWith(schedule: unknown): Promise<DeliveryAttempt[]> {
  const clock = new FakeClock(1_700_000_000_000);
  const reports: DeliveryAttempt[] = [];
  const deliverer = createDeliverer({
    secrets: () => ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    schedule: schedule as never,
    clock,
    random: () => 0,
    transport: async () => ({ status: 500, headers: {} }),
    onAttempt: (attempt) => {
      reports.push(attempt);
    },
  });
  let step = await deliverer.attempt(
    deliveryJob(
      { id: 'msg_1', body: '{}' },
      { id: 'sub', endpointUrl: 'https://hooks.example.com/' },
    ),
  );
  while (!step.done) {
    clock.set(step.at);
    step = await deliverer.attempt(step.job);
  }
  return reports;
}

describe('options of a schedule, completed with the documented defaults', () => {
  it('{ maxAttempts: 3 } makes three attempts, 5 s and 20 s apart (the default backoff), not three at once', async () => {
    const attempts = await attemptsWith({ maxAttempts: 3 });
    expect(attempts.map((a) => a.outcome)).toEqual(['retry', 'retry', 'failed']);
    expect(attempts[1]!.at - attempts[0]!.at).toBe(5_000);
    expect(attempts[2]!.at - attempts[1]!.at).toBe(20_000);
    expect(attempts[2]).toMatchObject({ reason: 'attempts_exhausted' });
  });

  it('any subset of valid options waits as the documented rule says: min(maxDelayMs, initialDelayMs x factor^(n-1)), no more than maxAttempts', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            initialDelayMs: fc.integer({ min: 0, max: 60_000 }),
            factor: fc.integer({ min: 1, max: 5 }),
            maxDelayMs: fc.integer({ min: 0, max: 10 * 60_000 }),
            maxAttempts: fc.integer({ min: 1, max: 6 }),
          },
          { requiredKeys: [] },
        ),
        async (given) => {
          const rule = { ...DOCUMENTED, ...given, maxAgeMs: DOCUMENTED.maxAgeMs };
          const attempts = await attemptsWith(given);
          // The default age bound (24 h) never binds here: 6 attempts of at most 10 min.
          expect(attempts).toHaveLength(rule.maxAttempts);
          for (let n = 1; n < attempts.length; n++) {
            const wait = Math.min(rule.maxDelayMs, rule.initialDelayMs * rule.factor ** (n - 1));
            expect(attempts[n]!.at - attempts[n - 1]!.at).toBe(wait);
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
