/**
 * Refusals shown to the user: each in an element with role `alert`, with the problem's detail and
 * the message of each of its errors, as text.
 * @module
 */
import { h, replaceChildren } from './dom.js';

/** The shape of the client's `WebhookApiError` that the page reads. */
interface Problem {
  readonly code?: unknown;
  readonly status?: unknown;
  readonly detail?: unknown;
  readonly title?: unknown;
  readonly errors?: unknown;
  readonly message?: unknown;
}

/** The place of the page where alerts appear. */
export class Alerts {
  readonly element: HTMLElement = h('div', { class: 'alerts' });
  readonly #onExpired: () => void;

  /** @param onExpired - called when the API says the session expired or its token is refused */
  constructor(onExpired: () => void) {
    this.#onExpired = onExpired;
  }

  /** Remove every alert (before an action, so that what shows is about the last one). */
  clear(): void {
    replaceChildren(this.element);
  }

  /** Show a message of the page's own. */
  say(message: string, ...details: string[]): void {
    replaceChildren(this.element, alert(message, details));
  }

  /** Show what went wrong: an API refusal with each error's message, or any other failure. */
  show(error: unknown): void {
    const problem = (typeof error === 'object' && error !== null ? error : {}) as Problem;
    if (problem.code === 'portal_token_expired') {
      this.#onExpired();
      this.say('Session expired.', 'Open the portal again from your account to start a new one.');
      return;
    }
    if (problem.code === 'portal_token_invalid') this.#onExpired();
    const issues = Array.isArray(problem.errors)
      ? problem.errors.flatMap((issue: unknown) => {
          const message = text((issue as { message?: unknown } | null)?.message);
          return message === undefined ? [] : [message];
        })
      : [];
    // With its errors listed, the problem's title heads them (its detail repeats them).
    const headline =
      issues.length > 0
        ? (text(problem.title) ?? text(problem.detail))
        : (text(problem.detail) ?? text(problem.title) ?? text(problem.message));
    this.say(headline ?? String(error), ...issues);
  }

  /**
   * Run an action with the alerts cleared first and any failure shown.
   * @returns whether it succeeded
   */
  async run(action: () => Promise<void>): Promise<boolean> {
    this.clear();
    try {
      await action();
      return true;
    } catch (error) {
      this.show(error);
      return false;
    }
  }
}

function alert(message: string, details: readonly string[]): HTMLElement {
  return h(
    'div',
    { role: 'alert', class: 'alert' },
    h('p', {}, message),
    details.length === 0 ? undefined : h('ul', {}, ...details.map((detail) => h('li', {}, detail))),
  );
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
