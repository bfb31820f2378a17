/**
 * The subscription portal: the page the service serves at `{basePath}/portal`, opened with the link
 * of `service.portalToken()`. It talks to the service's API through the typed client, as the
 * account its token names; everything it shows from the API is text.
 * @module
 */
import { createWebhookClient } from '../client/webhook-client.js';
import { Alerts } from './alerts.js';
import { type PortalContext, StatusLine } from './context.js';
import { h, replaceChildren, time } from './dom.js';
import { showList } from './list-view.js';
import { closeSession, openSession } from './session.js';
import { showSubscription } from './subscription-view.js';

function start(root: HTMLElement): void {
  const session = openSession();
  if (session === undefined) {
    replaceChildren(
      root,
      h('h1', {}, 'Subscriptions'),
      h(
        'div',
        { role: 'alert', class: 'alert' },
        h('p', {}, 'No portal session.'),
        h('p', {}, 'Open the portal from your account: the link it gives starts a session.'),
      ),
    );
    return;
  }
  // The API is beside the page: `{basePath}/portal` is the page, `{basePath}/v1/…` the API.
  const baseUrl = new URL('.', location.href).href.replace(/\/$/, '');
  const client = createWebhookClient({
    baseUrl,
    headers: () => ({ authorization: `Bearer ${session.token}` }),
  });
  const alerts = new Alerts(closeSession);
  const status = new StatusLine();
  const view = h('div', { class: 'view' });
  let catalog: readonly string[] = [];
  const context: PortalContext = {
    client,
    session,
    alerts,
    status,
    catalog: () => catalog,
    navigate(hash) {
      if (location.hash === hash) void route();
      else location.hash = hash;
    },
  };
  replaceChildren(
    root,
    h(
      'header',
      {},
      h(
        'p',
        {},
        `Account ${session.accountCode}`,
        session.readOnly ? ' · read-only' : '',
        ' · session ends ',
        time(session.expiresAt),
      ),
    ),
    alerts.element,
    status.element,
    view,
  );
  const route = async () => {
    const match = /^#\/subscriptions\/([^/]+)$/.exec(location.hash);
    if (match === null) return showList(context, view, 1);
    return showSubscription(context, view, decodeURIComponent(match[1] as string));
  };
  window.addEventListener('hashchange', () => {
    status.clear();
    void route();
  });
  void loadCatalog(baseUrl).then((patterns) => {
    catalog = patterns;
  });
  void route();
}

// The event patterns the service's OpenAPI document lists for `events`, for the form's suggestions.
async function loadCatalog(baseUrl: string): Promise<readonly string[]> {
  try {
    const response = await fetch(`${baseUrl}/v1/openapi.json`);
    const document = (await response.json()) as {
      components?: {
        schemas?: { SubscriptionRequest?: { properties?: { events?: { items?: unknown } } } };
      };
    };
    const items = document.components?.schemas?.SubscriptionRequest?.properties?.events?.items as
      | { enum?: unknown; anyOf?: { enum?: unknown }[] }
      | undefined;
    const patterns = items?.enum ?? items?.anyOf?.[0]?.enum;
    return Array.isArray(patterns)
      ? patterns.filter((p): p is string => typeof p === 'string')
      : [];
  } catch {
    return []; // no suggestions; the field still takes any pattern
  }
}

const root = document.getElementById('portal');
if (root !== null) start(root);
