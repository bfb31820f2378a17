/** The demo service: its limits over real HTTP, and the process that stops cleanly on SIGTERM. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { curlLines, startDemoService } from '../../examples/service.js';
import { FakeClock } from '../../src/index.js';
import { send } from '../support/http-client.js';

describe('demo service (npm run demo)', () => {
  it('limits the Development client to 5 per second with a 429, lets the Live client through, refuses unknown keys', async () => {
    const service = await startDemoService({ port: 0, clock: new FakeClock(0) });
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
      expect(live.headers.ratelimit).toContain('"global: 3500 per 60 s";r=3499;t=60');
      expect((await send(service.url, '/booking/v1/reservations')).status).toBe(401);
      expect(curlLines(service.url)).toContain(
        `curl -i -H 'x-api-key: live-demo-key' ${service.url}/booking/v1/reservations`,
      );
    } finally {
      await service.close();
    }
  });

  it('refuses API keys named like Object.prototype members or sent twice with a 401, never fails open', async () => {
    const service = await startDemoService({ port: 0, clock: new FakeClock(0) });
    try {
      for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
        const refused = await send(service.url, '/booking/v1/reservations', { 'x-api-key': key });
        expect([refused.status, refused.headers['content-type']]).toEqual([
          401,
          'application/problem+json; charset=utf-8',
        ]);
        expect(JSON.parse(refused.body).detail).toContain('live-demo-key or dev-demo-key');
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

  it('runs as a process that prints the curl lines and stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/service.ts'], {
      env: { ...process.env, PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8');
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: string) => {
        output += chunk;
        if (output.includes('Press Ctrl+C to stop.')) resolve();
      });
    });
    const url = /on (http:\/\/127\.0\.0\.1:[0-9]+)/.exec(output)?.[1] as string;
    expect((await send(url, '/booking/v1/offers', { 'x-api-key': 'live-demo-key' })).status).toBe(
      200,
    );
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });
});
