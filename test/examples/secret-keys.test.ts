/**
 * The reference service restarted with another WEBHOOK_SECRET_KEYS: it says so on stderr at start,
 * naming WEBHOOK_SECRET_KEYS and the subscription, a delivery ends `failed` with reason
 * `secret_unreadable` (not `no_secret`), and a rotation recovers: the next delivery is signed with
 * the new secret (the demo receiver answers 2xx only to a delivery it verified with the secrets the
 * keys read). Real processes, one after the other on one port.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type DemoProcess, DemoProcesses, serving } from '../support/demo-process.js';
import { GUARD_MS } from '../support/eventually.js';
import { demoDataDir } from '../support/pglite-template.js';
import { freePort } from '../support/ports.js';

const LIVE = { 'x-api-key': 'live-demo-key', 'content-type': 'application/json' };
const processes = new DemoProcesses();
const folders: string[] = [];
afterEach(() => processes.stopAll());
afterAll(() => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))));

async function call(url: string, path: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: LIVE,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of many shapes, read by the assertions
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** Poll a condition between turns, with a generous guard against a hang (no timing asserted). */
async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + GUARD_MS;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The log entry of a message once its delivery has ended. */
function ended(url: string, messageId: string) {
  return until(
    async () =>
      ((await call(url, '/v1/audit-logs')).body.items as { id: string; outcome: string }[]).find(
        (e) => e.id === messageId && e.outcome !== 'retry',
      ),
    (entry) => entry !== undefined,
  );
}

async function start(env: NodeJS.ProcessEnv): Promise<DemoProcess> {
  const started = await processes.start(env);
  if (!serving(started)) throw new Error(`the demo did not start: ${started.stderr}`);
  return started;
}

describe('reference service: WEBHOOK_SECRET_KEYS that cannot read the secrets', () => {
  it('says so on stderr at start, fails deliveries secret_unreadable, and recovers with a rotation', async () => {
    const folder = await demoDataDir();
    folders.push(folder);
    // One port for both processes: the subscription's endpoint is the demo's own receiver.
    const port = String(await freePort());
    const env = (key: string): NodeJS.ProcessEnv => {
      const made: NodeJS.ProcessEnv = {
        ...process.env,
        PORT: port,
        DATA_DIR: folder,
        WEBHOOK_SECRET_KEYS: `demo-1:${key}`,
      };
      for (const name of ['DATABASE_URL', 'REDIS_URL']) delete made[name];
      return made;
    };
    const first = await start(env(randomBytes(32).toString('base64')));
    const created = await call(first.url, '/v1/subscriptions', {
      endpointUrl: `${first.url}/demo/receiver`,
      events: ['reservation/*'],
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(await first.stop()).toBe(0);

    // Another key under the same id, as `demo-1:$(openssl rand -base64 32)` run again gives.
    const second = await start(env(randomBytes(32).toString('base64')));
    const line = await until(
      () =>
        second
          .stderr()
          .split('\n')
          .find((l) => l.includes(id)),
      (found) => found !== undefined,
    );
    expect(line).toContain('WEBHOOK_SECRET_KEYS');

    const emitted = await call(second.url, '/v1/test-events', { kind: 'reservation/created' });
    expect(emitted.body.deliveries).toEqual([id]);
    expect(await ended(second.url, emitted.body.id)).toMatchObject({
      outcome: 'failed',
      reason: 'secret_unreadable',
    });

    const rotated = await call(second.url, `/v1/subscriptions/${id}/secret/rotate`, {});
    expect(rotated.status).toBe(200);
    const again = await call(second.url, '/v1/test-events', { kind: 'reservation/amended' });
    // The demo receiver verifies with the secrets the keys read: only the new one now.
    expect(await ended(second.url, again.body.id)).toMatchObject({ outcome: 'delivered' });
    expect(await second.stop()).toBe(0);
    // Two processes start one after the other on a busy machine: a generous guard, no timing.
  }, 300_000);
});
