/**
 * What every view of the portal works with: the client, the session, the alerts, the status line,
 * the event catalog and navigation.
 * @module
 */
import type { WebhookClient } from '../client/webhook-client.js';
import type { Alerts } from './alerts.js';
import { h, newId, replaceChildren } from './dom.js';
import type { Session } from './session.js';

/** The portal's shared parts. */
export interface PortalContext {
  readonly client: WebhookClient;
  readonly session: Session;
  readonly alerts: Alerts;
  /** Says what an action did, politely (role `status`). */
  readonly status: StatusLine;
  /** The event patterns of the service's catalog, for suggestions. */
  readonly catalog: () => readonly string[];
  /** Show the list (`#/`) or a subscription (`#/subscriptions/<id>`). */
  navigate(hash: string): void;
}

/** The line that says what the last action did. */
export class StatusLine {
  readonly element: HTMLElement = h('p', { role: 'status', class: 'status' });

  say(message: string): void {
    replaceChildren(this.element, message);
  }

  clear(): void {
    replaceChildren(this.element);
  }
}

/**
 * A modal dialog named by its heading, removed from the page when it closes. The alerts move into
 * it while it is open (the page behind a modal dialog is inert) and back when it closes.
 */
export function openDialog(
  context: PortalContext,
  title: string,
  ...content: Node[]
): HTMLDialogElement {
  const heading = h('h2', { id: newId('dialog') }, title);
  const alerts = context.alerts.element;
  const { parentNode, nextSibling } = alerts;
  context.alerts.clear();
  const dialog = h('dialog', { 'aria-labelledby': heading.id }, heading, alerts, ...content);
  // The page behind is inert while the dialog is open, and hidden from assistive technology (and
  // from a search by role): its "Delete" is not the dialog's "Delete".
  const page = document.getElementById('portal');
  page?.setAttribute('aria-hidden', 'true');
  page?.setAttribute('inert', '');
  dialog.addEventListener('close', () => {
    context.alerts.clear();
    parentNode?.insertBefore(alerts, nextSibling);
    page?.removeAttribute('aria-hidden');
    page?.removeAttribute('inert');
    dialog.remove();
  });
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

/** The link to a subscription's view. */
export function subscriptionHash(id: string): string {
  return `#/subscriptions/${encodeURIComponent(id)}`;
}
