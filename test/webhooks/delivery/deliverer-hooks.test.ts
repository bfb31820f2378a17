/**
 * The deliverer's hooks, on a fake transport and clock: the order they are called in, what each
 * is given, that the record is written before the step is answered, that a job which waits is
 * deferred without an attempt, and that nothing a hook throws changes the delivery.
 */
import { describe, expect, it } from 'vitest';
import {
  createDeliverer,
  type DeliveryAttempt,
  type DeliveryJob,
  FakeClock,
  generateWebhookSecret,
  type TransportRequest,
} from '../../../src/index.js';
import { hookedDeliverer } from '../../../src/webhooks/delivery/create-deliverer.js';
import type { DeliveryHooks } from '../../../src/webhooks/delivery/hooks.js';

const START = 1_700_000_000_000;
const secret = generateWebhookSecret();
const job: DeliveryJob = {
  id: 'msg_1',
  subscriptionId: 'sub-1',
  endpointUrl: 'https://hooks.example.com/in',
  body: '{"id":"msg_1"}',
  attempts: 0,
};

/** A deliverer with the given hooks, answering `status`; `calls` lists each hook as it is called. */
function setup(status: number, hooks: Partial<DeliveryHooks> = {}) {
  const clock = new FakeClock(START);
  const sent: TransportRequest[] = [];
  const calls: string[] = [];
  const deliverer = hookedDeliverer(
    {
      clock,
      random: () => 0,
      transport: async (request) => {
        calls.push('send');
        sent.push(request);
        return { status, headers: status === 429 ? { 'retry-after': '60' } : {} };
      },
    },
    {
      secrets: (id) => {
        calls.push(`secrets ${id}`);
        return [secret];
      },
      ...hooks,
    },
  );
  return { clock, sent, calls, deliverer };
}

describe('the deliverer’s hooks', () => {
  it('are called in order, waitUntil, secrets, gone, recorded, each once, with the subscription, the time, the attempt and the job as given', async () => {
    const told: unknown[][] = [];
    const { deliverer, calls } = setup(410, {
      waitUntil: (...args) => {
        calls.push('waitUntil');
        told.push(args);
        return undefined;
      },
      gone: (...args) => {
        calls.push('gone');
        told.push(args);
      },
      recorded: (...args) => {
        calls.push('recorded');
        told.push(args);
      },
    });
    const step = await deliverer.attempt(job);
    expect(calls).toEqual(['waitUntil', 'secrets sub-1', 'send', 'gone', 'recorded']);
    expect(step).toMatchObject({ done: true, report: { outcome: 'disabled', reason: 'gone' } });
    expect(told).toEqual([['sub-1', START], ['sub-1'], [step.report, job]]);
    expect(told[2]![1]).toBe(job);
  });

  it('answer a step only once the record is written', async () => {
    let written: () => void = () => undefined;
    const { deliverer } = setup(500, {
      recorded: () => new Promise<void>((resolve) => (written = resolve)),
    });
    let answered = false;
    const step = deliverer.attempt(job).then((s) => {
      answered = true;
      return s;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(answered).toBe(false);
    written();
    expect(await step).toMatchObject({ done: false, report: { outcome: 'retry', status: 500 } });
  });

  it('tell the queue that the request ended, once, after the answer and before the record', async () => {
    const { deliverer, calls } = setup(500, { recorded: () => void calls.push('recorded') });
    const step = await deliverer.attempt(job, { requestEnded: () => calls.push('request ended') });
    expect(calls).toEqual(['secrets sub-1', 'send', 'request ended', 'recorded']);
    expect(step).toMatchObject({ done: false, report: { outcome: 'retry', status: 500 } });
    // A request that failed has ended too.
    const told: string[] = [];
    const refused = hookedDeliverer(
      {
        clock: new FakeClock(START),
        random: () => 0,
        transport: async () => {
          told.push('send');
          throw new Error('connect ECONNREFUSED');
        },
      },
      { secrets: () => [secret], recorded: () => void told.push('recorded') },
    );
    const failed = await refused.attempt(job, { requestEnded: () => told.push('request ended') });
    expect(told).toEqual(['send', 'request ended', 'recorded']);
    expect(failed.report).toMatchObject({ outcome: 'retry', error: { code: 'connection_failed' } });
  });

  it('tell the queue nothing for a step with no request, and go on whatever requestEnded throws', async () => {
    const told: string[] = [];
    const requestEnded = () => void told.push('request ended');
    const waiting = setup(200, { waitUntil: (_, now) => now + 1_000 });
    expect(await waiting.deliverer.attempt(job, { requestEnded })).toMatchObject({
      deferred: true,
    });
    const secretless = setup(200, { secrets: () => [] });
    expect((await secretless.deliverer.attempt(job, { requestEnded })).report).toMatchObject({
      reason: 'no_secret',
    });
    const broken = { ...job, body: 7 } as unknown as DeliveryJob;
    expect((await waiting.deliverer.attempt(broken, { requestEnded })).report).toMatchObject({
      reason: 'invalid_job',
    });
    expect(told).toEqual([]);
    const { deliverer, calls } = setup(200, { recorded: () => void calls.push('recorded') });
    const step = await deliverer.attempt(job, {
      requestEnded: () => {
        throw new Error('the queue broke');
      },
    });
    expect(step).toMatchObject({ done: true, report: { outcome: 'delivered', status: 200 } });
    expect(calls).toEqual(['secrets sub-1', 'send', 'recorded']);
  });

  it('defer a job whose subscription waits: the job as it was, no secrets, no request, no record', async () => {
    const recorded: DeliveryAttempt[] = [];
    const { deliverer, calls, clock } = setup(200, {
      waitUntil: (id, now) => (id === 'sub-1' ? now + 60_000 : undefined),
      recorded: (attempt) => void recorded.push(attempt),
    });
    const step = await deliverer.attempt(job);
    expect(step).toEqual({ done: false, job, at: clock.now() + 60_000, deferred: true });
    expect(step.done === false && step.job).toBe(job);
    expect(calls).toEqual([]);
    expect(recorded).toEqual([]);
    // Another subscription goes on.
    const other = await deliverer.attempt({ ...job, subscriptionId: 'sub-2' });
    expect(other.report?.outcome).toBe('delivered');
    expect(recorded).toHaveLength(1);
  });

  it('attempt a job at once when waitUntil throws, and tell recorded of a job no attempt can deliver as the queue gave it', async () => {
    const recorded: unknown[][] = [];
    const { deliverer } = setup(200, {
      waitUntil: () => {
        throw new Error('waitUntil down');
      },
      recorded: (...args) => void recorded.push(args),
    });
    expect((await deliverer.attempt(job)).report?.outcome).toBe('delivered');
    const broken = { ...job, body: 7 } as unknown as DeliveryJob;
    const step = await deliverer.attempt(broken);
    expect(step.report).toMatchObject({ outcome: 'failed', reason: 'invalid_job' });
    expect(recorded[1]).toEqual([step.report, broken]);
    expect(recorded[1]![1]).toBe(broken);
  });

  it('change nothing by throwing or rejecting: a 410 is disabled, a retry retried, a delivery delivered', async () => {
    for (const [status, outcome] of [
      [410, 'disabled'],
      [500, 'retry'],
      [200, 'delivered'],
    ] as const) {
      const { deliverer } = setup(status, {
        gone: async () => {
          throw new Error('gone down');
        },
        recorded: () => {
          throw new Error('record down');
        },
      });
      expect((await deliverer.attempt(job)).report?.outcome).toBe(outcome);
      const rejecting = setup(status, { recorded: () => Promise.reject(new Error('down')) });
      expect((await rejecting.deliverer.attempt(job)).report?.outcome).toBe(outcome);
    }
  });

  it('record a job the queue lost', async () => {
    const recorded: unknown[][] = [];
    const { deliverer, calls } = setup(200, { recorded: (...args) => void recorded.push(args) });
    const report = await deliverer.lost?.(
      { ...job, attempts: 2 },
      {
        code: 'stalled',
        message: 'the worker died',
      },
    );
    expect(report).toMatchObject({ outcome: 'lost', attempt: 2, error: { code: 'stalled' } });
    expect(recorded).toEqual([[report, { ...job, attempts: 2 }]]);
    expect(calls).toEqual([]);
  });
});

describe('createDeliverer’s hooks, from its options', () => {
  it('tell onAttempt the attempt alone, and onGone the subscription, once each', async () => {
    const attempts: unknown[][] = [];
    const gone: unknown[][] = [];
    const deliverer = createDeliverer({
      secrets: () => [secret],
      clock: new FakeClock(START),
      transport: async () => ({ status: 410, headers: {} }),
      onAttempt: (...args) => void attempts.push(args),
      onGone: (...args) => void gone.push(args),
    });
    const step = await deliverer.attempt(job);
    expect(attempts).toEqual([[step.report]]);
    expect(gone).toEqual([['sub-1']]);
  });
});
