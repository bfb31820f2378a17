/**
 * The list of the account's subscriptions, a page at a time, and the dialog that adds one.
 * @module
 */
import type { WebhookSubscription, WebhookSubscriptionPage } from '../client/webhook-types.js';
import { type PortalContext, subscriptionHash } from './context.js';
import { h, labelledValue, newId, replaceChildren, time } from './dom.js';
import { formDialog, SubscriptionForm } from './subscription-form.js';

const PAGE_SIZE = 20;

/** Render the list at a page number into `view`. */
export async function showList(
  context: PortalContext,
  view: HTMLElement,
  pageNumber: number,
): Promise<void> {
  const headingId = newId('subscriptions');
  const table = h(
    'table',
    { 'aria-labelledby': headingId },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Endpoint URL', 'Events', 'Description', 'Status', 'Created'].map((name) =>
          h('th', { scope: 'col' }, name),
        ),
      ),
    ),
  );
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const add = context.session.readOnly
    ? undefined
    : h(
        'button',
        { type: 'button', onclick: () => addSubscription(context, view) },
        'Add subscription',
      );
  replaceChildren(view, h('h1', { id: headingId }, 'Subscriptions'), add, table, pager);
  await context.alerts.run(async () => {
    const page = await firstPage(context, pageNumber);
    table.append(body(page.items));
    replaceChildren(pager, ...pagerControls(context, view, page));
  });
}

async function firstPage(
  context: PortalContext,
  pageNumber: number,
): Promise<WebhookSubscriptionPage> {
  const pages = context.client.subscriptions
    .list({ pageSize: PAGE_SIZE, startPage: pageNumber })
    .pages();
  for await (const page of pages) return page;
  throw new Error('The service answered no page.');
}

function body(items: readonly WebhookSubscription[]): HTMLTableSectionElement {
  if (items.length === 0) {
    return h('tbody', {}, h('tr', {}, h('td', { colspan: '5' }, 'No subscriptions yet.')));
  }
  return h(
    'tbody',
    {},
    ...items.map((subscription) =>
      h(
        'tr',
        {},
        h('td', {}, h('a', { href: subscriptionHash(subscription.id) }, subscription.endpointUrl)),
        h('td', {}, subscription.events.join(', ')),
        h('td', {}, subscription.description ?? ''),
        h('td', {}, subscription.status === 'enabled' ? 'Enabled' : 'Disabled'),
        h('td', {}, time(subscription.createdAt)),
      ),
    ),
  );
}

function pagerControls(
  context: PortalContext,
  view: HTMLElement,
  page: WebhookSubscriptionPage,
): Node[] {
  const pages = Math.max(1, Math.ceil(page.totalItems / page.pageSize));
  const go = (pageNumber: number) => () => void showList(context, view, pageNumber);
  return [
    h(
      'button',
      { type: 'button', disabled: page.pageNumber <= 1, onclick: go(page.pageNumber - 1) },
      'Previous page',
    ),
    h('span', {}, `Page ${page.pageNumber} of ${pages} (${page.totalItems} in all)`),
    h(
      'button',
      { type: 'button', disabled: page.endOfData, onclick: go(page.pageNumber + 1) },
      'Next page',
    ),
  ];
}

function addSubscription(context: PortalContext, view: HTMLElement): void {
  const form = new SubscriptionForm(context.catalog());
  formDialog(context, 'Add subscription', form, 'Create', async (dialog, element) => {
    const created = await context.client.subscriptions.create(form.createBody());
    const key =
      created.secret === undefined
        ? labelledValue('Public key', created.publicKey ?? '')
        : labelledValue('Signing secret', created.secret);
    const done = h('button', { type: 'button', onclick: () => dialog.close() }, 'Done');
    replaceChildren(
      element,
      h('p', {}, 'Subscription created. Copy its secret now: it is not shown again.'),
      key,
      h('p', {}, h('a', { href: subscriptionHash(created.id) }, 'Open the subscription')),
      h('div', { class: 'actions' }, done),
    );
    done.focus();
    context.status.say(`Subscription to ${created.endpointUrl} created.`);
    void showList(context, view, 1);
  });
}
