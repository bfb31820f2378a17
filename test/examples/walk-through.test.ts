/** The README's walk-through of the reference service, its curl lines run as a reader runs them. */
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startDemoService } from '../../examples/service.js';
import { FakeClock } from '../../src/index.js';

const root = resolve(import.meta.dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const hasCurl = spawnSync('curl', ['--version']).status === 0;
const bash = (script: string) => promisify(execFile)('bash', ['-c', script], { cwd: root });

describe('README walk-through (npm run demo)', () => {
  it.skipIf(!hasCurl)(
    'runs as written: the cursor step reads the first page of the delivery log and follows its nextCursor to the end',
    async () => {
      const steps = /```sh\n(# 1\. [\s\S]*?)```/.exec(readme)?.[1];
      expect(steps).toBeDefined();
      // A clock that stays put: the burst of step 7 falls in one second however slow curl is.
      const logged: unknown[] = [];
      let onLogged = () => {};
      const service = await startDemoService({
        port: 0,
        clock: new FakeClock(Date.now()),
        onDelivery: (entry) => {
          logged.push(entry);
          onLogged();
        },
      });
      const deliveries = (count: number) =>
        new Promise<void>((done) => {
          onLogged = () => logged.length >= count && done();
          onLogged();
        });
      try {
        const script = (steps ?? '').replaceAll('http://127.0.0.1:3000', service.url);
        const [emit = '', read = ''] = script.split(/^(?=# 5\. )/m);
        const emitted = (await bash(emit)).stdout.match(/HTTP\/1\.1 202 /g) ?? [];
        expect(emitted).toHaveLength(2);
        await deliveries(emitted.length); // each event of step 4 delivered and logged
        const { stdout } = await bash(read);
        const pages = stdout
          .split('\n')
          .filter((line) => line.startsWith('{"items":[{"sequence"'))
          .map((line) => JSON.parse(line));
        // The first page, then the page its nextCursor names (the capture itself prints nothing).
        expect(pages.map((p) => [p.items[0].sequence, p.endOfData])).toEqual([
          [1, false],
          [2, true],
        ]);
        expect(stdout.trim().endsWith('200 200 200 200 200 429')).toBe(true);
      } finally {
        await service.close();
      }
    },
  );
});
