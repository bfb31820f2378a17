/**
 * The portal page: the bytes it ships (the page, its stylesheet and its script, as served and as
 * gzip and brotli would carry them) and its first load in Chromium (Debian's, through
 * playwright-core): from the navigation to the link until the subscription table holds its first
 * page of 20, in a new browser context each round (no cache), against the service on PGlite in
 * memory on this machine. No hosted portal runs here to set beside it; the figures stand alone.
 */
import { createServer } from 'node:http';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { PGlite } from '@electric-sql/pglite';
import { chromium } from 'playwright-core';
import { nodeFetchHandler } from '../src/adapters/node.js';
import { createWebhookService, MemorySubscriptionRepository } from '../src/index.js';
import { PostgresSubscriptionRepository } from '../src/postgres/index.js';
import { portalFiles } from '../src/webhooks/service/portal-files.js';
import { median, round } from './support.js';

const ROUNDS = 15;

export async function run(): Promise<Record<string, unknown>> {
  const bytes: Record<string, { raw: number; gzip: number; brotli: number }> = {};
  for (const [name, file] of Object.entries(portalFiles)) {
    const raw = Buffer.from(file.text);
    bytes[name] = {
      raw: raw.length,
      gzip: gzipSync(raw, { level: 9 }).length,
      brotli: brotliCompressSync(raw).length,
    };
  }
  const total = Object.values(bytes).reduce(
    (sum, b) => ({ raw: sum.raw + b.raw, gzip: sum.gzip + b.gzip, brotli: sum.brotli + b.brotli }),
    { raw: 0, gzip: 0, brotli: 0 },
  );
  console.error(`portal bytes: ${JSON.stringify({ ...bytes, total })}`);
  const loads: Record<string, unknown> = {};
  for (const database of ['pglite', 'memory'] as const) {
    loads[database] = await firstLoads(database);
    console.error(`first load (${database}): ${JSON.stringify(loads[database])}`);
  }
  return { bytes: { ...bytes, total }, firstLoadMs: loads };
}

async function firstLoads(database: 'pglite' | 'memory') {
  const lite = database === 'pglite' ? await PGlite.create() : undefined;
  const repository =
    lite === undefined
      ? new MemorySubscriptionRepository()
      : await PostgresSubscriptionRepository.open({ database: lite });
  const service = createWebhookService({
    repository,
    identify: () => undefined,
    portalKey: 'a portal key of at least thirty-two bytes',
    onWarning: () => {},
  });
  const server = createServer(nodeFetchHandler(service));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const origin = `http://127.0.0.1:${port}`;
  const { token, url } = service.portalToken({ accountCode: 'ACME' });
  for (let i = 0; i < 25; i += 1) {
    await fetch(`${origin}/v1/subscriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ endpointUrl: `https://example.com/hooks/${i}`, events: ['a/*'] }),
    });
  }
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  const toTable: number[] = [];
  const domContentLoaded: number[] = [];
  try {
    for (let round = 0; round <= ROUNDS; round += 1) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const started = performance.now();
      await page.goto(`${origin}${url}`);
      await page
        .getByRole('table', { name: 'Subscriptions' })
        .locator('tbody tr')
        .nth(19)
        .waitFor();
      const elapsed = performance.now() - started;
      // The browser's own clock: when the page's DOMContentLoaded ended, from the navigation.
      const navigation = Number(
        await page.evaluate(
          "performance.getEntriesByType('navigation')[0]?.domContentLoadedEventEnd ?? NaN",
        ),
      );
      await context.close();
      if (round === 0) continue; // the first warms the browser and the service
      toTable.push(elapsed);
      domContentLoaded.push(navigation);
    }
  } finally {
    await browser.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await service.close();
    await lite?.close();
  }
  const sorted = [...toTable].sort((a, b) => a - b);
  return {
    rounds: ROUNDS,
    toTableP50: round(median(toTable)),
    toTableMax: round(sorted.at(-1) ?? Number.NaN),
    domContentLoadedP50: round(median(domContentLoaded)),
  };
}
