/**
 * The demo's test events: the body of `POST /v1/test-events` (kind, propertyId, data; all optional)
 * checked field by field, every error with its JSON pointer.
 */
import { exampleEventCatalog, parseEventKind } from '../src/index.js';

/** How deep the `data` of a test event may nest (objects and arrays). */
export const MAX_TEST_EVENT_DEPTH = 32;

/** One error of a test event request, with its JSON pointer. */
export interface TestEventIssue {
  code: string;
  path: string;
  message: string;
}

const TEST_EVENT_FIELDS = ['kind', 'propertyId', 'data'];

const describe = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;

/** How deep a parsed JSON value nests, counted without recursion (it may be deeper than the stack). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const top = stack.pop()!;
    if (typeof top.value !== 'object' || top.value === null) continue;
    const depth = top.depth + 1;
    if (depth > deepest) deepest = depth;
    if (depth > MAX_TEST_EVENT_DEPTH) return depth;
    for (const child of Object.values(top.value)) stack.push({ value: child, depth });
  }
  return deepest;
}

const hasSpaceOrControl = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
};

/** Every error of a test event body (kind, propertyId, data; all optional), at once. */
export function testEventIssues(body: unknown): TestEventIssue[] {
  if (body === undefined) return [];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return [
      {
        code: 'body_not_object',
        path: '',
        message: `The body must be a JSON object with optional kind, propertyId and data; got ${describe(body)}.`,
      },
    ];
  }
  const issues: TestEventIssue[] = [];
  const input = body as Record<string, unknown>;
  for (const name of Object.keys(input)) {
    if (!TEST_EVENT_FIELDS.includes(name)) {
      issues.push({
        code: 'unknown_field',
        path: `/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`,
        message: `Unknown field ${JSON.stringify(name)}; the body has only ${TEST_EVENT_FIELDS.join(', ')} (check the spelling).`,
      });
    }
  }
  if (Object.hasOwn(input, 'kind')) {
    const kind = parseEventKind(input.kind);
    const unknown = kind.ok ? exampleEventCatalog.check(kind.value) : undefined;
    if (!kind.ok)
      issues.push({ code: kind.error.code, path: '/kind', message: kind.error.message });
    else if (unknown !== undefined) {
      issues.push({ code: unknown.code, path: '/kind', message: unknown.message });
    }
  }
  if (Object.hasOwn(input, 'propertyId')) {
    const id = input.propertyId;
    if (typeof id !== 'string' || id.length === 0 || id.length > 128 || hasSpaceOrControl(id)) {
      issues.push({
        code: 'invalid_property_id',
        path: '/propertyId',
        message: `propertyId must be a property id of 1 to 128 characters without spaces or control characters, or omitted for an account-level event; got ${typeof id === 'string' ? `${id.length} characters` : describe(id)}.`,
      });
    }
  }
  if (Object.hasOwn(input, 'data') && depthOf(input.data) > MAX_TEST_EVENT_DEPTH) {
    issues.push({
      code: 'data_too_deep',
      path: '/data',
      message: `data nests more than ${MAX_TEST_EVENT_DEPTH} objects or arrays deep; send a flatter value.`,
    });
  }
  return issues;
}
