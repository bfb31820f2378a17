/** The demo service: its limits over real HTTP, and the process that stops cleanly on SIGTERM. */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { curlLines, type DemoOptions, startDemoService } from '../../examples/service.js';
import { FakeClock } from '../../src/index.js';
import { DemoProcesses, serving } from '../support/demo-process.js';
import { send } from '../support/http-client.js';
import { demoDataDir } from '../support/pglite-template.js';

const processes = new DemoProcesses();
const folders: string[] = [];
afterAll(async () => {
  await processes.stopAll();
  await Promise.all(folders.map((f) => rm(f, { recursive: true, force: true })));
});

/** A folder for the demo's embedded PostgreSQL, copied from the run's PGlite template. */
async function dataDir(): Promise<string> {
  const folder = await demoDataDir();
  folders.push(folder);
  return folder;
}

const startDemo = async (options: DemoOptions) =>
  startDemoService({ port: 0, dataDir: await dataDir(), onWarning: () => undefined, ...options });

describe('demo service (npm run demo)', () => {
  it('limits the Development client to 5 per second with a 429, lets the Live client through, refuses unknown keys', async () => {
    const service = await startDemo({ clock: new FakeClock(0) });
    try {
      const dev = { 'x-api-key': 'dev-demo-key' };
      const codes = [];
      for (let i = 0; i < 6; i++)
        codes.push((await send(service.url, '/booking/v1/reservations', dev)).status);
      expect(codes).toEqual([200, 200, 200, 200, 200, 429]);
      const refused = await send(service.url, '/booking/v1/reservations', dev);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body).toContain('Limit hit: global: 5 per 1 s.');
      const live = await send(service.url, '/booking/v1/offers', { 'x-api-key': 'live-demo-key' });
      expect(live.status).toBe(200);
      expect(live.headers.ratelimit).toBe('"global: 200 per 1 s";r=199;t=1');
      // One limiter for the demo's routes and the library's webhook API: a request counts once.
      const listed = await send(service.url, '/v1/subscriptions', { 'x-api-key': 'live-demo-key' });
      expect(listed.status).toBe(200);
      expect(listed.headers.ratelimit).toBe('"global: 200 per 1 s";r=198;t=1');
      const again = await send(service.url, '/booking/v1/offers', { 'x-api-key': 'live-demo-key' });
      expect(again.headers.ratelimit).toBe('"global: 200 per 1 s";r=197;t=1');
      expect((await send(service.url, '/booking/v1/reservations')).status).toBe(401);
      const hints = curlLines(service.url);
      expect(hints).toContain(
        `curl -i -H 'x-api-key: live-demo-key' ${service.url}/booking/v1/reservations`,
      );
      expect(hints).toContain(`"endpointUrl":"${service.url}/demo/receiver/gone"`);
      expect(hints).toContain(`${service.url}/v1/subscriptions/$gone/replay`);
      expect(hints).toContain(`${service.url}/v1/messages/$msg/replay`);
      expect(hints).toContain(
        `curl -s -X DELETE -H 'x-admin-key: admin-demo-key' ${service.url}/admin/limits/demo-dev-app/DEV-ACME`,
      );
      expect(hints).toContain(
        `curl -s -X PUT -H 'x-admin-key: admin-demo-key' -H 'content-type: application/json' -d '{"multiplier":2,"ttlSeconds":3600}' ${service.url}/admin/overrides/demo-dev-app`,
      );
      expect(hints).toContain(
        `curl -s -X DELETE -H 'x-admin-key: admin-demo-key' ${service.url}/admin/overrides/demo-dev-app`,
      );
      expect(hints).toContain(`-H 'x-admin-key: admin-demo-key' ${service.url}/metrics`);
      // A key of one's own (ADMIN_KEY) is named, never printed.
      expect(curlLines(service.url, { adminKeyFromEnv: true })).toContain(
        `-H "x-admin-key: $ADMIN_KEY" ${service.url}/metrics`,
      );
    } finally {
      await service.close();
    }
  });

  it('refuses API keys named like Object.prototype members or sent twice with a 401, never fails open', async () => {
    const service = await startDemo({ clock: new FakeClock(0) });
    try {
      for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
        for (const path of ['/booking/v1/reservations', '/v1/subscriptions']) {
          const refused = await send(service.url, path, { 'x-api-key': key });
          expect([refused.status, refused.headers['content-type']]).toEqual([
            401,
            'application/problem+json; charset=utf-8',
          ]);
          expect(JSON.parse(refused.body).detail).toContain('live-demo-key or dev-demo-key');
        }
      }
      // node:http joins a repeated header into one value: two keys are no key.
      const twice = await send(service.url, '/booking/v1/reservations', {
        'x-api-key': 'live-demo-key, dev-demo-key',
      });
      expect(twice.status).toBe(401);
    } finally {
      await service.close();
    }
  });

  it('runs as a process on a DATA_DIR that does not exist yet (created, its database initialised and migrated), says where it keeps its data, warns once that secrets are stored plain, prints the curl lines and stops cleanly on SIGTERM', async () => {
    // The first start as a reader makes it: nothing in the folder, not even the folder.
    const parent = await mkdtemp(join(tmpdir(), 'demo-data-'));
    folders.push(parent);
    const folder = join(parent, 'data');
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', DATA_DIR: folder };
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'WEBHOOK_SECRET_KEYS']) delete env[name];
    const started = await processes.start(env);
    if (!serving(started)) throw new Error(`the demo did not start: ${started.stderr}`);
    const { url } = started;
    expect(started.stdout()).toContain(`embedded PostgreSQL (PGlite) in ${join(folder, 'pglite')}`);
    expect(existsSync(join(folder, 'pglite', 'PG_VERSION'))).toBe(true);
    expect(started.stdout()).toContain(
      `curl -i -H 'x-api-key: live-demo-key' ${url}/booking/v1/reservations`,
    );
    expect(started.stderr().match(/signing secrets are stored unencrypted/g)).toHaveLength(1);
    expect(started.stderr()).toContain('WEBHOOK_SECRET_KEYS=');
    expect((await send(url, '/booking/v1/offers', { 'x-api-key': 'live-demo-key' })).status).toBe(
      200,
    );
    // An empty list from the repository: the migrations made its tables in the new database.
    const listed = await send(url, '/v1/subscriptions', { 'x-api-key': 'live-demo-key' });
    expect([listed.status, JSON.parse(listed.body).totalItems]).toEqual([200, 0]);
    expect(await started.stop()).toBe(0);
  });
});
