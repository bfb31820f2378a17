/**
 * The portal's files as the service serves them: where (with a portalKey only), with which
 * headers (a Content-Security-Policy without inline script, frame-ancestors as configured, an
 * entity tag), and the files the package ships made from src/portal as it is now.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a build script in plain JavaScript, without declarations
import { PORTAL_FILES_PATH, portalFilesModule } from '../../scripts/build-portal.mjs';
import {
  ConfigurationError,
  createWebhookService,
  MemorySubscriptionRepository,
} from '../../src/index.js';
import { thrown } from '../support/thrown.js';

const KEY = 'a portal key of at least thirty-two bytes';

function service(
  options: { basePath?: string; portalFrameAncestors?: readonly string[]; portalKey?: string } = {
    portalKey: KEY,
  },
) {
  return createWebhookService({
    repository: new MemorySubscriptionRepository(),
    identify: () => ({ clientId: 'c', accountCode: 'ACME' }),
    ...options,
  });
}

const get = (s: ReturnType<typeof service>, path: string, init: RequestInit = {}) =>
  s.fetch(new Request(`http://127.0.0.1${path}`, init));

describe('the portal page', () => {
  it('is served at {basePath}/portal with its script and stylesheet, each under the policy', async () => {
    const s = service({ basePath: '/webhooks', portalKey: KEY });
    const page = await get(s, '/webhooks/portal');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).toContain('<script type="module" src="portal/portal.js"></script>');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|\son[a-z]+=/i);
    const script = await get(s, '/webhooks/portal/portal.js');
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await script.text()).length).toBeGreaterThan(1000);
    const style = await get(s, '/webhooks/portal/portal.css');
    expect(style.headers.get('content-type')).toBe('text/css; charset=utf-8');
    for (const response of [page, script, style]) {
      const policy = response.headers.get('content-security-policy') ?? '';
      const directives = new Map(
        policy.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')] as const),
      );
      expect(directives.get('default-src')).toBe("'self'");
      expect(directives.get('script-src')).toBe("'self'");
      expect(directives.get('frame-ancestors')).toBe("'none'");
      expect(policy).not.toMatch(/unsafe-|nonce-|sha256-/);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      expect(response.headers.get('cache-control')).toBe('no-cache');
    }
    await s.close();
  });

  it('is not served by a service without a portalKey, which takes no portal tokens', async () => {
    const s = service({});
    for (const path of ['/portal', '/portal/portal.js', '/portal/portal.css']) {
      const response = await get(s, path);
      expect(response.status).toBe(404);
      expect(((await response.json()) as { code: string }).code).toBe('route_not_found');
    }
    await s.close();
  });

  it('answers a matching If-None-Match 304, HEAD without a body, other methods 405, …/portal/ 308', async () => {
    const s = service();
    const first = await get(s, '/portal/portal.js');
    const etag = first.headers.get('etag') as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    const again = await get(s, '/portal/portal.js', {
      headers: { 'if-none-match': `W/${etag}, "x"` },
    });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(
      (await get(s, '/portal/portal.js', { headers: { 'if-none-match': '"other"' } })).status,
    ).toBe(200);
    const head = await get(s, '/portal', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const post = await get(s, '/portal', { method: 'POST', body: 'x' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    const slash = await get(s, '/portal/');
    expect(slash.status).toBe(308);
    expect(new URL(slash.headers.get('location') as string, 'http://h/portal/').pathname).toBe(
      '/portal',
    );
    expect((await get(s, '/portal/other.js')).status).toBe(404);
    expect((await get(s, '/portalx')).status).toBe(404);
    await s.close();
  });

  it('lets the platform name who may frame it', async () => {
    const s = service({
      portalKey: KEY,
      portalFrameAncestors: ["'self'", 'https://app.example.com', 'https://*.example.org:8443'],
    });
    const policy = (await get(s, '/portal')).headers.get('content-security-policy');
    expect(policy).toContain(
      "frame-ancestors 'self' https://app.example.com https://*.example.org:8443",
    );
    await s.close();
    const none = service({
      portalKey: KEY,
      portalFrameAncestors: ["'none'", 'https://app.example.com'],
    });
    expect((await get(none, '/portal')).headers.get('content-security-policy')).toContain(
      "frame-ancestors 'none'",
    );
    await none.close();
  });

  it.each([
    [[]],
    [['https://a.example; script-src *']],
    [['https://a.example https://b.example']],
    [["'unsafe-inline'"]],
    [['self']],
    [['https://a.example,https://b.example']],
    ['https://app.example.com'],
    [[42]],
  ])('refuses portalFrameAncestors %j with a ConfigurationError naming the option', (value) => {
    const error = thrown(() =>
      service({ portalKey: KEY, portalFrameAncestors: value as string[] }),
    );
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).code).toBe('invalid_option');
    expect((error as Error).message).toContain('portalFrameAncestors');
  });

  it('ships the files src/portal makes now (node scripts/build-portal.mjs writes them)', async () => {
    const shipped = readFileSync(PORTAL_FILES_PATH, 'utf8');
    expect(resolve(PORTAL_FILES_PATH)).toMatch(/src\/webhooks\/service\/portal-files\.ts$/);
    expect(
      shipped === (await portalFilesModule()),
      'src/webhooks/service/portal-files.ts is stale: run node scripts/build-portal.mjs',
    ).toBe(true);
  });
});
