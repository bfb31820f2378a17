/**
 * The portal's DOM helpers: elements made with their text as text nodes, never parsed as markup,
 * so whatever the API returns shows as the characters it is.
 * @module
 */

/** A child of an element: a node, text, or nothing. */
export type Child = Node | string | number | null | undefined | false;

/** Attributes of an element (strings, or `true` for a boolean one) and its event listeners. */
export type Props = Readonly<Record<string, string | boolean | EventListener | undefined>>;

/**
 * Make an element. Attributes are set with `setAttribute`, `on*` members are listeners, and the
 * children are appended as nodes or text nodes.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : value);
  }
  append(element, children);
  return element;
}

/** Append children: nodes as they are, everything else as a text node. */
export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** Replace every child of an element. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

let ids = 0;

/** An id unique in the page, for a label's `for` or an `aria-labelledby`. */
export function newId(prefix: string): string {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** A labelled text field: the label, the input (or textarea) and an optional hint under it. */
export function field(
  label: string,
  input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement,
  hint?: string,
): HTMLElement {
  const id = newId('field');
  input.id = id;
  const hintElement = hint === undefined ? undefined : h('small', { id: `${id}-hint` }, hint);
  if (hintElement !== undefined) input.setAttribute('aria-describedby', hintElement.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hintElement);
}

/** A value shown under a label: `<label for>` and an `<output>`, so it is found by its name. */
export function labelledValue(label: string, value: string): HTMLElement {
  const id = newId('value');
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    h('output', { id, class: 'secret' }, value),
  );
}

/** A date and time in the browser's locale, with the ISO form as its title. */
export function time(at: number | string): HTMLTimeElement {
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return h('time', {}, String(at));
  return h('time', { datetime: date.toISOString() }, date.toLocaleString());
}
