/** The README's walk-through of the reference service, its curl lines run as a reader runs them. */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type DemoService, startDemoService } from '../../examples/service.js';
import { FakeClock } from '../../src/index.js';
import { launchChromium } from '../support/browser.js';
import { deliveryLog, disabledLog } from '../support/demo-service.js';
import { demoDataDir } from '../support/pglite-template.js';

const root = resolve(import.meta.dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const hasCurl = spawnSync('curl', ['--version']).status === 0;

/** The README's numbered shell blocks: the walk-through, then the steps after a restart. */
const blocks = [...readme.matchAll(/```sh\n(# [0-9]+\. [\s\S]*?)```/g)].map((m) => m[1] ?? '');

/** The steps of a block by their number: each from its `# N. ` comment to the next one. */
const stepsOf = (block: string) =>
  new Map(
    block
      .split(/^(?=# [0-9]+\. )/m)
      .map((step) => [Number(/^# ([0-9]+)\. /.exec(step)?.[1]), step] as const),
  );

/** The status of every response printed with `curl -i`, in order. */
const statuses = (stdout: string) =>
  [...stdout.matchAll(/^HTTP\/1\.1 ([0-9]{3}) /gm)].map((m) => Number(m[1]));

/** Every line of the output that is a JSON object. */
const jsonLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of many shapes, read by the assertions
    .map((line) => JSON.parse(line) as Record<string, any>);

/**
 * One bash process fed the steps in turn, as a reader pastes them into one terminal: the shell
 * variables of a step ($id, $gone, $msg) hold for the next ones.
 */
function shellSession(url: () => string) {
  const shell = spawn('bash', [], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let waiting: { marker: string; done: (output: string) => void } | undefined;
  const settle = () => {
    const end = waiting === undefined ? -1 : stdout.indexOf(waiting.marker);
    if (waiting === undefined || end === -1) return;
    const { done } = waiting;
    waiting = undefined;
    const output = stdout.slice(0, end);
    stdout = '';
    done(output);
  };
  shell.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    settle();
  });
  shell.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((done) => shell.once('exit', () => done()));
  let count = 0;
  return {
    /** Run a step; resolves with what it printed. */
    run(step: string): Promise<string> {
      const marker = `--- step ${++count} done ---\n`;
      return new Promise<string>((done, fail) => {
        waiting = { marker, done };
        exited.then(() => fail(new Error(`bash exited: ${stderr}`)));
        shell.stdin.write(
          `${step.replaceAll('http://127.0.0.1:3000', url())}\necho; echo '${marker.trim()}'\n`,
        );
      });
    },
    stderr: () => stderr,
    async close(): Promise<void> {
      shell.stdin.end();
      await exited;
    },
  };
}

describe('README walk-through (npm run demo)', () => {
  it.skipIf(!hasCurl)(
    'runs as written: create, refuse, list, read, change, rotate, delete, deliver and verify, the delivery log by cursor, a gone endpoint disabled and replayed, a burst, a client limited, peeked at, reset, raised by an override and back to its defaults, and counted in /metrics, and a restart that keeps them, then an ed25519 subscription verified, an idempotent publish, an operational event and a rate-limited subscription, and the portal opened at the link the demo gives',
    async () => {
      expect(blocks).toHaveLength(3);
      const [walk = new Map(), afterRestart = new Map(), features = new Map()] =
        blocks.map(stepsOf);
      // Numbered 1 to 22, then 23 to 25 after the restart, then 26 to 35 for receivers and
      // operators: the prose and the hints cite them.
      expect([...walk.keys()]).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
      expect([...afterRestart.keys()]).toEqual([23, 24, 25]);
      expect([...features.keys()]).toEqual(Array.from({ length: 10 }, (_, i) => i + 26));
      const dataDir = await demoDataDir();
      // A clock that stays put: the burst of step 16 falls in one second however slow curl is.
      const clock = new FakeClock(Date.now());
      const delivered = deliveryLog();
      const disabled = disabledLog();
      const start = (port: number) =>
        startDemoService({
          port,
          clock,
          dataDir,
          onWarning: () => undefined,
          onDelivery: delivered.onDelivery,
          onDisabled: disabled.onDisabled,
        });
      let service: DemoService = await start(0);
      const shell = shellSession(() => service.url);
      try {
        const outputs = new Map<number, string>();
        const run = async (steps: Map<number, string>, n: number) => {
          outputs.set(n, await shell.run(steps.get(n) as string));
          return outputs.get(n) as string;
        };
        for (let n = 1; n <= 7; n++) await run(walk, n);
        // Steps 3 to 7: the list, the read, the change, the rotation, the delete, two events.
        const made = [3, 4, 5, 6, 7].map((n) => outputs.get(n)).join('');
        expect(statuses(made)).toEqual([200, 200, 200, 200, 204, 202, 202]);
        const [created, refused, listed, readBack, changed, rotated, gone] = jsonLines(
          [1, 2, 3, 4, 5, 6].map((n) => outputs.get(n)).join(''),
        );
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
        await delivered.waitFor(2); // each event of step 7 delivered and logged

        const [received] = jsonLines(await run(walk, 8));
        expect(received?.items).toEqual([
          expect.objectContaining({ verified: true }),
          expect.objectContaining({ verified: true }),
        ]);
        // Step 8 sends the Live key: the receiver lists that account's payloads only, and to no
        // one without a key.
        expect(
          received?.items.map((d: { body: { accountId: string } }) => d.body.accountId),
        ).toEqual(['LIVE-ACME', 'LIVE-ACME']);
        expect(walk.get(8)).toContain("-H 'x-api-key: live-demo-key'");
        const anonymous = await fetch(`${service.url}/demo/receiver`);
        expect(anonymous.status).toBe(401);
        const otherAccount = await fetch(`${service.url}/demo/receiver`, {
          headers: { 'x-api-key': 'dev-demo-key' },
        });
        expect(await otherAccount.json()).toEqual({ items: [] });
        // The first page (the newest), then the page its nextCursor names (the capture itself
        // prints nothing).
        const pages = jsonLines(await run(walk, 9));
        expect(
          pages.map((p) => [(p.items as Array<{ sequence: number }>)[0]?.sequence, p.endOfData]),
        ).toEqual([
          [2, false],
          [1, true],
        ]);

        // Steps 10 and 11: the gone receiver subscribed, an event it answers 410.
        const [goneCreated] = jsonLines(await run(walk, 10));
        expect(goneCreated).toMatchObject({
          endpointUrl: `${service.url}/demo/receiver/gone`,
          events: ['folio/*'],
          status: 'enabled',
        });
        const [emitted] = jsonLines(await run(walk, 11));
        expect(emitted).toMatchObject({ kind: 'folio/created', deliveries: [goneCreated?.id] });
        expect(emitted?.id).toMatch(/^msg_/);
        // Disabled at once, and the attempt on record.
        await disabled.waitFor(1);
        await delivered.waitFor(3);
        expect(disabled.entries).toEqual([
          expect.objectContaining({
            reason: 'endpoint_gone',
            subscription: expect.objectContaining({ id: goneCreated?.id, status: 'disabled' }),
          }),
        ]);

        // Step 12: disabled, why and when; the 410 among its attempts.
        const [goneRead, goneAttempts] = jsonLines(await run(walk, 12));
        expect(goneRead).toMatchObject({
          id: goneCreated?.id,
          status: 'disabled',
          disabledReason: 'endpoint_gone',
          disabledAt: new Date(clock.now()).toISOString(),
        });
        expect(goneAttempts?.items).toEqual([
          expect.objectContaining({
            id: emitted?.id,
            subscriptionId: goneCreated?.id,
            status: 410,
            outcome: 'disabled',
          }),
        ]);
        expect(goneAttempts?.items[0]).not.toHaveProperty('replay');

        // Step 13: to the working receiver, enabled, no reason left.
        const [reenabled] = jsonLines(await run(walk, 13));
        expect(reenabled).toMatchObject({
          id: goneCreated?.id,
          endpointUrl: `${service.url}/demo/receiver`,
          status: 'enabled',
        });
        expect(reenabled).not.toHaveProperty('disabledReason');
        expect(reenabled).not.toHaveProperty('disabledAt');

        // Step 14: the subscription's replay takes the failed message; the message's finds none left.
        const replays = await run(walk, 14);
        expect(statuses(replays)).toEqual([202]);
        expect(jsonLines(replays)).toEqual([
          {
            subscriptionId: goneCreated?.id,
            since: goneCreated?.createdAt,
            deliveries: 1,
            queued: 1,
            paced: 0,
          },
          { messageId: emitted?.id, deliveries: 0, queued: 0, paced: 0 },
        ]);
        await delivered.waitFor(4);

        // Step 15: delivered again with the same webhook-id, verified; the replay in the attempts.
        const [receivedAgain, attemptsAgain] = jsonLines(await run(walk, 15));
        expect(receivedAgain?.items).toHaveLength(3);
        expect(receivedAgain?.items.at(-1)).toMatchObject({
          id: emitted?.id,
          verified: true,
          body: { id: emitted?.id, type: 'folio/created', data: { folioId: 'F-1' } },
        });
        expect(attemptsAgain?.items).toEqual([
          expect.objectContaining({
            id: emitted?.id,
            status: 204,
            outcome: 'delivered',
            replay: 1,
          }),
          expect.objectContaining({ id: emitted?.id, status: 410, outcome: 'disabled' }),
        ]);

        expect((await run(walk, 16)).trim().endsWith('200 200 200 200 200 429')).toBe(true);
        expect(disabled.entries).toHaveLength(1);

        // Step 17, a second later (the clock stays put while curl runs): the booking's sixth PATCH.
        clock.advance(1_000);
        expect((await run(walk, 17)).trim()).toBe('200 200 200 200 200 429');
        // Step 18: the peek names the resource limit and the block, and spends nothing.
        const resourceLimit = 'resource PATCH /booking/v*/bookings/{id}: 5 per 5 min';
        for (let peeks = 0; peeks < 2; peeks++) {
          const [peeked] = jsonLines(await run(walk, 18));
          expect(peeked).toMatchObject({
            clientId: 'demo-dev-app',
            accountCode: 'DEV-ACME',
            accountType: 'development',
            request: { method: 'PATCH', path: '/booking/v1/bookings/B1' },
            decision: {
              allowed: false,
              retryAfterSeconds: 300,
              policy: resourceLimit,
              reason: 'blocked',
            },
          });
          expect(peeked?.statuses).toContainEqual({
            policy: resourceLimit,
            remaining: 0,
            resetAfterMs: 300_000,
          });
        }
        // Step 19: cleared, and the next PATCH admitted at once.
        const resetOutput = await run(walk, 19);
        const [reset] = jsonLines(resetOutput);
        expect(resetOutput).toMatch(/^200$/m);
        expect(reset).toMatchObject({ clientId: 'demo-dev-app', accountCode: 'DEV-ACME' });
        expect(reset?.cleared).toBeGreaterThan(0);
        // Step 20, a second later: the client raised to twice its limits for an hour, then 10 of
        // 11 calls in a second admitted where the default admits 5.
        clock.advance(1_000);
        const raised = await run(walk, 20);
        const [held] = jsonLines(raised);
        expect(held).toEqual({
          clientId: 'demo-dev-app',
          multiplier: 2,
          expiresAt: new Date(clock.now() + 3_600_000).toISOString(),
        });
        expect(raised.trim().endsWith('200 200 200 200 200 200 200 200 200 200 429')).toBe(true);
        // Step 21: the peek shows every default limit doubled; the override removed, the defaults.
        const [peekRaised, removed, peekDefault] = jsonLines(await run(walk, 21));
        const doubled = [
          'global: 5 per 1 s (x2)',
          'global: 200 per 60 s (x2)',
          'throttle: 5 concurrent (x2)',
        ];
        expect(peekRaised?.statuses.map((s: { policy: string }) => s.policy)).toEqual(doubled);
        expect(peekRaised?.statuses[0]).toEqual({
          policy: 'global: 5 per 1 s (x2)',
          remaining: 0,
          resetAfterMs: 1_000,
        });
        expect(removed).toEqual({ clientId: 'demo-dev-app', removed: true });
        expect(peekDefault?.statuses.map((s: { policy: string }) => s.policy)).toEqual(
          doubled.map((name) => name.replace(' (x2)', '')),
        );
        // Step 22: the decisions as Prometheus counters; the refusals of steps 16, 17 and 20 by
        // policy.
        const counters = (await run(walk, 22)).trim().split('\n');
        expect(counters).toContain(
          'api_conventions_limits_decisions_total{outcome="refused",policy="global: 5 per 1 s",reason="limit",otel_scope_name="api-conventions"} 1',
        );
        expect(counters).toContainEqual(
          expect.stringMatching(
            /^api_conventions_limits_decisions_total\{outcome="refused",policy="resource PATCH \/booking\/v\*\/bookings\/\{id\}: 5 per 5 min",reason="limit",otel_scope_name="api-conventions"\} 1$/,
          ),
        );
        expect(counters).toContain(
          'api_conventions_limits_decisions_total{outcome="refused",policy="global: 5 per 1 s (x2)",reason="limit",otel_scope_name="api-conventions"} 1',
        );
        expect(counters).toContainEqual(
          expect.stringMatching(
            /^api_conventions_limits_decisions_total\{outcome="admitted",otel_scope_name="api-conventions"\} [0-9]+$/,
          ),
        );

        // Ctrl+C and `npm run demo` again: a new process on the same folder and port, the same
        // terminal for the steps.
        const { port } = new URL(service.url);
        await service.close();
        service = await start(Number(port));
        const [list, log] = jsonLines(await run(afterRestart, 23));
        expect(list).toMatchObject({ totalItems: 2 });
        expect(list?.items).toEqual([changed, reenabled]);
        expect(
          log?.items.map((e: { id: string; outcome: string; replay?: number }) => [
            e.id,
            e.outcome,
            e.replay,
          ]),
        ).toEqual([
          [emitted?.id, 'delivered', 1],
          [emitted?.id, 'disabled', undefined],
          [expect.stringMatching(/^msg_/), 'delivered', undefined],
          [expect.stringMatching(/^msg_/), 'delivered', undefined],
        ]);
        const [afterEvent] = jsonLines(await run(afterRestart, 24));
        expect(afterEvent?.deliveries).toEqual([created?.id]);
        await delivered.waitFor(5);
        const [after] = jsonLines(await run(afterRestart, 25));
        expect(after?.items).toEqual([expect.objectContaining({ verified: true })]);

        // Step 26: an ed25519 subscription answers its public key, never a secret.
        const [signedWithKey] = jsonLines(await run(features, 26));
        expect(signedWithKey).toMatchObject({
          events: ['reservation/cancelled'],
          signatureType: 'ed25519',
        });
        expect(signedWithKey?.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
        expect(signedWithKey).not.toHaveProperty('secret');
        // Step 27: the cancellation at MUC goes to it alone; step 28: verified with the public key.
        const [cancelled] = jsonLines(await run(features, 27));
        expect(cancelled?.deliveries).toEqual([signedWithKey?.id]);
        await delivered.waitFor(6);
        expect((await run(features, 28)).trim()).toBe('"verified":true,"schemes":["v1a"]');

        // Step 29: the key answers the first message twice, then refuses other data with a 409.
        const [first, again, reused] = jsonLines(await run(features, 29));
        expect(first).toMatchObject({
          kind: 'folio/charges-changed',
          deliveries: [goneCreated?.id],
        });
        expect(again).toEqual(first);
        expect(reused).toMatchObject({ status: 409, code: 'idempotency_key_reused' });
        await delivered.waitFor(7);

        // Step 30: the gone receiver's subscription disabled by a folio event; step 31: the
        // operational event about it, received by the subscription to operational/*.
        const [folio] = jsonLines(await run(features, 30));
        expect(folio?.deliveries).toHaveLength(2);
        await disabled.waitFor(2);
        const goneAgain = disabled.entries[1]?.subscription.id;
        expect(folio?.deliveries).toContain(goneAgain);
        await delivered.waitFor(10); // the folio event twice (a 410), the operational event once
        const told = (await run(features, 31)).trim();
        expect(told.split('\n')).toHaveLength(1);
        expect(told).toMatch(
          /^"type":"operational\/subscription-disabled","accountId":"LIVE-ACME",/,
        );
        expect(told).toContain(`"data":{"subscriptionId":"${goneAgain}","reason":"endpoint_gone"}`);

        // Step 32: three check-ins to a subscription of one a second; step 33: one attempt, the
        // others held (the clock stays put); step 34: one more each second, a second apart.
        expect((await run(features, 32)).trim()).toBe('202 202 202');
        await delivered.waitFor(11);
        const at = clock.now();
        expect((await run(features, 33)).trim()).toBe(`"at":${at}`);
        clock.advance(1_000);
        await delivered.waitFor(12);
        clock.advance(1_000);
        await delivered.waitFor(13);
        expect((await run(features, 34)).trim().split('\n')).toEqual([
          `"at":${at + 2_000}`,
          `"at":${at + 1_000}`,
          `"at":${at}`,
        ]);
        // Step 35: a portal link for the Live account, opened in Chromium: the page lists the
        // subscriptions of the walk-through, each endpoint a link to its view.
        const [link] = jsonLines(await run(features, 35));
        expect(link?.url).toMatch(
          /^http:\/\/127\.0\.0\.1:[0-9]+\/portal#token=portal\.[^.]+\.[^.]+$/,
        );
        expect(link).toMatchObject({ readOnly: false });
        const browser = await launchChromium();
        try {
          const page = await browser.newPage();
          await page.goto(link?.url);
          const table = page.getByRole('table', { name: 'Subscriptions', exact: true });
          await table
            .getByRole('link', { name: `${service.url}/demo/receiver` })
            .first()
            .waitFor();
          expect(await table.locator('tbody tr').count()).toBeGreaterThan(3);
        } finally {
          await browser.close();
        }
        // No command failed (curl -i writes its progress meter there when its output is no terminal).
        expect(shell.stderr()).not.toMatch(/^(curl: \(|bash: )/m);
      } finally {
        await shell.close();
        await service.close();
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  );
});
