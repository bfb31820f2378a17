/**
 * One subscription: its settings, the controls that change it (none for a read-only session), the
 * replay of its failed messages and its attempts, newest first, a page at a time.
 * @module
 */
import type {
  WebhookAttempt,
  WebhookAttemptPage,
  WebhookSubscription,
} from '../client/webhook-types.js';
import { openDialog, type PortalContext } from './context.js';
import { type Child, h, labelledValue, newId, replaceChildren, time } from './dom.js';
import { formDialog, SubscriptionForm } from './subscription-form.js';

const ATTEMPTS_PER_PAGE = 20;

/** Render the subscription with an id into `view`. */
export async function showSubscription(
  context: PortalContext,
  view: HTMLElement,
  id: string,
): Promise<void> {
  replaceChildren(view, back(), h('h1', {}, 'Subscription'), h('p', {}, 'Loading…'));
  await context.alerts.run(async () => {
    const subscription = await context.client.subscriptions.get(id);
    render(context, view, subscription);
  });
}

function back(): HTMLElement {
  return h('p', {}, h('a', { href: '#/' }, '← Subscriptions'));
}

function render(
  context: PortalContext,
  view: HTMLElement,
  subscription: WebhookSubscription,
): void {
  const keyArea = h('div', { class: 'key' });
  replaceChildren(
    view,
    back(),
    h('h1', {}, 'Subscription'),
    details(subscription),
    context.session.readOnly ? undefined : controls(context, view, subscription, keyArea),
    keyArea,
    context.session.readOnly ? undefined : replayControls(context, subscription),
    attempts(context, subscription),
  );
}

function details(subscription: WebhookSubscription): HTMLElement {
  const rows: [string, Child][] = [
    ['Endpoint URL', subscription.endpointUrl],
    ['Events', subscription.events.join(', ')],
    ['Property IDs', subscription.propertyIds?.join(', ') ?? 'Every property'],
    ['Description', subscription.description ?? ''],
    [
      'Status',
      subscription.status === 'enabled'
        ? 'Enabled'
        : `Disabled${subscription.disabledReason === undefined ? '' : ` (${subscription.disabledReason})`}`,
    ],
    ['Signature type', subscription.signatureType],
    [
      'Rate limit',
      subscription.rateLimit === undefined ? 'None' : `${subscription.rateLimit} a second`,
    ],
    ['Headers', pairs(subscription.headers)],
    ['Metadata', pairs(subscription.metadata)],
    ['Created', time(subscription.createdAt)],
    ['Updated', time(subscription.updatedAt)],
  ];
  if (subscription.publicKey !== undefined) rows.push(['Public key', subscription.publicKey]);
  return h('dl', {}, ...rows.flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, value)]));
}

function pairs(record: Readonly<Record<string, string>> | undefined): string {
  const entries = Object.entries(record ?? {});
  return entries.length === 0
    ? 'None'
    : entries.map(([name, value]) => `${name}: ${value}`).join('; ');
}

function controls(
  context: PortalContext,
  view: HTMLElement,
  subscription: WebhookSubscription,
  keyArea: HTMLElement,
): HTMLElement {
  const { client, alerts, status } = context;
  const enabled = subscription.status === 'enabled';
  const toggle = button(enabled ? 'Disable' : 'Enable', () =>
    alerts.run(async () => {
      const changed = await client.subscriptions.update(subscription.id, {
        status: enabled ? 'disabled' : 'enabled',
      });
      render(context, view, changed);
      status.say(enabled ? 'Subscription disabled.' : 'Subscription enabled.');
    }),
  );
  const rotate = button('Rotate secret', () =>
    alerts.run(async () => {
      const rotated = await client.subscriptions.rotateSecret(subscription.id);
      showKey(keyArea, rotated, rotated.previousSecretsExpireAt);
      status.say('Secret rotated.');
    }),
  );
  const edit = button('Edit', async () => editSubscription(context, view, subscription, keyArea));
  const remove = button('Delete', async () => confirmDelete(context, subscription));
  return h('div', { class: 'actions' }, edit, toggle, rotate, remove);
}

function button(label: string, action: () => Promise<unknown>): HTMLButtonElement {
  const element = h('button', { type: 'button' }, label);
  element.addEventListener('click', () => {
    element.disabled = true;
    void action().finally(() => {
      element.disabled = false;
    });
  });
  return element;
}

// A new secret (or public key), shown this once.
function showKey(
  area: HTMLElement,
  answer: { readonly secret?: string | undefined; readonly publicKey?: string | undefined },
  previousUntil: string | undefined,
): void {
  replaceChildren(
    area,
    answer.secret === undefined
      ? labelledValue('Public key', answer.publicKey ?? '')
      : labelledValue('Signing secret', answer.secret),
    answer.secret === undefined ? undefined : h('p', {}, 'Copy it now: it is not shown again.'),
    previousUntil === undefined
      ? undefined
      : h('p', {}, 'The previous secret keeps signing until ', time(previousUntil), '.'),
  );
}

function editSubscription(
  context: PortalContext,
  view: HTMLElement,
  subscription: WebhookSubscription,
  keyArea: HTMLElement,
): void {
  const form = new SubscriptionForm(context.catalog(), subscription);
  formDialog(context, 'Edit subscription', form, 'Save', async (dialog) => {
    const change = form.changeFrom(subscription);
    if (Object.keys(change).length === 0) {
      dialog.close();
      return;
    }
    const changed = await context.client.subscriptions.update(subscription.id, change);
    dialog.close();
    render(context, view, changed);
    const area = view.querySelector<HTMLElement>('.key');
    if (changed.secret !== undefined || change.signatureType !== undefined) {
      showKey(area ?? keyArea, changed, changed.previousSecretsExpireAt);
    }
    context.status.say('Subscription saved.');
  });
}

function confirmDelete(context: PortalContext, subscription: WebhookSubscription): void {
  const remove = h('button', { type: 'button', class: 'danger' }, 'Delete');
  const cancel = h('button', { type: 'button' }, 'Cancel');
  const dialog = openDialog(
    context,
    'Delete subscription?',
    h('p', {}, `Deliveries to ${subscription.endpointUrl} stop, and it cannot be undone.`),
    h('div', { class: 'actions' }, remove, cancel),
  );
  cancel.addEventListener('click', () => dialog.close());
  cancel.focus();
  remove.addEventListener('click', () => {
    remove.disabled = true;
    void context.alerts
      .run(async () => {
        await context.client.subscriptions.delete(subscription.id);
        dialog.close();
        context.status.say(`Subscription to ${subscription.endpointUrl} deleted.`);
        context.navigate('#/');
      })
      .finally(() => {
        remove.disabled = false;
      });
  });
}

function replayControls(context: PortalContext, subscription: WebhookSubscription): HTMLElement {
  const since = h('input', { type: 'datetime-local', step: '1' });
  const sinceId = newId('since');
  since.id = sinceId;
  const replay = button('Replay failed messages', () =>
    context.alerts.run(async () => {
      // Empty: every message it failed since it was made.
      const from =
        since.value === '' ? subscription.createdAt : new Date(since.value).toISOString();
      const replayed = await context.client.subscriptions.replay(subscription.id, { since: from });
      context.status.say(
        replayed.deliveries === 1
          ? '1 failed message is being sent again.'
          : `${replayed.deliveries} failed messages are being sent again.`,
      );
    }),
  );
  return h(
    'div',
    { class: 'replay' },
    h('label', { for: sinceId }, 'Failed since'),
    since,
    h('small', {}, 'Empty means since the subscription was made.'),
    replay,
  );
}

function attempts(context: PortalContext, subscription: WebhookSubscription): HTMLElement {
  const headingId = newId('attempts');
  const rows = h('tbody', {});
  const table = h(
    'table',
    { 'aria-labelledby': headingId },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Time', 'Outcome', 'Status code', 'Duration', 'Detail', 'Message'].map((name) =>
          h('th', { scope: 'col' }, name),
        ),
        context.session.readOnly ? undefined : h('th', { scope: 'col' }, 'Replay'),
      ),
    ),
    rows,
  );
  const older = h('button', { type: 'button', hidden: true }, 'Older attempts');
  const section = h('section', {}, h('h2', { id: headingId }, 'Attempts'), table, older);
  let pages: AsyncIterator<WebhookAttemptPage> | undefined;
  const more = () =>
    context.alerts.run(async () => {
      pages ??= context.client.subscriptions
        .attempts(subscription.id, { limit: ATTEMPTS_PER_PAGE })
        .pages()
        [Symbol.asyncIterator]();
      const next = await pages.next();
      const page = next.done === true ? undefined : next.value;
      for (const attempt of page?.items ?? []) rows.append(attemptRow(context, attempt));
      if (rows.childElementCount === 0) {
        rows.append(h('tr', {}, h('td', { colspan: '7' }, 'No attempts yet.')));
      }
      older.hidden = page === undefined || page.endOfData;
    });
  older.addEventListener('click', () => void more());
  void more();
  return section;
}

function attemptRow(context: PortalContext, attempt: WebhookAttempt): HTMLTableRowElement {
  const failed =
    attempt.outcome === 'failed' || attempt.outcome === 'disabled' || attempt.outcome === 'lost';
  const replay =
    failed && !context.session.readOnly
      ? button('Replay', () =>
          context.alerts.run(async () => {
            const replayed = await context.client.messages.replay(attempt.id);
            context.status.say(
              `Message ${attempt.id} is being sent again (${replayed.deliveries} ${replayed.deliveries === 1 ? 'delivery' : 'deliveries'}).`,
            );
          }),
        )
      : undefined;
  replay?.setAttribute('aria-label', `Replay message ${attempt.id}`);
  return h(
    'tr',
    {},
    h('td', {}, time(attempt.at)),
    h('td', {}, attempt.outcome),
    h('td', {}, attempt.status === undefined ? '' : String(attempt.status)),
    h('td', {}, attempt.durationMs === undefined ? '' : `${attempt.durationMs} ms`),
    h('td', {}, attempt.error?.message ?? attempt.reason ?? ''),
    h('td', {}, attempt.id),
    context.session.readOnly ? undefined : h('td', {}, replay),
  );
}
