/**
 * The subscription form of the add and edit dialogs: its labelled fields, and the body they make.
 * The page checks only what the API cannot be sent as typed (a header line without a colon);
 * everything else is the API's to refuse, so that its message is the one shown.
 * @module
 */
import type {
  CreateWebhookSubscription,
  UpdateWebhookSubscription,
  WebhookSignatureType,
  WebhookSubscription,
} from '../client/webhook-types.js';
import { openDialog, type PortalContext } from './context.js';
import { field, h, newId } from './dom.js';

/** The form's fields, filled from a subscription when it edits one. */
export class SubscriptionForm {
  readonly element: HTMLElement;
  readonly #endpointUrl = textInput({
    inputmode: 'url',
    placeholder: 'https://example.com/webhooks',
  });
  readonly #events: HTMLInputElement;
  readonly #propertyIds = textInput({ placeholder: 'every property' });
  readonly #description = textInput({ maxlength: '256' });
  readonly #rateLimit = textInput({ inputmode: 'numeric', placeholder: 'no limit' });
  readonly #signatureType = h(
    'select',
    {},
    h('option', { value: 'hmac-sha256' }, 'HMAC-SHA256 (a shared secret)'),
    h('option', { value: 'ed25519' }, 'Ed25519 (a public key)'),
  );
  readonly #headers = h('textarea', { rows: '3', spellcheck: 'false' });
  readonly #metadata = h('textarea', { rows: '3', spellcheck: 'false' });

  /** @param catalog - the event patterns offered as suggestions */
  constructor(catalog: readonly string[], subscription?: WebhookSubscription) {
    const suggestions = h(
      'datalist',
      { id: newId('catalog') },
      ...catalog.map((pattern) => h('option', { value: pattern })),
    );
    this.#events = textInput({ list: suggestions.id, placeholder: 'orders/*, invoices/paid' });
    if (subscription !== undefined) this.#fill(subscription);
    this.element = h(
      'div',
      { class: 'fields' },
      field('Endpoint URL', this.#endpointUrl, 'Where deliveries are sent: an https URL.'),
      field(
        'Events',
        this.#events,
        `Patterns separated by commas: topic/event or topic/*.${catalog.length === 0 ? '' : ` Known: ${catalog.join(', ')}.`}`,
      ),
      suggestions,
      field('Property IDs', this.#propertyIds, 'Separated by commas; empty means every property.'),
      field('Description', this.#description, 'A note of your own, at most 256 characters.'),
      field('Rate limit', this.#rateLimit, 'Deliveries per second; empty means no limit.'),
      field(
        'Signature type',
        this.#signatureType,
        subscription === undefined
          ? 'How deliveries are signed.'
          : 'Another type gives the subscription a new secret of that type.',
      ),
      field('Headers', this.#headers, 'Sent with every delivery: one "Name: value" a line.'),
      field(
        'Metadata',
        this.#metadata,
        'Kept with the subscription, never sent: one "key: value" a line.',
      ),
    );
  }

  /** The create body of the fields. @throws Error for a line of headers or metadata without a colon */
  createBody(): CreateWebhookSubscription {
    const propertyIds = list(this.#propertyIds.value);
    const description = this.#description.value.trim();
    const rateLimit = this.#rateLimit.value.trim();
    const headers = pairs('Headers', this.#headers.value);
    const metadata = pairs('Metadata', this.#metadata.value);
    return {
      endpointUrl: this.#endpointUrl.value.trim(),
      events: list(this.#events.value),
      ...(propertyIds.length === 0 ? {} : { propertyIds }),
      ...(description === '' ? {} : { description }),
      ...(rateLimit === '' ? {} : { rateLimit: wholeNumber(rateLimit) }),
      ...(Object.keys(headers).length === 0 ? {} : { headers }),
      ...(Object.keys(metadata).length === 0 ? {} : { metadata }),
      signatureType: this.#signatureType.value as WebhookSignatureType,
    };
  }

  /**
   * The change of the fields from a subscription: only what differs; an emptied optional field
   * is `null`, which removes it.
   * @throws Error for a line of headers or metadata without a colon
   */
  changeFrom(subscription: WebhookSubscription): UpdateWebhookSubscription {
    const body = this.createBody();
    const change: Record<string, unknown> = {};
    const differs = (a: unknown, b: unknown) => JSON.stringify(a) !== JSON.stringify(b);
    if (body.endpointUrl !== subscription.endpointUrl) change.endpointUrl = body.endpointUrl;
    if (differs(body.events, subscription.events)) change.events = body.events;
    for (const name of [
      'propertyIds',
      'description',
      'rateLimit',
      'headers',
      'metadata',
    ] as const) {
      if (differs(body[name], subscription[name])) change[name] = body[name] ?? null;
    }
    if (body.signatureType !== subscription.signatureType) {
      change.signatureType = body.signatureType;
    }
    return change as UpdateWebhookSubscription;
  }

  #fill(subscription: WebhookSubscription): void {
    this.#endpointUrl.value = subscription.endpointUrl;
    this.#events.value = subscription.events.join(', ');
    this.#propertyIds.value = subscription.propertyIds?.join(', ') ?? '';
    this.#description.value = subscription.description ?? '';
    this.#rateLimit.value =
      subscription.rateLimit === undefined ? '' : String(subscription.rateLimit);
    this.#signatureType.value = subscription.signatureType;
    this.#headers.value = lines(subscription.headers);
    this.#metadata.value = lines(subscription.metadata);
  }
}

function textInput(props: Readonly<Record<string, string>>): HTMLInputElement {
  // Text, not type=url or number: what the user typed reaches the API, whose refusal says why.
  return h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', ...props });
}

// Items separated by commas, each trimmed, the empty ones left out.
function list(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

// A whole number as typed as a number; anything else as typed, for the API to refuse and say why.
function wholeNumber(value: string): number {
  // The API is the one that says what a rate must be: its refusal names the field and the range.
  return /^\d+$/.test(value) ? Number(value) : (value as unknown as number);
}

function pairs(label: string, value: string): Record<string, string> {
  const result: Record<string, string> = {};
  const rows = value.split('\n');
  for (const [index, row] of rows.entries()) {
    if (row.trim() === '') continue;
    const colon = row.indexOf(':');
    if (colon === -1) {
      throw new Error(`${label}: line ${index + 1} has no colon; write each as "name: value".`);
    }
    result[row.slice(0, colon).trim()] = row.slice(colon + 1).trim();
  }
  return result;
}

function lines(record: Readonly<Record<string, string>> | undefined): string {
  return Object.entries(record ?? {})
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
}

/**
 * A dialog of the form with its submit button and Cancel: a submit runs `submit` with the alerts
 * cleared first and its failure shown, the button disabled meanwhile.
 */
export function formDialog(
  context: PortalContext,
  title: string,
  form: SubscriptionForm,
  submitLabel: string,
  submit: (dialog: HTMLDialogElement, element: HTMLFormElement) => Promise<void>,
): void {
  const button = h('button', { type: 'submit' }, submitLabel);
  const cancel = h('button', { type: 'button' }, 'Cancel');
  const element = h('form', {}, form.element, h('div', { class: 'actions' }, button, cancel));
  const dialog = openDialog(context, title, element);
  cancel.addEventListener('click', () => dialog.close());
  element.addEventListener('submit', (event) => {
    event.preventDefault();
    button.disabled = true;
    void context.alerts
      .run(() => submit(dialog, element))
      .finally(() => {
        button.disabled = false;
      });
  });
}
