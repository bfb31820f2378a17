/** The README's walk-through of the reference service, its curl lines run as a reader runs them. */
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { type DemoService, startDemoService } from '../../examples/service.js';
import { FakeClock } from '../../src/index.js';

const root = resolve(import.meta.dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const hasCurl = spawnSync('curl', ['--version']).status === 0;
const bash = (script: string) => promisify(execFile)('bash', ['-c', script], { cwd: root });

/** The README's numbered shell blocks: the walk-through, then the steps after a restart. */
const blocks = [...readme.matchAll(/```sh\n(# [0-9]+\. [\s\S]*?)```/g)].map((m) => m[1] ?? '');

/** The status of every response printed with `curl -i`, in order. */
const statuses = (stdout: string) =>
  [...stdout.matchAll(/^HTTP\/1\.1 ([0-9]{3}) /gm)].map((m) => Number(m[1]));

/** Every line of the output that is a JSON object. */
const jsonLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('README walk-through (npm run demo)', () => {
  it.skipIf(!hasCurl)(
    'runs as written: create, refuse, list, read, change, rotate, delete, deliver and verify, the delivery log by cursor, a burst, and a restart that keeps them',
    async () => {
      expect(blocks).toHaveLength(2);
      const [steps = '', afterRestart = ''] = blocks;
      const dataDir = await mkdtemp(join(tmpdir(), 'demo-data-'));
      // A clock that stays put: the burst of step 10 falls in one second however slow curl is.
      const clock = new FakeClock(Date.now());
      let logged = 0;
      let onLogged = () => {};
      const start = (port: number) =>
        startDemoService({
          port,
          clock,
          dataDir,
          onWarning: () => undefined,
          onDelivery: () => {
            logged += 1;
            onLogged();
          },
        });
      const deliveries = (count: number) =>
        new Promise<void>((done) => {
          onLogged = () => logged >= count && done();
          onLogged();
        });
      let service: DemoService = await start(0);
      try {
        const run = (script: string) =>
          bash(script.replaceAll('http://127.0.0.1:3000', service.url));
        const [make = '', read = ''] = steps.split(/^(?=# 8\. )/m);
        const made = (await run(make)).stdout;
        // Steps 3 to 7: the list, the read, the change, the rotation, the delete, two events.
        expect(statuses(made)).toEqual([200, 200, 200, 200, 204, 202, 202]);
        const [created, refused, listed, readBack, changed, rotated, gone] = jsonLines(made);
        expect(created).toMatchObject({ events: ['reservation/*'], status: 'enabled' });
        expect(created?.secret).toMatch(/^whsec_/);
        const { secret: _, ...shown } = created ?? {};
        expect(refused).toMatchObject({ code: 'invalid_subscription_request' });
        expect(listed).toMatchObject({ totalItems: 1 });
        expect(listed?.items).toEqual([shown]);
        expect(readBack).toEqual(shown);
        expect(changed).toMatchObject({ id: created?.id, propertyIds: ['BER'] });
        expect(rotated?.secret).toMatch(/^whsec_/);
        expect(rotated?.secret).not.toBe(created?.secret);
        expect(gone).toMatchObject({ status: 404, code: 'subscription_not_found' });
        await deliveries(2); // each event of step 7 delivered and logged

        const { stdout } = await run(read);
        const [received, ...pages] = jsonLines(stdout);
        expect(received?.items).toEqual([
          expect.objectContaining({ verified: true }),
          expect.objectContaining({ verified: true }),
        ]);
        // The first page (the newest), then the page its nextCursor names (the capture itself
        // prints nothing).
        expect(
          pages.map((p) => [(p.items as Array<{ sequence: number }>)[0]?.sequence, p.endOfData]),
        ).toEqual([
          [2, false],
          [1, true],
        ]);
        expect(stdout.trim().endsWith('200 200 200 200 200 429')).toBe(true);

        // Ctrl+C and `npm run demo` again: a new process on the same folder and port.
        const { port } = new URL(service.url);
        await service.close();
        service = await start(Number(port));
        const [listing = '', receiver = ''] = afterRestart.split(/^(?=# 13\. )/m);
        const [list, log, emitted] = jsonLines((await run(listing)).stdout);
        expect(list).toMatchObject({ totalItems: 1 });
        expect(list?.items).toEqual([changed]);
        expect(log?.items).toHaveLength(2);
        expect(emitted?.deliveries).toEqual([created?.id]);
        await deliveries(3);
        const [after] = jsonLines((await run(receiver)).stdout);
        expect(after?.items).toEqual([expect.objectContaining({ verified: true })]);
      } finally {
        await service.close();
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  );
});
