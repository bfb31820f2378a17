/**
 * Every answer of the webhook service checked against the OpenAPI document the service serves: a
 * status, content type or body the document does not describe for the request's route throws.
 * Validators are compiled once per document text and schema.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { type WebhookService, webhookServiceOpenApi } from '../../src/index.js';

// ajv-formats is CommonJS: its default export is the plugin (or holds it as `default`).
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

type Json = Record<string, unknown>;

interface Checker {
  readonly document: Json;
  readonly ajv: Ajv2020;
  readonly compiled: Map<string, ValidateFunction>;
}

/** One checker per document text, kept for the process: documents repeat across services. */
const checkers = new Map<string, Checker>();
/** The document text each service serves, by its base path. */
const served = new WeakMap<WebhookService, Map<string, string | undefined>>();

/**
 * The checker of the document a service serves under a base path (fetched anonymously, once), or
 * `undefined` when it serves none there: the path is outside the service's base path.
 */
export async function checkerOf(
  service: WebhookService,
  basePath: string,
): Promise<Checker | undefined> {
  const texts = served.get(service) ?? new Map<string, string | undefined>();
  served.set(service, texts);
  if (!texts.has(basePath)) {
    const response = await service.fetch(new Request(`http://api.test${basePath}/v1/openapi.json`));
    const text = await response.text();
    texts.set(basePath, response.status === 200 ? text : undefined);
  }
  const text = texts.get(basePath);
  return text === undefined ? undefined : checkerOfText(text);
}

function checkerOfText(text: string): Checker {
  let checker = checkers.get(text);
  if (checker === undefined) {
    const document = JSON.parse(text) as Json;
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    addFormats(ajv);
    ajv.addSchema(document, 'openapi.json');
    checker = { document, ajv, compiled: new Map() };
    checkers.set(text, checker);
  }
  return checker;
}

/** The base path of a request path: what comes before its `/v1/`. */
export function basePathOf(path: string): string {
  const at = path.indexOf('/v1/');
  return at === -1 ? '' : path.slice(0, at);
}

/** What the check reads of an answer. */
export interface CheckedAnswer {
  readonly status: number;
  readonly contentType: string | null;
  readonly text: string;
}

/**
 * Throw unless the document describes this answer to `method path`: the route's response for the
 * status (or, for a path or method it lists not, the answers to any request), its content type,
 * and the body against its schema. HEAD is checked as GET without a body.
 */
export async function checkAnswer(
  service: WebhookService,
  method: string,
  path: string,
  answer: CheckedAnswer,
): Promise<void> {
  const pathname = path.split('?')[0] as string;
  const basePath = basePathOf(pathname);
  const where = `${method} ${path.slice(0, 120)} answered ${answer.status}`;
  const own = await checkerOf(service, basePath);
  // A path outside the service's base path: answered as any request to a path it lists not.
  const checker = own ?? checkerOfText(JSON.stringify(webhookServiceOpenApi()));
  const rest = own === undefined ? '/outside' : pathname.slice(basePath.length);
  const found = responseOf(checker.document, method, rest, answer.status);
  if (found === undefined) {
    throw new Error(
      `${where}, which the OpenAPI document does not describe: ${answer.text.slice(0, 300)}`,
    );
  }
  const response = resolve(checker.document, found.pointer);
  const content = response.value.content as Json | undefined;
  if (content === undefined) {
    if (answer.text !== '') throw new Error(`${where} with a body the document has none for`);
    return;
  }
  if (method === 'HEAD') return;
  const essence = (answer.contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (!Object.hasOwn(content, essence)) {
    throw new Error(
      `${where} as ${essence || 'no content type'}; the document says ${Object.keys(content).join(', ')}`,
    );
  }
  const pointer = `${response.pointer}/content/${pointerPart(essence)}/schema`;
  let validate = checker.compiled.get(pointer);
  if (validate === undefined) {
    validate = checker.ajv.compile({ $ref: `openapi.json#${pointer}` });
    checker.compiled.set(pointer, validate);
  }
  let body: unknown = answer.text;
  if (essence.endsWith('json')) {
    try {
      body = JSON.parse(answer.text);
    } catch {
      throw new Error(`${where} with a body that is no JSON: ${answer.text.slice(0, 200)}`);
    }
  }
  if (!validate(body)) {
    throw new Error(
      `${where} with a body the document's schema refuses: ${checker.ajv.errorsText(validate.errors)}; body ${answer.text.slice(0, 500)}`,
    );
  }
}

/** The pointer of the response object the document gives this status on this route. */
function responseOf(
  document: Json,
  method: string,
  rest: string,
  status: number,
): { pointer: string } | undefined {
  const paths = document.paths as Record<string, Json>;
  const asked = method === 'HEAD' ? 'get' : method.toLowerCase();
  const template = Object.keys(paths).find((key) => matches(key, rest));
  const operation =
    template === undefined ? undefined : (paths[template]?.[asked] as Json | undefined);
  if (template !== undefined && operation !== undefined) {
    const responses = operation.responses as Json;
    if (Object.hasOwn(responses, String(status))) {
      return { pointer: `/paths/${pointerPart(template)}/${asked}/responses/${status}` };
    }
    return undefined;
  }
  // No such path, or no such method on it: the answers to any request.
  const every = document['x-every-request-responses'] as Json;
  if (status === 404 && template !== undefined) return undefined;
  if (status === 405 && template === undefined) return undefined;
  return Object.hasOwn(every, String(status))
    ? { pointer: `/x-every-request-responses/${status}` }
    : undefined;
}

function matches(template: string, rest: string): boolean {
  const pattern = template.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace('\\{id\\}', '[^/]+');
  return new RegExp(`^${pattern}$`).test(rest);
}

/** The object at a pointer, its `$ref` followed (within the document). */
function resolve(document: Json, pointer: string): { value: Json; pointer: string } {
  let value: unknown = document;
  for (const part of pointer.split('/').slice(1)) {
    value = (value as Json)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  const ref = (value as Json).$ref;
  if (typeof ref === 'string' && ref.startsWith('#')) return resolve(document, ref.slice(1));
  return { value: value as Json, pointer };
}

function pointerPart(part: string): string {
  return part.replaceAll('~', '~0').replaceAll('/', '~1');
}
