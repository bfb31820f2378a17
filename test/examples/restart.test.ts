/**
 * The reference service keeps what it stores across a restart: subscriptions, their signing
 * secrets (encrypted at rest with WEBHOOK_SECRET_KEYS), the delivery log and the deliveries still
 * pending, in embedded PostgreSQL in DATA_DIR between two real processes, and on a PostgreSQL
 * server with DATABASE_URL.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoService } from '../../examples/service.js';
import { verifyWebhook } from '../../src/index.js';
import { PostgresSubscriptionRepository } from '../../src/postgres/index.js';
import { type DemoProcess, DemoProcesses, serving } from '../support/demo-process.js';
import { GUARD_MS } from '../support/eventually.js';
import { demoDataDir } from '../support/pglite-template.js';
import { sharedPostgres } from '../support/shared-postgres.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * Each test starts real processes on PGlite (about 6 s a start on a quiet 2-core machine, WebAssembly
 * compiled anew in each): 30 s a test there, and several times that when other work keeps it busy.
 */
const PROCESS_TEST_TIMEOUT_MS = 240_000;
const LIVE = { 'x-api-key': 'live-demo-key', 'content-type': 'application/json' };
const processes = new DemoProcesses();

/** A demo started as `npm run demo` starts it, with its output kept. */
async function startProcess(env: NodeJS.ProcessEnv): Promise<DemoProcess> {
  const started = await processes.start(env);
  if (!serving(started)) throw new Error(`the demo exited: ${started.stderr}`);
  return started;
}

async function call(url: string, path: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: LIVE,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of many shapes, read by the assertions
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** The account's delivery log once it holds `count` entries (a delivery is logged after it ends). */
async function logOf(url: string, count: number) {
  const deadline = Date.now() + GUARD_MS;
  for (;;) {
    const log = await call(url, '/v1/audit-logs');
    if (log.body.items.length >= count || Date.now() > deadline) return log.body.items;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

let receiver: WebhookReceiver;
const folders: string[] = [];
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await processes.stopAll();
  await receiver.close();
  await Promise.all(folders.map((f) => rm(f, { recursive: true, force: true })));
});

describe('reference service across a restart', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('keeps subscriptions, secrets (encrypted at rest) and the delivery log in DATA_DIR between two processes', async () => {
    const folder = await demoDataDir();
    folders.push(folder);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: '0',
      DATA_DIR: folder,
      WEBHOOK_ALLOW: '127.0.0.1',
      WEBHOOK_SECRET_KEYS: `demo-1:${randomBytes(32).toString('base64')}`,
    };
    for (const name of ['DATABASE_URL', 'REDIS_URL']) delete env[name];

    const first = await startProcess(env);
    expect(first.stdout()).toContain(`embedded PostgreSQL (PGlite) in ${join(folder, 'pglite')}`);
    expect(first.stdout()).toContain('encrypted at rest');
    expect(first.stderr()).not.toContain('unencrypted');
    const created = await call(first.url, '/v1/subscriptions', {
      endpointUrl: `${receiver.url}/restart`,
      events: ['reservation/*'],
    });
    expect(created.status).toBe(201);
    const { id, secret } = created.body;
    const before = receiver.received.length;
    const emitted = await call(first.url, '/v1/test-events', { kind: 'reservation/created' });
    expect(emitted.body.deliveries).toEqual([id]);
    await receiver.waitFor(before + 1);
    const sent = receiver.received[before]!;
    expect(verifyWebhook(sent.body, sent.headers, { secrets: secret }).ok).toBe(true);
    expect((await logOf(first.url, 1)).map((e: { id: string }) => e.id)).toEqual([emitted.body.id]);
    expect(await first.stop()).toBe(0);

    // At rest, the secret is AES-256-GCM ciphertext under the key's id, never the secret itself.
    const database = new PGlite(join(folder, 'pglite'));
    const { rows } = await database.query<{ secret: string; key_id: string }>(
      'SELECT secret, key_id FROM api_conventions.signing_secrets',
    );
    await database.close();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ key_id: 'demo-1' });
    expect(rows[0]!.secret).toMatch(/^gcm1\.demo-1\./);
    expect(rows[0]!.secret).not.toContain(secret.slice('whsec_'.length));

    const second = await startProcess(env);
    try {
      const listed = await call(second.url, '/v1/subscriptions');
      expect(listed.body.totalItems).toBe(1);
      expect(listed.body.items[0]).toEqual(
        Object.fromEntries(Object.entries(created.body).filter(([key]) => key !== 'secret')),
      );
      expect((await call(second.url, `/v1/subscriptions/${id}`)).status).toBe(200);
      // The secret shown at create still signs: the index was loaded, the key decrypts.
      const again = await call(second.url, '/v1/test-events', { kind: 'reservation/amended' });
      expect(again.body.deliveries).toEqual([id]);
      await receiver.waitFor(before + 2);
      const resent = receiver.received[before + 1]!;
      expect(resent.headers['webhook-id']).toBe(again.body.id);
      expect(verifyWebhook(resent.body, resent.headers, { secrets: secret }).ok).toBe(true);
      // The log holds, newest first, the delivery made after the restart, then the one before.
      const log = await logOf(second.url, 2);
      expect(log.map((e: { id: string; outcome: string }) => [e.id, e.outcome])).toEqual([
        [again.body.id, 'delivered'],
        [emitted.body.id, 'delivered'],
      ]);
      expect(log[0].sequence).toBeGreaterThan(log[1].sequence);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });

  it('a delivery in flight when the process is killed is sent again by the next one, with the same webhook-id and body: on record before it was queued, it outlives the memory queue', async () => {
    const folder = await demoDataDir();
    folders.push(folder);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: '0',
      DATA_DIR: folder,
      WEBHOOK_ALLOW: '127.0.0.1',
    };
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'WEBHOOK_SECRET_KEYS']) delete env[name];
    // The receiver takes the first delivery and never answers it.
    const held: ServerResponse[] = [];
    receiver.respond((d, res) =>
      d.path === '/held' && held.push(res) === 1 ? undefined : { status: 204 },
    );
    try {
      const first = await startProcess(env);
      const created = await call(first.url, '/v1/subscriptions', {
        endpointUrl: `${receiver.url}/held`,
        events: ['folio/*'],
      });
      const before = receiver.received.length;
      const emitted = await call(first.url, '/v1/test-events', { kind: 'folio/created' });
      await receiver.waitFor(before + 1);
      await first.kill();

      const second = await startProcess(env);
      await receiver.waitFor(before + 2);
      expect(await second.stop()).toBe(0);
      const [sent, resent] = receiver.received.slice(before);
      expect(resent?.path).toBe('/held');
      expect(resent?.headers['webhook-id']).toBe(emitted.body.id);
      expect(resent?.body).toBe(sent?.body);
      expect(
        verifyWebhook(resent!.body, resent!.headers, { secrets: created.body.secret }).ok,
      ).toBe(true);
      // On record: delivered, once, by the second process.
      const database = new PGlite(join(folder, 'pglite'));
      const repository = await PostgresSubscriptionRepository.open({ database });
      try {
        expect(await repository.deliveryStatus('LIVE-ACME', emitted.body.id, created.body.id)).toBe(
          'delivered',
        );
        const attempts = await repository.attempts('LIVE-ACME', { limit: 10 });
        expect(attempts.map((a) => [a.id, a.outcome, a.status])).toEqual([
          [emitted.body.id, 'delivered', 204],
        ]);
      } finally {
        await repository.close();
        await database.close();
      }
    } finally {
      for (const res of held) res.destroy();
      receiver.respond(() => ({ status: 204 }));
    }
  });

  it('keeps them on a PostgreSQL server with DATABASE_URL', async () => {
    const postgres = await sharedPostgres();
    try {
      const start = () =>
        startDemoService({
          port: 0,
          databaseUrl: postgres.url,
          allow: ['127.0.0.1'],
          onWarning: () => undefined,
        });
      const first = await start();
      expect(first.storage).toBe(`PostgreSQL at ${postgres.url}`);
      expect(first.secretsAtRest).toBe('plain');
      const created = await call(first.url, '/v1/subscriptions', {
        endpointUrl: `${receiver.url}/server`,
        events: ['folio/*'],
      });
      expect(created.status).toBe(201);
      await first.close();
      const second = await start();
      try {
        const listed = await call(second.url, '/v1/subscriptions');
        expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual([created.body.id]);
        const before = receiver.received.length;
        await call(second.url, '/v1/test-events', { kind: 'folio/created' });
        await receiver.waitFor(before + 1);
        const sent = receiver.received[before]!;
        expect(verifyWebhook(sent.body, sent.headers, { secrets: created.body.secret }).ok).toBe(
          true,
        );
      } finally {
        await second.close();
      }
    } finally {
      await postgres.release();
    }
  });
});
