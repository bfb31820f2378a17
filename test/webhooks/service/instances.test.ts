/**
 * The webhook service the same on every instance, and kept across a restart: real processes
 * (test/support/webhook-instance.ts) on one real PostgreSQL, delivering to a real receiver. The
 * server is the file's own, not the run's shared one: the file restarts it and ends its backends.
 *
 * A change made on A reaches B: each check polls B from A's answer until it holds, with a guard
 * that fails a change that never arrives; the times seen are printed at the end of the file (how
 * fast a change arrives is a figure of the webhook-store benchmark, not a test's assertion). After
 * a restart of the PostgreSQL server itself, A's first create is retried for ten seconds (its pool
 * may meet a closed connection first).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../../src/index.js';
import { eventually, GUARD_MS } from '../../support/eventually.js';
import { type InstanceProcess, InstanceProcesses } from '../../support/instance-process.js';
import { pgliteFolder } from '../../support/pglite-template.js';
import { PostgresServer } from '../../support/postgres-server.js';
import {
  type ReceivedDelivery,
  startReceiver,
  type WebhookReceiver,
} from '../../support/webhook-receiver.js';

const SCHEMA = 'instances';
const SECRET_KEY = randomBytes(32).toString('base64');

const processes = new InstanceProcesses();
let server: PostgresServer | undefined;
let receiver: WebhookReceiver;
let a: InstanceProcess;
let b: InstanceProcess;
let dataDir: string | undefined;
/**
 * The first instance on PGlite, its folder copied from the run's template: started with the others,
 * as PGlite's start is long.
 */
let lite: InstanceProcess;
/** What each bound took, in ms, by check. */
const timings: Record<string, number[]> = {};
/** What else was seen, printed with the timings. */
const notes: string[] = [];

const pgEnv = (): Record<string, string> => ({
  DATABASE_URL: (server as PostgresServer).url,
  SCHEMA,
  SECRET_KEY,
});

beforeAll(async () => {
  const startLite = async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'pglite-instance-'));
    await pgliteFolder(dataDir);
    return processes.start('P', { DATA_DIR: dataDir, SECRET_KEY });
  };
  [server, receiver, lite] = await Promise.all([
    PostgresServer.start(),
    startReceiver(),
    startLite(),
  ]);
  // Started together: their migrations meet under the advisory lock.
  [a, b] = await Promise.all([processes.start('A', pgEnv()), processes.start('B', pgEnv())]);
});

afterAll(async () => {
  // Each step runs whatever the one before did.
  try {
    await processes.stopAll();
  } finally {
    try {
      await receiver?.close();
      if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
    } finally {
      await server?.stop();
    }
  }
  const seen = Object.entries(timings).map(([check, ms]) => `${check}: ${ms.join(', ')} ms`);
  console.log(`instances: ${[...seen, ...notes].join('; ')}`);
});

/**
 * Poll `check` until it holds; fails once `deadline` ms have passed since `from` (it never
 * arrived). Resolves to the ms from `from` to the first time it held, kept under `name`.
 */
async function within(
  name: string,
  from: number,
  check: () => Promise<boolean>,
  deadline = GUARD_MS,
): Promise<number> {
  for (;;) {
    if (await check()) {
      const took = Math.round(performance.now() - from);
      timings[name] = [...(timings[name] ?? []), took];
      return took;
    }
    if (performance.now() - from > deadline) {
      throw new Error(`${name}: not within ${deadline} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** An event of the account that subscriptions on `reservation/*` match. */
const event = (accountCode: string) => ({
  accountCode,
  kind: 'reservation/created',
  data: { reservation: 'R1' },
});

/** Create a subscription on `on`; its answer's body (with the secret) and when it came. */
async function create(
  on: InstanceProcess,
  account: string,
  path: string,
  fields: Record<string, unknown> = {},
) {
  const created = await on.call('POST', '/v1/subscriptions', {
    account,
    body: { endpointUrl: `${receiver.url}/${path}`, events: ['reservation/*'], ...fields },
  });
  const at = performance.now();
  expect(created.status).toBe(201);
  return { subscription: created.body, at };
}

/** Whether an event of `account` published on `on` is matched by subscription `id`. */
const matches = async (on: InstanceProcess, account: string, id: string) =>
  (await on.publish(event(account))).deliveries.includes(id);

/** The delivery of message `id` the receiver got, waited for (see `eventually`). */
const delivery = (id: string): Promise<ReceivedDelivery> =>
  eventually(`a delivery of message ${id}`, () =>
    receiver.received.find((d) => d.headers['webhook-id'] === id),
  );

/** The pid of an instance's LISTEN backend, found by its application name; undefined while none. */
async function listenBackend(name: string): Promise<string | undefined> {
  const pids = await (server as PostgresServer).query(
    `SELECT pid FROM pg_stat_activity WHERE application_name = '${name}' AND query LIKE 'LISTEN%'`,
  );
  const rows = pids === '' ? [] : pids.split('\n');
  expect(rows.length).toBeLessThanOrEqual(1);
  return rows[0];
}

describe('two instances on one PostgreSQL', () => {
  it('a subscription created on A is matched by an event published on B', async () => {
    expect((await b.publish(event('T1'))).deliveries).toEqual([]);
    const { subscription, at } = await create(a, 'T1', 't1');
    await within('create on A, matched on B', at, () => matches(b, 'T1', subscription.id));
    // B has applied A's change: the same revision on both.
    expect((await b.stats()).revision).toBe((await a.stats()).revision);
    const read = await b.call('GET', `/v1/subscriptions/${subscription.id}`, { account: 'T1' });
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ ...subscription, secret: undefined });
  });

  it('after a delete on A, B stops matching', async () => {
    const { subscription, at } = await create(a, 'T2', 't2');
    await within('create on A, matched on B', at, () => matches(b, 'T2', subscription.id));
    const deleted = await a.call('DELETE', `/v1/subscriptions/${subscription.id}`, {
      account: 'T2',
    });
    const since = performance.now();
    expect(deleted.status).toBe(204);
    await within('delete on A, unmatched on B', since, async () => {
      const { deliveries } = await b.publish(event('T2'));
      return deliveries.length === 0;
    });
    const read = await b.call('GET', `/v1/subscriptions/${subscription.id}`, { account: 'T2' });
    expect(read.status).toBe(404);
  });

  it('with B’s notification connection killed before each, a create and a delete on A still reach B', async () => {
    const pg = server as PostgresServer;
    const killed = await listenBackend('B');
    expect(killed).toBeDefined();
    expect(await pg.query(`SELECT pg_terminate_backend(${killed})`)).toBe('t');
    const { subscription, at } = await create(a, 'T3', 't3');
    // The change was made while B was not listening: only the reload after B's reconnect finds it.
    const downAtCreate = (await listenBackend('B')) === undefined;
    await within('create on A after B lost LISTEN, matched on B', at, () =>
      matches(b, 'T3', subscription.id),
    );
    const reopened = await listenBackend('B');
    expect(reopened).toBeDefined();
    expect(reopened).not.toBe(killed);

    expect(await pg.query(`SELECT pg_terminate_backend(${reopened})`)).toBe('t');
    const deleted = await a.call('DELETE', `/v1/subscriptions/${subscription.id}`, {
      account: 'T3',
    });
    const since = performance.now();
    expect(deleted.status).toBe(204);
    const downAtDelete = (await listenBackend('B')) === undefined;
    await within('delete on A after B lost LISTEN, unmatched on B', since, async () => {
      const { deliveries } = await b.publish(event('T3'));
      return deliveries.length === 0;
    });
    expect((await b.stats()).revision).toBe((await a.stats()).revision);
    expect(await b.errors()).toEqual([]);
    notes.push(`B listening at A's create: ${!downAtCreate}, at A's delete: ${!downAtDelete}`);
  });

  it('a burst of creates and deletes on A, B’s LISTEN connection killed in the middle: B ends holding what A holds', async () => {
    const pg = server as PostgresServer;
    const body = (n: number) => ({
      endpointUrl: `${receiver.url}/burst`,
      events: [`reservation/e${n}`],
      propertyIds: [`P${n % 3}`],
    });
    const account = (n: number) => `B${n % 4}`;
    const createAll = (from: number, to: number) =>
      Promise.all(
        Array.from({ length: to - from }, (_, k) =>
          a.call('POST', '/v1/subscriptions', { account: account(from + k), body: body(from + k) }),
        ),
      );
    const first = await createAll(0, 15);
    const killed = await listenBackend('B');
    expect(await pg.query(`SELECT pg_terminate_backend(${killed})`)).toBe('t');
    const created = [...first, ...(await createAll(15, 30))];
    expect(created.map((c) => c.status)).toEqual(created.map(() => 201));
    // Every other one deleted again.
    const deleted = await Promise.all(
      created.flatMap((c, n) =>
        n % 2 === 0
          ? [a.call('DELETE', `/v1/subscriptions/${c.body.id}`, { account: account(n) })]
          : [],
      ),
    );
    const since = performance.now();
    expect(deleted.map((d) => d.status)).toEqual(deleted.map(() => 204));
    const held = await a.stats();
    await within('burst on A, B holds the same', since, async () => {
      const seen = await b.stats();
      return JSON.stringify(seen) === JSON.stringify(held);
    });
    // What B matches is what A does: each kept subscription, and none deleted.
    for (const [n, c] of created.entries()) {
      const kind = `reservation/e${n}`;
      const published = await b.publish({ accountCode: account(n), kind, propertyId: `P${n % 3}` });
      expect(published.deliveries).toEqual(n % 2 === 0 ? [] : [c.body.id]);
    }
    expect(await b.errors()).toEqual([]);
  });

  it('the PostgreSQL server restarted under both: a create on A afterwards reaches B', async () => {
    const pg = server as PostgresServer;
    const down = performance.now();
    await pg.restart();
    const up = performance.now();
    let created: Awaited<ReturnType<typeof create>> | undefined;
    // A's first request may meet a connection the restart closed: its pool drops it.
    await within('server restart, A creates', up, async () => {
      const answer = await a.call('POST', '/v1/subscriptions', {
        account: 'T7',
        body: { endpointUrl: `${receiver.url}/t7`, events: ['reservation/*'] },
      });
      if (answer.status === 201) created = { subscription: answer.body, at: performance.now() };
      return answer.status === 201;
    });
    const { subscription, at } = created as NonNullable<typeof created>;
    await within('server restart, create on A matched on B', at, () =>
      matches(b, 'T7', subscription.id),
    );
    notes.push(`server down ${Math.round(up - down)} ms`);
    expect(await listenBackend('B')).toBeDefined();
  });

  it('a rotate on A: B’s deliveries carry the old and the new signature, though B kept the old secret', async () => {
    const { subscription, at } = await create(a, 'T5', 't5');
    await within('create on A, matched on B', at, () => matches(b, 'T5', subscription.id));
    const oldSecret: string = subscription.secret;
    // B signs once before the rotation: it keeps the lone secret of this version of the subscription.
    const before = await delivery((await b.publish(event('T5'))).id);
    expect(String(before.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifyWebhook(before.body, before.headers, { secrets: oldSecret }).ok).toBe(true);
    const rotated = await a.call('POST', `/v1/subscriptions/${subscription.id}/secret/rotate`, {
      account: 'T5',
    });
    const since = performance.now();
    expect(rotated.status).toBe(200);
    const newSecret: string = rotated.body.secret;
    expect(newSecret).not.toBe(oldSecret);
    let last: ReceivedDelivery | undefined;
    await within('rotate on A, both signatures from B', since, async () => {
      const { id } = await b.publish(event('T5'));
      last = await delivery(id);
      return String(last.headers['webhook-signature']).split(' ').length === 2;
    });
    const got = last as ReceivedDelivery;
    expect(got.path).toBe('/t5');
    for (const secret of [oldSecret, newSecret]) {
      expect(verifyWebhook(got.body, got.headers, { secrets: secret }).ok).toBe(true);
    }
  });

  it('an ed25519 rotate on A: B’s deliveries carry a v1a signature by the new key beside the old', async () => {
    const { subscription, at } = await create(a, 'T8', 't8', { signatureType: 'ed25519' });
    await within('create on A, matched on B', at, () => matches(b, 'T8', subscription.id));
    const oldKey: string = subscription.publicKey;
    expect(oldKey.startsWith('whpk_')).toBe(true);
    const before = await delivery((await b.publish(event('T8'))).id);
    expect(String(before.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifyWebhook(before.body, before.headers, { publicKeys: oldKey }).ok).toBe(true);
    const rotated = await a.call('POST', `/v1/subscriptions/${subscription.id}/secret/rotate`, {
      account: 'T8',
    });
    const since = performance.now();
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toBeUndefined();
    const newKey: string = rotated.body.publicKey;
    expect(newKey).not.toBe(oldKey);
    let last: ReceivedDelivery | undefined;
    await within('ed25519 rotate on A, both signatures from B', since, async () => {
      const { id } = await b.publish(event('T8'));
      last = await delivery(id);
      return String(last.headers['webhook-signature']).split(' ').length === 2;
    });
    const got = last as ReceivedDelivery;
    expect(String(got.headers['webhook-signature'])).toMatch(/^v1a,\S+ v1a,\S+$/);
    for (const key of [oldKey, newKey]) {
      expect(verifyWebhook(got.body, got.headers, { publicKeys: key }).ok).toBe(true);
    }
  });

  it('a PATCH of the headers on A: B’s next deliveries send the new headers', async () => {
    const { subscription, at } = await create(a, 'T6', 't6');
    await within('create on A, matched on B', at, () => matches(b, 'T6', subscription.id));
    const patched = await a.call('PATCH', `/v1/subscriptions/${subscription.id}`, {
      account: 'T6',
      body: { headers: { 'X-Team': 'billing' }, description: 'patched on A' },
    });
    const since = performance.now();
    expect(patched.status).toBe(200);
    await within('PATCH of headers on A, sent by B', since, async () => {
      const { id } = await b.publish(event('T6'));
      return (await delivery(id)).headers['x-team'] === 'billing';
    });
    const read = await b.call('GET', `/v1/subscriptions/${subscription.id}`, { account: 'T6' });
    expect(read.body).toMatchObject({
      headers: { 'X-Team': 'billing' },
      description: 'patched on A',
    });
  });
});

describe('a restart keeps subscriptions, secrets and the delivery log', () => {
  /** What a restart must keep: a subscription (with the secret shown at create) and its log. */
  interface Kept {
    // biome-ignore lint/suspicious/noExplicitAny: the create's parsed JSON body
    readonly subscription: any;
    // biome-ignore lint/suspicious/noExplicitAny: the audit log's parsed JSON items
    readonly log: any[];
  }

  /** Create, deliver once, and read the log: what a restart must keep. */
  async function keptBeforeRestart(on: InstanceProcess, account: string): Promise<Kept> {
    const { subscription } = await create(on, account, account);
    const { id } = await on.publish(event(account));
    const first = await delivery(id);
    expect(verifyWebhook(first.body, first.headers, { secrets: subscription.secret }).ok).toBe(
      true,
    );
    const log = await logOnceItHolds(on, account, 1);
    return { subscription, log };
  }

  /**
   * The account's delivery log once it holds `count` attempts (the log is written after each),
   * oldest first (the audit log is newest first).
   */
  async function logOnceItHolds(on: InstanceProcess, account: string, count: number) {
    return eventually(`the log of ${account} holding ${count}`, async () => {
      const log = await on.call('GET', '/v1/audit-logs', { account });
      expect(log.status).toBe(200);
      return log.body.items.length >= count ? log.body.items.reverse() : undefined;
    });
  }

  /**
   * After the restart: everything is there, and a new delivery verifies with the secret shown at
   * create; resolves to what the next restart must keep.
   */
  async function checkAfterRestart(
    on: InstanceProcess,
    account: string,
    kept: Kept,
  ): Promise<Kept> {
    const { secret, ...stored } = kept.subscription;
    const list = await on.call('GET', '/v1/subscriptions', { account });
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([stored]);
    const read = await on.call('GET', `/v1/subscriptions/${stored.id}`, { account });
    expect(read.body).toEqual(stored);
    expect((await on.call('GET', '/v1/audit-logs', { account })).body.items).toEqual(
      [...kept.log].reverse(),
    );

    const { id, deliveries } = await on.publish(event(account));
    expect(deliveries).toEqual([stored.id]);
    const next = await delivery(id);
    expect(next.path).toBe(`/${account}`);
    expect(verifyWebhook(next.body, next.headers, { secrets: secret }).ok).toBe(true);
    const log = await logOnceItHolds(on, account, kept.log.length + 1);
    expect(log.slice(0, kept.log.length)).toEqual(kept.log);
    expect(log.at(-1)).toMatchObject({ subscriptionId: stored.id, outcome: 'delivered' });
    return { subscription: kept.subscription, log };
  }

  it('on PostgreSQL: A killed (SIGKILL) and started again on the same database', async () => {
    const kept = await keptBeforeRestart(a, 'T4');
    // The secret is encrypted at rest: the database never holds it as shown.
    const stored = await (server as PostgresServer).query(
      `SELECT secret FROM ${SCHEMA}.signing_secrets`,
    );
    expect(stored).not.toContain(kept.subscription.secret.slice('whsec_'.length));
    expect(await a.stop('SIGKILL')).toBeNull();
    a = await processes.start('A', pgEnv());
    await checkAfterRestart(a, 'T4', kept);
    // The other instance never stopped, and both hold the same revision.
    expect(await matches(b, 'T4', kept.subscription.id)).toBe(true);
    expect((await a.stats()).revision).toBe((await b.stats()).revision);
  });

  it('on PGlite: the process stopped, then killed (SIGKILL), and started again on the same data folder', async () => {
    const env = { DATA_DIR: dataDir as string, SECRET_KEY };
    const first = lite;
    const kept = await keptBeforeRestart(first, 'T6');
    // One process per folder: each is stopped before the next opens it.
    expect(await first.stop('SIGTERM')).toBe(0);
    const second = await processes.start('P', env);
    const keptAgain = await checkAfterRestart(second, 'T6', kept);
    // A process that dies without closing PGlite loses nothing it answered for either.
    expect(await second.stop('SIGKILL')).toBeNull();
    const third = await processes.start('P', env);
    await checkAfterRestart(third, 'T6', keptAgain);
    expect(await third.stop('SIGTERM')).toBe(0);
  });
});
