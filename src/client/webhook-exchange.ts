/**
 * One request of the webhook service's client: its headers added, sent through the fetch that
 * honours `Retry-After`, and any answer but a success turned into a {@link WebhookApiError}.
 * @module
 */
import { WebhookApiError, type WebhookApiIssue } from '../errors/webhook-api-error.js';
import type { FetchFunction } from './fetch.js';

/** Header names and values: an object, a `Headers`, or `[name, value]` pairs. */
export type WebhookHeaderValues = Headers | Readonly<Record<string, string>> | [string, string][];

/** Headers of every request: fixed, or made for each request (a token that is renewed). */
export type WebhookClientHeaders =
  | WebhookHeaderValues
  | (() => WebhookHeaderValues | undefined | Promise<WebhookHeaderValues | undefined>);

/** Sends a request and answers its successful response, or throws a {@link WebhookApiError}. @internal */
export type Exchange = (url: string, init: RequestInit) => Promise<Response>;

/**
 * The exchange of a client.
 * @param send - the fetch that honours `Retry-After`
 * @param headers - the client's headers
 * @internal
 */
export function webhookExchange(
  send: FetchFunction,
  headers: WebhookClientHeaders | undefined,
): Exchange {
  return async (url, init) => {
    const method = init.method ?? 'GET';
    const sent = new Headers(typeof headers === 'function' ? await headers() : headers);
    for (const [name, value] of new Headers(init.headers)) sent.set(name, value);
    if (!sent.has('accept')) sent.set('accept', 'application/json');
    let response: Response;
    try {
      response = await send(url, { ...init, method, headers: sent });
    } catch (cause) {
      // An abort is the caller's own doing: it gets its reason back, as fetch gives it.
      if (init.signal?.aborted) throw cause;
      throw new WebhookApiError(
        'network_error',
        `${method} ${url} was not answered (${String(cause)}); check the baseUrl and the network.`,
        { method, url },
        { cause },
      );
    }
    if (response.ok) return response;
    throw await problemError(method, url, response);
  };
}

/**
 * The JSON body of a successful answer.
 * @throws WebhookApiError `invalid_response` when it is not JSON
 * @internal
 */
export async function jsonBody<T>(method: string, url: string, response: Response): Promise<T> {
  try {
    return (await response.json()) as T;
  } catch (cause) {
    throw new WebhookApiError(
      'invalid_response',
      `${method} ${url} answered ${response.status} without a JSON body; is the baseUrl that of the webhook service?`,
      { method, url, status: response.status },
      { cause },
    );
  }
}

// The problem of an error answer, read as far as it can be: its code, title, detail and issues.
async function problemError(method: string, url: string, response: Response) {
  const { status } = response;
  const problem = await problemBody(response);
  if (problem === undefined || typeof problem.code !== 'string') {
    const code = status === 429 ? 'rate_limited' : 'invalid_response';
    const why =
      status === 429
        ? 'still 429 once the retries its Retry-After asked for were spent; slow down and try again later'
        : `${status} without a problem details body; is the baseUrl that of the webhook service?`;
    return new WebhookApiError(code, `${method} ${url} answered ${why}.`, {
      method,
      url,
      status,
      ...(problem === undefined ? {} : { problem }),
    });
  }
  const title = typeof problem.title === 'string' ? problem.title : undefined;
  const detail = typeof problem.detail === 'string' ? problem.detail : undefined;
  const parameter = typeof problem.parameter === 'string' ? problem.parameter : undefined;
  const errors = issuesOf(problem.errors);
  return new WebhookApiError(
    problem.code,
    `${method} ${url} answered ${status} ${problem.code}: ${detail ?? title ?? 'no detail'}`,
    { method, url, status, title, detail, parameter, errors, problem },
  );
}

async function problemBody(response: Response): Promise<Record<string, unknown> | undefined> {
  let body: unknown;
  try {
    body = JSON.parse(await response.text());
  } catch {
    return undefined;
  }
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : undefined;
}

// The issues with a code, a pointer and a message; a member of another shape is left out.
function issuesOf(value: unknown): WebhookApiIssue[] {
  if (!Array.isArray(value)) return [];
  const issues: WebhookApiIssue[] = [];
  for (const item of value as unknown[]) {
    if (typeof item !== 'object' || item === null) continue;
    const { code, path, message } = item as Record<string, unknown>;
    if (typeof code !== 'string' || typeof path !== 'string') continue;
    issues.push({ code, path, message: typeof message === 'string' ? message : '' });
  }
  return issues;
}
