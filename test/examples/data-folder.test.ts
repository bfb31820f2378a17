/**
 * One reference service per DATA_DIR: a second process on the folder refuses to start, naming the
 * folder, while the first keeps serving; after the first is killed (SIGKILL, its lock file left
 * behind) a new one starts on the folder and keeps every subscription the first acknowledged.
 * Real processes started as `npm run demo` starts them.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DemoProcesses, serving } from '../support/demo-process.js';
import { demoDataDir } from '../support/pglite-template.js';

const LIVE = { 'x-api-key': 'live-demo-key', 'content-type': 'application/json' };
const processes = new DemoProcesses();
const folders: string[] = [];
afterEach(() => processes.stopAll());
afterAll(() => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))));

async function create(url: string, n: number) {
  const response = await fetch(`${url}/v1/subscriptions`, {
    method: 'POST',
    headers: LIVE,
    body: JSON.stringify({ endpointUrl: `${url}/demo/receiver?n=${n}`, events: ['folio/*'] }),
  });
  return { status: response.status, body: (await response.json()) as { id: string } };
}

async function listed(url: string): Promise<string[]> {
  const response = await fetch(`${url}/v1/subscriptions?pageSize=100`, { headers: LIVE });
  const body = (await response.json()) as { items: { id: string }[] };
  return body.items.map((s) => s.id).sort();
}

describe('reference service: one process per DATA_DIR', () => {
  it('a second service on the folder exits non-zero naming it; the first keeps every subscription it acknowledged, also after a SIGKILL and a restart', async () => {
    const folder = await demoDataDir();
    folders.push(folder);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: '0',
      DATA_DIR: folder,
      WEBHOOK_SECRET_KEYS: `demo-1:${randomBytes(32).toString('base64')}`,
    };
    for (const name of ['DATABASE_URL', 'REDIS_URL']) delete env[name];
    const first = await processes.start(env);
    if (!serving(first)) throw new Error(`the first service did not start: ${first.stderr}`);
    const acknowledged: string[] = [];
    for (let n = 0; n < 3; n += 1) {
      const created = await create(first.url, n);
      expect(created.status).toBe(201);
      acknowledged.push(created.body.id);
    }

    const second = await processes.start(env);
    expect(serving(second)).toBe(false);
    if (serving(second)) return;
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain(join(folder, 'pglite'));
    expect(second.stderr).toContain(`process ${first.child.pid}`);
    expect(second.stderr).toContain('DATA_DIR');

    // The first is untouched: it answers, and acknowledges more.
    for (let n = 3; n < 6; n += 1) {
      const created = await create(first.url, n);
      expect(created.status).toBe(201);
      acknowledged.push(created.body.id);
    }
    expect(await listed(first.url)).toEqual([...acknowledged].sort());

    // Killed, it leaves its lock file: the next service takes it over and has them all.
    await first.kill();
    const third = await processes.start(env);
    if (!serving(third)) throw new Error(`no restart after the SIGKILL: ${third.stderr}`);
    expect(await listed(third.url)).toEqual([...acknowledged].sort());
    expect(await third.stop()).toBe(0);
    // Three processes start one after the other on a busy machine: a generous guard, no timing.
  }, 300_000);
});
