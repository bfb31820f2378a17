/**
 * Idempotent publish, as the sentence of the service states it: the same account and key within
 * `idempotencyWindowMs` (24 h by default) answers the first message's `PublishResult` and records
 * and delivers nothing new; the same key with another kind, property or data is refused
 * `idempotency_key_reused`; a key is 1 to 255 visible ASCII characters, anything else an
 * `InvalidRequestError`. Examples on the memory repository and a fake clock, the property against
 * an oracle written from that sentence, and the same on PGlite.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FakeClock,
  isConfigurationError,
  isInvalidRequestError,
  MemorySubscriptionRepository,
  type PublishResult,
  type SubscriptionRepository,
  webhookServiceDefaults,
} from '../../../src/index.js';
import { TestDatabases } from '../../postgres/databases.js';
import { thrown } from '../../support/thrown.js';
import {
  call,
  closingSetup,
  heldQueue,
  repositoryWith,
  START,
  serviceSetup,
  subscriptionBody,
} from '../../support/webhook-service.js';

const DAY = 24 * 60 * 60 * 1000;
const setup = closingSetup();

/** A service with one subscription of ACME to every reservation event, its jobs held. */
async function withSubscription(options: { idempotencyWindowMs?: number } = {}) {
  const { held, make } = heldQueue();
  const made = setup({ queue: make, ...options });
  const created = await call(made.service, 'POST', '/v1/subscriptions', {
    body: subscriptionBody(),
  });
  expect(created.status).toBe(201);
  return { ...made, held, subscriptionId: created.body.id as string };
}

const event = (data: unknown = { reservationId: 'R1' }, kind = 'reservation/created') => ({
  accountCode: 'ACME',
  kind,
  propertyId: 'MUC',
  data,
});

describe('publish with an idempotency key', () => {
  it('answers the first message’s result again within the window, and records and queues nothing new', async () => {
    const { service, repository, held, clock, subscriptionId } = await withSubscription();
    const first = await service.publish(event(), { idempotencyKey: 'R1-created' });
    expect(first.deliveries).toEqual([subscriptionId]);
    clock.advance(DAY - 1);
    const again = await service.publish(event(), { idempotencyKey: 'R1-created' });
    expect(again).toEqual(first);
    expect(held.jobs.map((job) => job.id)).toEqual([first.id]);
    expect(await repository.deliveryStatus('ACME', first.id, subscriptionId)).toBe('pending');
  });

  it('takes data with its keys in another order as the same data', async () => {
    const { service, held } = await withSubscription();
    const first = await service.publish(event({ a: 1, b: [{ c: 2, d: 3 }] }), {
      idempotencyKey: 'k',
    });
    const again = await service.publish(event({ b: [{ d: 3, c: 2 }], a: 1 }), {
      idempotencyKey: 'k',
    });
    expect(again).toEqual(first);
    expect(held.jobs).toHaveLength(1);
  });

  it.each([
    ['another data', event({ reservationId: 'R2' })],
    ['another kind', event(undefined, 'reservation/changed')],
    ['another property', { ...event(), propertyId: 'BER' }],
    [
      'no property',
      { accountCode: 'ACME', kind: 'reservation/created', data: { reservationId: 'R1' } },
    ],
  ])(
    'refuses the key with %s: InvalidRequestError idempotency_key_reused, nothing recorded',
    async (_, other) => {
      const { service, held } = await withSubscription();
      const first = await service.publish(event(), { idempotencyKey: 'R1-created' });
      const error = await service.publish(other, { idempotencyKey: 'R1-created' }).catch((e) => e);
      expect(isInvalidRequestError(error)).toBe(true);
      expect(error).toMatchObject({ code: 'idempotency_key_reused', pointer: '/idempotencyKey' });
      expect(error.message).toContain(first.id);
      expect(held.jobs).toHaveLength(1);
    },
  );

  it('publishes a new message once the window has passed, which holds the key from then on', async () => {
    const { service, clock, held } = await withSubscription({ idempotencyWindowMs: 60_000 });
    const first = await service.publish(event(), { idempotencyKey: 'k' });
    clock.advance(60_000);
    const second = await service.publish(event({ other: true }), { idempotencyKey: 'k' });
    expect(second.id).not.toBe(first.id);
    clock.advance(59_999);
    expect(await service.publish(event({ other: true }), { idempotencyKey: 'k' })).toEqual(second);
    expect(held.jobs.map((job) => job.id)).toEqual([first.id, second.id]);
  });

  it('keeps keys per account, and answers a message that matched no subscription again', async () => {
    const { service } = await withSubscription();
    const acme = await service.publish(event(), { idempotencyKey: 'k' });
    const globex = await service.publish(
      { ...event(), accountCode: 'GLOBEX' },
      { idempotencyKey: 'k' },
    );
    expect(globex.id).not.toBe(acme.id);
    expect(globex.deliveries).toEqual([]);
    expect(
      await service.publish({ ...event(), accountCode: 'GLOBEX' }, { idempotencyKey: 'k' }),
    ).toEqual(globex);
  });

  it('publishes as before without a key, or with options left out or empty', async () => {
    const { service, held } = await withSubscription();
    const a = await service.publish(event());
    const b = await service.publish(event(), {});
    const c = await service.publish(event(), { idempotencyKey: undefined });
    expect(new Set([a.id, b.id, c.id]).size).toBe(3);
    expect(held.jobs).toHaveLength(3);
  });

  it('takes 1 to 255 visible ASCII characters as a key', async () => {
    const { service } = await withSubscription();
    for (const key of ['!', '~', 'a'.repeat(255), 'order:1234/created?x=1']) {
      await expect(service.publish(event(), { idempotencyKey: key })).resolves.toBeDefined();
    }
  });

  const EXPECTED =
    'idempotencyKey must be a string of 1 to 255 visible ASCII characters (! to ~, no space), or left out';
  it.each([
    ['empty', '', '""'],
    ['of 256 characters', 'a'.repeat(256), `"${'a'.repeat(64)}…"`],
    ['with a space', 'order 1', '"order 1"'],
    ['with a line break', 'order\n1', '"order\\n1"'],
    ['with a non-ASCII letter', 'ordré', '"ordré"'],
    ['a number', 42, '42'],
    ['null', null, 'null'],
  ])(
    'refuses a key %s: InvalidRequestError invalid_idempotency_key, nothing recorded',
    async (_, key, shown) => {
      const { service, held } = await withSubscription();
      const error = await service
        .publish(event(), { idempotencyKey: key as string })
        .catch((e: unknown) => e);
      expect(isInvalidRequestError(error)).toBe(true);
      expect(error).toMatchObject({
        code: 'invalid_idempotency_key',
        pointer: '/idempotencyKey',
        message: `${EXPECTED}, got ${shown}.`,
      });
      expect(held.jobs).toHaveLength(0);
    },
  );

  it('refuses options that are no object, or a misspelt one, as configuration', async () => {
    const { service } = await withSubscription();
    const misspelt = await service
      .publish(event(), { idempotencykey: 'k' } as never)
      .catch((e: unknown) => e);
    expect(isConfigurationError(misspelt) && misspelt.code).toBe('invalid_option');
    expect((misspelt as Error).message).toBe(
      'publish has no option "idempotencykey"; did you mean "idempotencyKey"? Its options are idempotencyKey.',
    );
    const text = await service.publish(event(), 'k' as never).catch((e: unknown) => e);
    expect((text as Error).message).toBe(
      'publish options must be an object such as { idempotencyKey: \'order-1234-created\' }, or left out, got "k".',
    );
  });

  it('deletes the keys that have expired with the attempts, and a deleted key publishes anew', async () => {
    const repository = new MemorySubscriptionRepository();
    const at: number[] = [];
    const counting = repositoryWith(repository, {
      deleteExpiredKeys: (now: number, limit: number) => {
        at.push(now);
        return repository.deleteExpiredKeys(now, limit);
      },
    });
    const made = setup({ repository: counting, idempotencyWindowMs: 1_000 });
    const first = await made.service.publish(event(), { idempotencyKey: 'k' });
    made.clock.advance(1_000);
    await made.service.deleteExpiredAttempts();
    expect(at).toEqual([START + 1_000]);
    expect(await repository.deleteExpiredKeys(START + 1_000, 10)).toBe(0);
    expect((await made.service.publish(event(), { idempotencyKey: 'k' })).id).not.toBe(first.id);
  });

  it('defaults the window to 24 h', () => {
    expect(webhookServiceDefaults.idempotencyWindowMs).toBe(DAY);
  });

  it.each([
    [0, '0'],
    [1.5, '1.5'],
    ['1000', '"1000"'],
  ])('refuses an idempotencyWindowMs of %s in the one wording', (value, shown) => {
    const error = thrown(() => serviceSetup({ idempotencyWindowMs: value as number }));
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(
      `idempotencyWindowMs must be a whole number from 1 to 9007199254740991 (Number.MAX_SAFE_INTEGER), got ${shown}.`,
    );
  });
});

// The oracle, from the sentence alone: per account and key, the first result, what it was
// published for and when; a publish with the key answers that result while less than the window
// has passed, is refused for another kind, property or data, and is a new message otherwise.
const WINDOW = 10_000;
const ACCOUNTS = ['ACME', 'GLOBEX'];
const KEYS = ['k1', 'k2', 'k3'];
const stepArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('publish' as const),
      accountCode: fc.constantFrom(...ACCOUNTS),
      key: fc.option(fc.constantFrom(...KEYS), { nil: undefined, freq: 4 }),
      kind: fc.constantFrom('reservation/created', 'reservation/changed'),
      propertyId: fc.option(fc.constantFrom('MUC', 'BER'), { nil: undefined }),
      data: fc.option(fc.constantFrom({ a: 1 }, { a: 2 }, [1, 2], 'x'), { nil: undefined }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      // The window's edges often: a key one ms before it expires, and as it expires.
      ms: fc.oneof(
        fc.constantFrom(1, WINDOW - 1, WINDOW),
        fc.integer({ min: 0, max: WINDOW * 1.5 }),
      ),
    }),
  },
);

type Step = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

interface Held {
  readonly result: PublishResult;
  readonly what: readonly unknown[];
  readonly at: number;
}

async function publishesMatchTheOracle(
  repository: SubscriptionRepository,
  steps: readonly Step[],
): Promise<void> {
  const { held, make } = heldQueue();
  const clock = new FakeClock(START);
  const made = serviceSetup({ repository, clock, queue: make, idempotencyWindowMs: WINDOW });
  try {
    const created = await call(made.service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(),
    });
    const subscriptionId = created.body.id as string;
    const oracle = new Map<string, Held>();
    const recorded: string[] = [];
    const queued: string[] = [];
    for (const step of steps) {
      if (step.op === 'advance') {
        clock.advance(step.ms);
        continue;
      }
      const { accountCode, key, kind, propertyId, data } = step;
      const published = {
        accountCode,
        kind,
        ...(propertyId === undefined ? {} : { propertyId }),
        data,
      };
      const what = [kind, propertyId ?? null, data ?? null];
      const now = clock.now();
      const prior = key === undefined ? undefined : oracle.get(JSON.stringify([accountCode, key]));
      const outcome = await made.service
        .publish(published, key === undefined ? undefined : { idempotencyKey: key })
        .then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
      if (prior !== undefined && now - prior.at < WINDOW) {
        if (isDeepStrictEqual(prior.what, what)) expect(outcome).toEqual({ result: prior.result });
        else expect(outcome).toMatchObject({ error: { code: 'idempotency_key_reused' } });
        continue;
      }
      if (!('result' in outcome)) throw outcome.error;
      const { result } = outcome;
      expect(recorded).not.toContain(result.id);
      expect(result.deliveries).toEqual(accountCode === 'ACME' ? [subscriptionId] : []);
      recorded.push(result.id);
      if (accountCode === 'ACME') queued.push(result.id);
      if (key !== undefined)
        oracle.set(JSON.stringify([accountCode, key]), { result, what, at: now });
    }
    // Queued and on record: each new message that matched, once, and nothing else.
    expect(held.jobs.map((job) => job.id)).toEqual(queued);
    for (const id of queued) {
      expect(await made.repository.deliveryStatus('ACME', id, subscriptionId)).toBe('pending');
    }
  } finally {
    await made.service.close();
  }
}

describe('publish with keys: the oracle', () => {
  it('answers, refuses, records and queues as the sentence says, for any publishes with keys and any clock (memory)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40 }), (steps) =>
        publishesMatchTheOracle(new MemorySubscriptionRepository(), steps),
      ),
      { numRuns: 150 },
    );
  });

  describe('on PGlite', () => {
    const databases = new TestDatabases();
    beforeAll(() => databases.start(), 120_000);
    afterAll(() => databases.stop());
    it('answers, refuses, records and queues as the sentence says (PGlite)', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), async (steps) =>
          publishesMatchTheOracle(await databases.open('pglite'), steps),
        ),
        { numRuns: 15 },
      );
    }, 300_000);
  });
});
