/**
 * The portal in a real browser: Chromium (Debian's, driven by playwright-core) against the service
 * on PGlite, with a real receiver for the attempts. Every action the portal offers is done the way
 * a person does it, found by the accessible names the page gives: the list, adding a
 * subscription, its secret shown once, editing, disabling and enabling, rotating, deleting after a
 * confirmation, the attempts and the replay of failed messages; a read-only session, an expired
 * one, and an endpoint whose description and metadata hold markup.
 */
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFetchHandler } from '../../src/adapters/node.js';
import { createWebhookClient } from '../../src/client/webhook-client.js';
import { createWebhookService, defineEventCatalog, type WebhookService } from '../../src/index.js';
import { PostgresSubscriptionRepository } from '../../src/postgres/index.js';
import { httpTransport } from '../../src/webhooks/delivery/http-transport.js';
import { launchChromium } from '../support/browser.js';
import { eventually } from '../support/eventually.js';
import { listen } from '../support/listen.js';
import { pgliteInMemory } from '../support/pglite-template.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const ACCOUNT = 'ACME';
const catalog = defineEventCatalog({
  reservation: ['created', 'cancelled'],
  folio: ['created'],
});
// `PORTAL_SCREENSHOTS=1` writes the screenshots of docs/portal.md; a plain run writes nothing.
const SCREENSHOTS = process.env.PORTAL_SCREENSHOTS === '1';
const DOCS = resolve(import.meta.dirname, '../../docs/images');

// The service's clock: the real time, moved forward by the expiry test.
let offset = 0;
const clock = { now: () => Date.now() + offset };

let lite: PGlite;
let service: WebhookService;
let receiver: WebhookReceiver;
let origin: string;
let closeServer: () => Promise<void>;
let browser: Browser;
let failing = true;

beforeAll(async () => {
  lite = await pgliteInMemory();
  const repository = await PostgresSubscriptionRepository.open({ database: lite });
  // `/fail` answers 500 until the replay test mends it; every other path 204.
  receiver = await startReceiver(({ path }) => ({
    status: path === '/fail' && failing ? 500 : 204,
  }));
  service = createWebhookService({
    repository,
    identify: () => undefined,
    clock,
    catalog,
    portalKey: 'a portal key of at least thirty-two bytes',
    endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
    // One attempt: a 500 is a failed message at once, for the replay.
    delivery: { transport: httpTransport({ allow: ['127.0.0.1'] }), schedule: { maxAttempts: 1 } },
  });
  const started = await listen(createServer(nodeFetchHandler(service)));
  origin = started.url;
  closeServer = started.close;
  browser = await launchChromium();
  if (SCREENSHOTS) await mkdir(DOCS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await closeServer?.();
  await service?.close();
  await receiver?.close();
  await lite?.close();
});

/** A browser tab of its own, at the link of a new token. */
async function openPortal(
  options: { readOnly?: boolean; ttlSeconds?: number; accountCode?: string } = {},
): Promise<{ page: Page; context: BrowserContext; token: string; requests: string[] }> {
  const { token, url } = service.portalToken({ accountCode: ACCOUNT, ...options });
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  const page = await context.newPage();
  const requests: string[] = [];
  page.on('request', (request) => requests.push(`${request.method()} ${request.url()}`));
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of 4\d\d/.test(message.text())) {
      errors.push(message.text());
    }
  });
  await page.goto(`${origin}${url}`);
  pageErrors.set(page, errors);
  return { page, context, token, requests };
}
const pageErrors = new WeakMap<Page, string[]>();

/** An API client acting as the account, for arranging what the page then shows. */
function api() {
  const { token } = service.portalToken({ accountCode: ACCOUNT });
  return createWebhookClient({ baseUrl: origin, headers: { authorization: `Bearer ${token}` } });
}

/** A subscription's view in the tab, by the link the list gives it (the session kept). */
const openSubscription = (page: Page, id: string) =>
  page.goto(`${origin}/portal#/subscriptions/${encodeURIComponent(id)}`);
const table = (page: Page, name: string) => page.getByRole('table', { name, exact: true });
const rows = (page: Page, name: string) => table(page, name).locator('tbody tr');

describe('the portal in Chromium', () => {
  it('lists the subscriptions a page at a time, each endpoint a link to its view', async () => {
    const client = api();
    for (let i = 1; i <= 22; i += 1) {
      await client.subscriptions.create({
        endpointUrl: `${receiver.url}/list/${String(i).padStart(2, '0')}`,
        events: ['reservation/*'],
      });
    }
    const { page, context } = await openPortal();
    await page.getByRole('heading', { name: 'Subscriptions', exact: true }).waitFor();
    await rows(page, 'Subscriptions').nth(19).waitFor();
    expect(await rows(page, 'Subscriptions').count()).toBe(20);
    const first = table(page, 'Subscriptions').getByRole('link', {
      name: `${receiver.url}/list/01`,
    });
    expect(await first.getAttribute('href')).toMatch(/^#\/subscriptions\/.+/);
    expect(await page.getByText('Page 1 of 2 (22 in all)').count()).toBe(1);
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 2 of 2 (22 in all)').waitFor();
    expect(await rows(page, 'Subscriptions').count()).toBe(2);
    expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByText('Page 1 of 2 (22 in all)').waitFor();
    expect(await rows(page, 'Subscriptions').count()).toBe(20);
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 2 of 2 (22 in all)').waitFor();
    // The token left the address bar: a copied address holds none.
    expect(page.url()).not.toContain('token=');
    if (SCREENSHOTS) await page.screenshot({ path: join(DOCS, 'portal-list.png') });
    await table(page, 'Subscriptions')
      .getByRole('link', { name: `${receiver.url}/list/21` })
      .click();
    await page.getByRole('button', { name: 'Delete' }).waitFor();
    expect(await page.getByText(`${receiver.url}/list/21`).count()).toBeGreaterThan(0);
    expect(pageErrors.get(page)).toEqual([]);
    await context.close();
  });

  it('adds a subscription in the dialog, shows its secret once, and shows each refusal of the API', async () => {
    const { page, context } = await openPortal();
    await page.getByRole('button', { name: 'Add subscription' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add subscription' });
    await dialog.getByLabel('Endpoint URL').fill(`${receiver.url}/added`);
    await dialog.getByLabel('Events').fill('reservation/*, folio/created');
    await dialog.getByLabel('Property IDs').fill('BER, MUC');
    await dialog.getByLabel('Description').fill('Front desk');
    await dialog.getByLabel('Rate limit').fill('50');
    await dialog.getByLabel('Headers').fill('X-Team: front-desk');
    await dialog.getByLabel('Metadata').fill('owner: ops');
    if (SCREENSHOTS) {
      await page.setViewportSize({ width: 1100, height: 1100 });
      await page.screenshot({ path: join(DOCS, 'portal-add.png') });
    }
    // The catalog is offered as suggestions.
    const suggestions = await dialog
      .locator(`datalist#${await dialog.getByLabel('Events').getAttribute('list')} option`)
      .evaluateAll((options) => options.map((option) => option.getAttribute('value')));
    expect(suggestions).toEqual(
      expect.arrayContaining(['reservation/*', 'reservation/created', 'folio/created']),
    );
    // A refusal: the message of each of the API's errors, in an alert.
    await dialog.getByLabel('Endpoint URL').fill('not a url');
    await dialog.getByLabel('Events').fill('reservation/created, nosuch/thing');
    await dialog.getByRole('button', { name: 'Create' }).click();
    const alert = dialog.getByRole('alert');
    await alert.waitFor();
    const refused = await api()
      .subscriptions.create({
        endpointUrl: 'not a url',
        events: ['reservation/created', 'nosuch/thing'],
      })
      .then(
        () => undefined,
        (error: { errors: readonly { message: string }[] }) => error.errors.map((e) => e.message),
      );
    expect(refused).toHaveLength(2);
    expect(await alert.locator('li').allTextContents()).toEqual(refused);
    await dialog.getByLabel('Endpoint URL').fill(`${receiver.url}/added`);
    await dialog.getByLabel('Events').fill('reservation/*, folio/created');
    await dialog.getByRole('button', { name: 'Create' }).click();
    const secret = dialog.getByLabel('Signing secret');
    await secret.waitFor();
    const shown = await secret.textContent();
    expect(shown).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    expect(await dialog.getByRole('alert').count()).toBe(0);
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'detached' });
    // Stored as the fields said, and the secret is not shown again.
    const all: { endpointUrl: string; id: string }[] = [];
    for await (const s of api().subscriptions.list()) all.push(s);
    const added = all.find((s) => s.endpointUrl === `${receiver.url}/added`);
    expect(added).toBeDefined();
    const stored = await api().subscriptions.get(added?.id as string);
    expect(stored).toMatchObject({
      events: ['reservation/*', 'folio/created'],
      propertyIds: ['BER', 'MUC'],
      description: 'Front desk',
      rateLimit: 50,
      headers: { 'X-Team': 'front-desk' },
      metadata: { owner: 'ops' },
      signatureType: 'hmac-sha256',
    });
    await openSubscription(page, stored.id);
    await page.getByRole('button', { name: 'Rotate secret' }).waitFor();
    expect(await page.getByText(shown ?? '').count()).toBe(0);
    expect(pageErrors.get(page)).toEqual([]);
    await context.close();
  });

  it('edits, disables and enables, rotates the secret, and deletes after a confirmation', async () => {
    const made = await api().subscriptions.create({
      endpointUrl: `${receiver.url}/edited`,
      events: ['reservation/created'],
    });
    const { page, context } = await openPortal();
    await table(page, 'Subscriptions').waitFor();
    await openSubscription(page, made.id);
    // Edit: the description and the events.
    await page.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit subscription' });
    expect(await edit.getByLabel('Endpoint URL').inputValue()).toBe(`${receiver.url}/edited`);
    await edit.getByLabel('Description').fill('Night audit');
    await edit.getByLabel('Events').fill('reservation/created, reservation/cancelled');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'detached' });
    await page.getByText('Night audit').waitFor();
    expect(await api().subscriptions.get(made.id)).toMatchObject({
      description: 'Night audit',
      events: ['reservation/created', 'reservation/cancelled'],
    });
    // Disable, then enable.
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    expect((await api().subscriptions.get(made.id)).status).toBe('disabled');
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('button', { name: 'Disable' }).waitFor();
    expect((await api().subscriptions.get(made.id)).status).toBe('enabled');
    // Rotate: a new secret, shown once, other than the first.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const secret = page.getByLabel('Signing secret');
    await secret.waitFor();
    const rotated = await secret.textContent();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(made.secret);
    // Delete: the first click asks; Cancel keeps it; Delete in the dialog deletes.
    await page.getByRole('button', { name: 'Delete' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete subscription?' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });
    expect((await api().subscriptions.get(made.id)).id).toBe(made.id);
    await page.getByRole('button', { name: 'Delete' }).click();
    await confirm.waitFor();
    // Behind the open dialog the page is hidden: its one "Delete" is the dialog's.
    expect(await page.getByRole('button', { name: 'Delete' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Subscriptions', exact: true }).waitFor();
    await expect(api().subscriptions.get(made.id)).rejects.toMatchObject({
      status: 404,
      code: 'subscription_not_found',
    });
    expect(await page.getByRole('link', { name: `${receiver.url}/edited` }).count()).toBe(0);
    expect(pageErrors.get(page)).toEqual([]);
    await context.close();
  });

  it('shows the attempts newest first, and replays the failed messages', async () => {
    const made = await api().subscriptions.create({
      endpointUrl: `${receiver.url}/fail`,
      events: ['folio/created'],
    });
    for (let i = 0; i < 3; i += 1) {
      await service.publish({ accountCode: ACCOUNT, kind: 'folio/created', data: { folio: i } });
    }
    const attemptsOf = async () => {
      const found = [];
      for await (const attempt of api().subscriptions.attempts(made.id)) found.push(attempt);
      return found;
    };
    await eventually('three failed attempts on record', async () =>
      (await attemptsOf()).filter((a) => a.outcome === 'failed').length === 3 ? true : undefined,
    );
    const { page, context } = await openPortal();
    await table(page, 'Subscriptions').waitFor();
    await openSubscription(page, made.id);
    const attempts = rows(page, 'Attempts');
    await attempts.nth(2).waitFor();
    const cells = await attempts.evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
    );
    const onRecord = await attemptsOf();
    // Newest first: the rows in the order of the log, time, outcome, status code, duration.
    expect(cells.map((row) => row[5])).toEqual(onRecord.map((a) => a.id));
    for (const row of cells) {
      expect(row[1]).toBe('failed');
      expect(row[2]).toBe('500');
      expect(row[3]).toMatch(/^\d+ ms$/);
      expect(row[0]).not.toBe('');
    }
    if (SCREENSHOTS)
      await page.screenshot({ path: join(DOCS, 'portal-attempts.png'), fullPage: true });
    failing = false;
    await page.getByRole('button', { name: 'Replay failed messages' }).click();
    await page.getByRole('status').getByText('3 failed messages are being sent again.').waitFor();
    await eventually('the three messages delivered again', async () =>
      (await attemptsOf()).filter((a) => a.outcome === 'delivered').length === 3 ? true : undefined,
    );
    // The view read again shows the deliveries on top.
    await page.reload();
    await attempts.nth(5).waitFor();
    const outcomes = await attempts.evaluateAll((trs) =>
      trs.map((tr) => tr.querySelectorAll('td')[1]?.textContent),
    );
    expect(outcomes).toEqual(['delivered', 'delivered', 'delivered', 'failed', 'failed', 'failed']);
    expect(pageErrors.get(page)).toEqual([]);
    await context.close();
  });

  it('pages the attempts: 20, then the older ones', async () => {
    const made = await api().subscriptions.create({
      endpointUrl: `${receiver.url}/paged`,
      events: ['reservation/cancelled'],
    });
    for (let i = 0; i < 23; i += 1) {
      await service.publish({ accountCode: ACCOUNT, kind: 'reservation/cancelled', data: { i } });
    }
    const onRecord = await eventually('23 attempts on record', async () => {
      const found = [];
      for await (const attempt of api().subscriptions.attempts(made.id)) found.push(attempt);
      return found.length === 23 ? found : undefined;
    });
    const { page, context } = await openPortal();
    await table(page, 'Subscriptions').waitFor();
    await openSubscription(page, made.id);
    const attempts = rows(page, 'Attempts');
    await attempts.nth(19).waitFor();
    const older = page.getByRole('button', { name: 'Older attempts' });
    await older.waitFor();
    expect(await attempts.count()).toBe(20);
    await older.click();
    await attempts.nth(22).waitFor();
    await older.waitFor({ state: 'hidden' });
    const ids = await attempts.evaluateAll((trs) =>
      trs.map((tr) => tr.querySelectorAll('td')[5]?.textContent),
    );
    expect(ids).toEqual(onRecord.map((attempt) => attempt.id));
    expect(pageErrors.get(page)).toEqual([]);
    await context.close();
  });

  it('a read-only session shows no control that changes anything, and the API answers changes 403', async () => {
    const made = await api().subscriptions.create({
      endpointUrl: `${receiver.url}/read-only`,
      events: ['reservation/created'],
    });
    const { page, context, token } = await openPortal({ readOnly: true });
    await rows(page, 'Subscriptions').first().waitFor();
    expect(await page.getByRole('button', { name: 'Add subscription' }).count()).toBe(0);
    await openSubscription(page, made.id);
    await page.getByText(`${receiver.url}/read-only`).waitFor();
    await table(page, 'Attempts').waitFor();
    for (const name of [
      'Edit',
      'Disable',
      'Enable',
      'Rotate secret',
      'Delete',
      'Replay failed messages',
    ]) {
      expect(await page.getByRole('button', { name, exact: true }).count(), name).toBe(0);
    }
    const change = await fetch(`${origin}/v1/subscriptions/${encodeURIComponent(made.id)}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'disabled' }),
    });
    expect(change.status).toBe(403);
    expect(((await change.json()) as { code: string }).code).toBe('portal_read_only');
    expect(pageErrors.get(page)).toEqual([]);
    await context.close();
  });

  it('renders markup from the API as the characters it is', async () => {
    const markup = '<img src=x onerror="window.__owned=1"><script>window.__owned=2</script>';
    const made = await api().subscriptions.create({
      endpointUrl: `${receiver.url}/hostile?q=<b>bold</b>`,
      events: ['reservation/created'],
      description: markup.slice(0, 256),
      metadata: { note: '<iframe src="https://example.com"></iframe>' },
      headers: { 'X-Note': '<svg onload=alert(1)>' },
    });
    const { page, context } = await openPortal();
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await rows(page, 'Subscriptions').first().waitFor();
    await openSubscription(page, made.id);
    await page.getByText(markup.slice(0, 256), { exact: true }).waitFor();
    await page
      .getByText('note: <iframe src="https://example.com"></iframe>', { exact: true })
      .waitFor();
    await page.getByText('X-Note: <svg onload=alert(1)>', { exact: true }).waitFor();
    expect(await page.locator('main img, main script, main iframe, main svg, main b').count()).toBe(
      0,
    );
    expect(await page.evaluate(() => (globalThis as { __owned?: number }).__owned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(pageErrors.get(page)).toEqual([]);
    await context.close();
  });

  it('keeps the token out of every request line and loads under its Content-Security-Policy', async () => {
    const { page, context, token, requests } = await openPortal();
    await rows(page, 'Subscriptions').first().waitFor();
    await page.getByRole('link').nth(1).click();
    await table(page, 'Attempts').waitFor();
    expect(requests.length).toBeGreaterThan(3);
    for (const line of requests) expect(line).not.toContain(token);
    const sent: (string | undefined)[] = [];
    page.on('request', (request) => sent.push(request.headers().authorization));
    await page.reload();
    await table(page, 'Attempts').waitFor();
    expect(sent).toContain(`Bearer ${token}`);
    // A blocked load or script would be a console error ("Refused to ..."): there is none.
    expect(pageErrors.get(page)).toEqual([]);
    const response = await fetch(`${origin}/portal`);
    const policy = response.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("default-src 'self'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(await response.text()).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    await context.close();
  });

  it('says "Session expired" in an alert once the token is past its expiry', async () => {
    const { page, context } = await openPortal({ ttlSeconds: 60 });
    await table(page, 'Subscriptions').waitFor();
    offset += 61_000;
    await page.reload();
    const alert = page.getByRole('alert');
    await alert.getByText('Session expired.').waitFor();
    expect(await alert.textContent()).toContain('Open the portal again');
    await context.close();
  });

  it('opens an account only with a token: none or a forged one is refused', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${origin}/portal`);
    await page.getByRole('alert').getByText('No portal session.').waitFor();
    const { token } = service.portalToken({ accountCode: ACCOUNT });
    const forged = `${token.slice(0, -4)}AAAA`;
    await page.goto(`${origin}/portal#token=${forged}`);
    await page.reload();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/not one this service issued/);
    await context.close();
  });
});
