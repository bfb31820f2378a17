/**
 * Every attempt on record: the duration measured around the request, the listings of a
 * subscription's attempts and of the account's audit log (newest first, by cursor, filtered by
 * outcome and time), and retention in bounded batches on a fake clock.
 */
import { describe, expect, it } from 'vitest';
import {
  type AttemptOutcome,
  ConfigurationError,
  type DeliveryAttempt,
  FakeClock,
  MemorySubscriptionRepository,
} from '../../../src/index.js';
import {
  call,
  closingSetup,
  repositoryWith,
  type ServiceSetup,
  START,
  serviceSetup,
  subscriptionBody,
  until,
} from '../../support/webhook-service.js';

const setup = closingSetup();

const DAY = 24 * 60 * 60 * 1000;
const iso = (ms: number) => new Date(ms).toISOString();

/** An attempt of `subscriptionId` at `at`, ending with `outcome`. */
const anAttempt = (
  subscriptionId: string,
  at: number,
  outcome: AttemptOutcome = 'delivered',
  n = 0,
): DeliveryAttempt => ({
  id: `msg_${subscriptionId}_${n}`,
  subscriptionId,
  endpointUrl: 'https://hooks.example.com/in',
  attempt: 1,
  at,
  ...(outcome === 'delivered' ? { status: 204 } : { status: 503 }),
  outcome,
});

/** A service whose subscriptions get the ids a, b (of ACME) and c (of OTHER), created. */
async function withSubscriptions(options: Parameters<typeof serviceSetup>[0] = {}) {
  const ids = ['a', 'b', 'c'];
  const made = setup({ ...options, generateId: () => ids.shift() ?? 'z' });
  for (const account of ['ACME', 'ACME', 'OTHER']) {
    const created = await call(made.service, 'POST', '/v1/subscriptions', {
      account,
      body: subscriptionBody(),
    });
    expect(created.status).toBe(201);
  }
  return made;
}

/** Every item of a listing, following `links.next` until `endOfData`. */
async function follow(made: ServiceSetup, first: string, account = 'ACME') {
  const seen: Array<{ id: string; sequence: number; outcome: string }> = [];
  let path = first;
  for (let pages = 0; pages < 50; pages++) {
    const page = await call(made.service, 'GET', path, { account });
    expect(page.status, page.text).toBe(200);
    seen.push(...page.body.items);
    if (page.body.endOfData) return seen;
    const next = new URL(page.body.links.next);
    path = next.pathname + next.search;
  }
  throw new Error('the listing did not end');
}

describe('createWebhookService: every attempt on record', () => {
  it('measures durationMs around the request and keeps it in the log', async () => {
    const clock = new FakeClock(START);
    const { service, repository } = setup({
      clock,
      delivery: {
        // The receiver takes 120 ms on the fake clock.
        transport: async () => {
          clock.advance(120);
          return { status: 204, headers: {} };
        },
        // Told after the attempt is in the repository's log.
        onAttempt: () => void reported++,
      },
    });
    let reported = 0;
    await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    await service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
    await until(() => reported === 1, 'the attempt');
    expect(await repository.attempts('ACME', { limit: 10 })).toEqual([
      expect.objectContaining({ durationMs: 120, status: 204, outcome: 'delivered', at: START }),
    ]);
  });

  it('GET /v1/subscriptions/{id}/attempts lists that subscription’s attempts newest first by cursor; 404 for an id the account does not hold', async () => {
    const made = await withSubscriptions();
    const { repository, service } = made;
    for (let i = 0; i < 5; i++) {
      await repository.recordAttempt('ACME', anAttempt('a', START + i, 'delivered', i));
      await repository.recordAttempt('ACME', anAttempt('b', START + i, 'retry', i));
    }
    await repository.recordAttempt('OTHER', anAttempt('c', START));
    const seen = await follow(made, '/v1/subscriptions/a/attempts?limit=2');
    expect(seen.map((e) => e.id)).toEqual([4, 3, 2, 1, 0].map((i) => `msg_a_${i}`));
    const first = await call(service, 'GET', '/v1/subscriptions/a/attempts');
    expect(first.body.limit).toBe(50);
    expect((await call(service, 'GET', '/v1/subscriptions/c/attempts')).status).toBe(404);
    expect((await call(service, 'GET', '/v1/subscriptions/nope/attempts')).status).toBe(404);
    const theirs = await call(service, 'GET', '/v1/subscriptions/c/attempts', { account: 'OTHER' });
    expect(theirs.body.items.map((e: { id: string }) => e.id)).toEqual(['msg_c_0']);
    const post = await call(service, 'POST', '/v1/subscriptions/a/attempts');
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect((await call(service, 'GET', '/v1/subscriptions/a/attempts?limit=501')).status).toBe(400);
  });

  it('filters by outcome, since and until on both listings, each and together', async () => {
    const made = await withSubscriptions();
    const { repository } = made;
    const outcomes: AttemptOutcome[] = ['delivered', 'retry', 'failed', 'disabled', 'lost'];
    for (let i = 0; i < 10; i++) {
      const subscription = i % 2 === 0 ? 'a' : 'b';
      await repository.recordAttempt(
        'ACME',
        anAttempt(subscription, START + i * DAY, outcomes[i % 5], i),
      );
    }
    const ids = (items: Array<{ id: string }>) => items.map((e) => e.id);
    expect(ids(await follow(made, '/v1/audit-logs?outcome=failed&limit=1'))).toEqual([
      'msg_b_7',
      'msg_a_2',
    ]);
    expect(ids(await follow(made, '/v1/audit-logs?outcome=retry,lost'))).toEqual([
      'msg_b_9',
      'msg_a_6',
      'msg_a_4',
      'msg_b_1',
    ]);
    expect(ids(await follow(made, '/v1/subscriptions/a/attempts?outcome=retry,lost'))).toEqual([
      'msg_a_6',
      'msg_a_4',
    ]);
    const since = encodeURIComponent(iso(START + 3 * DAY));
    const untilTime = encodeURIComponent(iso(START + 6 * DAY));
    expect(ids(await follow(made, `/v1/audit-logs?since=${since}&until=${untilTime}`))).toEqual([
      'msg_b_5',
      'msg_a_4',
      'msg_b_3',
    ]);
    // Another account reads none of them.
    expect(await follow(made, '/v1/audit-logs?outcome=failed', 'OTHER')).toEqual([]);
  });

  it('answers a bad filter 400 with problem details naming the parameter', async () => {
    const { service } = await withSubscriptions();
    for (const [query, parameter] of [
      ['outcome=ok', 'outcome'],
      ['outcome=', 'outcome'],
      ['outcome=failed&outcome=retry', 'outcome'],
      ['since=yesterday', 'since'],
      ['since=2026-01-01', 'since'],
      ['until=2026-13-01T00:00:00Z', 'until'],
      ['since=2026-02-29T00:00:00Z', 'since'],
      ['since=2026-04-31T00:00:00Z', 'since'],
      ['until=2026-01-01T24:00:00Z', 'until'],
      ['since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z', 'until'],
    ] as const) {
      for (const path of ['/v1/audit-logs', '/v1/subscriptions/a/attempts']) {
        const answer = await call(service, 'GET', `${path}?${query}`);
        expect(answer.status, query).toBe(400);
        expect(answer.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
        expect(answer.body, query).toMatchObject({ code: 'invalid_query', parameter });
        expect(answer.body.detail).toContain(parameter);
      }
    }
  });

  it('a cursor holds only for the filters and the listing that gave it', async () => {
    const { service, repository } = await withSubscriptions();
    for (let i = 0; i < 4; i++) {
      await repository.recordAttempt('ACME', anAttempt('a', START + i, 'failed', i));
    }
    const page = await call(service, 'GET', '/v1/audit-logs?outcome=failed&limit=1');
    const cursor = encodeURIComponent(page.body.nextCursor);
    const same = await call(
      service,
      'GET',
      `/v1/audit-logs?outcome=failed&limit=1&cursor=${cursor}`,
    );
    expect(same.status).toBe(200);
    expect(same.body.items.map((e: { id: string }) => e.id)).toEqual(['msg_a_2']);
    const otherFilter = await call(service, 'GET', `/v1/audit-logs?outcome=retry&cursor=${cursor}`);
    expect(otherFilter.status).toBe(400);
    expect(otherFilter.body.code).toBe('cursor_query_mismatch');
    const otherListing = await call(
      service,
      'GET',
      `/v1/subscriptions/a/attempts?outcome=failed&limit=1&cursor=${cursor}`,
    );
    expect(otherListing.status).toBe(400);
    expect(otherListing.body).toMatchObject({ code: 'invalid_query', parameter: 'cursor' });
  });
});

describe('createWebhookService: retention of attempts', () => {
  it('deletes attempts older than attemptRetentionMs (30 days by default) in batches, on demand', async () => {
    const repository = new MemorySubscriptionRepository();
    const deletes: number[] = [];
    const counting = repositoryWith(repository, {
      deleteAttemptsBefore: async (at: number, limit: number) => {
        const deleted = await repository.deleteAttemptsBefore(at, limit);
        deletes.push(deleted);
        return deleted;
      },
    });
    const { service, clock } = setup({ repository: counting });
    for (let i = 0; i < 2_500; i++) {
      await repository.recordAttempt('ACME', anAttempt('a', START, 'delivered', i));
    }
    await repository.recordAttempt('ACME', anAttempt('a', START + DAY, 'delivered', 9_999));
    clock.set(START + 30 * DAY);
    expect(await service.deleteExpiredAttempts()).toBe(0);
    clock.set(START + 30 * DAY + 1);
    expect(await service.deleteExpiredAttempts()).toBe(2_500);
    expect(deletes.slice(1)).toEqual([1_000, 1_000, 500]);
    expect((await repository.attempts('ACME', { limit: 10 })).map((e) => e.id)).toEqual([
      'msg_a_9999',
    ]);
    clock.set(START + 31 * DAY + 1);
    expect(await service.deleteExpiredAttempts()).toBe(1);
  });

  it('takes attemptRetentionMs and attemptRetentionIntervalMs, and refuses bad values', async () => {
    const { service, repository, clock } = setup({
      attemptRetentionMs: DAY,
      attemptRetentionIntervalMs: 0,
    });
    await repository.recordAttempt('ACME', anAttempt('a', START));
    clock.set(START + DAY + 1);
    expect(await service.deleteExpiredAttempts()).toBe(1);
    for (const bad of [
      { attemptRetentionMs: 0 },
      { attemptRetentionMs: -1 },
      { attemptRetentionMs: 1.5 },
      { attemptRetentionIntervalMs: 2 ** 31 },
    ]) {
      expect(() => serviceSetup(bad)).toThrow(ConfigurationError);
    }
  });
});
