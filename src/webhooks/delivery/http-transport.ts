/** The default transport of deliveries: one POST through the SSRF guard's lookup. @module */
import type { Agent as HttpAgent, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { DeliveryTransportError } from '../../errors/delivery-transport-error.js';
import { ApiConventionsError } from '../../errors/index.js';
import { requireNodeBuiltin } from '../../internal/node-builtin.js';
import { INVALID, optionsOf, type Rule, readOptions, withMethods } from '../../internal/options.js';
import { isInstance } from '../../internal/read-once.js';
import type { SsrfGuard, SsrfGuardOptions } from './ssrf-guard.js';
import { literalHostRefusal, SSRF_GUARD_RULES, ssrfGuard } from './ssrf-guard.js';

/** One POST to send. */
export interface TransportRequest {
  /** The endpoint URL. */
  readonly url: string;
  /** Request headers (content type, the `webhook-*` headers). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body. */
  readonly body: string;
  /** Give up after this many ms and fail with `timeout`. */
  readonly timeoutMs: number;
}

/** What the receiver answered. */
export interface TransportResponse {
  /** The HTTP status. */
  readonly status: number;
  /** Response headers, names in lower case. */
  readonly headers: Readonly<Record<string, string | undefined>>;
}

/**
 * Sends one delivery attempt. Rejects when no answer came: with a {@link DeliveryTransportError}
 * (`timeout`, `connection_failed`) or a `ForbiddenAddressError`.
 */
export type WebhookTransport = (request: TransportRequest) => Promise<TransportResponse>;

/** How the default transport connects. */
export interface HttpTransportOptions extends SsrfGuardOptions {
  /** A guard made elsewhere (its allow-list and lookup win over `allow` and `lookup`). */
  guard?: SsrfGuard;
  /**
   * Keep-alive agents. A connection is checked once, when it opens: share an agent only between
   * transports with the same guard. @defaultValue agents of this transport's own
   */
  agent?: {
    /** For `http:` endpoints. */
    http?: HttpAgent;
    /** For `https:` endpoints. */
    https?: HttpAgent;
  };
}

const FETCH_INSTEAD = 'give the deliveries fetchTransport() instead';

function nodeHttp() {
  return requireNodeBuiltin('node:http', 'httpTransport', FETCH_INSTEAD);
}

const AGENT: Rule<HttpAgent> = {
  expected: 'an http.Agent such as new https.Agent({ keepAlive: true })',
  read: (value) => (isInstance(value, nodeHttp().Agent) ? value : INVALID),
};

const TRANSPORT_RULES = {
  ...SSRF_GUARD_RULES,
  guard: withMethods<SsrfGuard>(['refusal', 'lookup'], 'an SsrfGuard from ssrfGuard()'),
  agent: optionsOf(
    { http: AGENT, https: AGENT },
    '{ https: new https.Agent({ keepAlive: true }) }',
  ),
};

/**
 * The default transport on runtimes with `node:http`, `node:https` and `node:dns` (Node, Bun,
 * Deno): node:http(s) behind the SSRF guard, which checks every address a name resolves to.
 * @throws ConfigurationError `invalid_address_allow_list` for a bad allow-list entry,
 * `invalid_option` for options that are no object, a misspelt one (`agent`'s too), a guard or
 * lookup that is no such thing, or an agent that is no `http.Agent`; `unsupported_runtime` on a
 * runtime without `node:http` or `node:https` (give `fetchTransport()` there)
 * @example
 * ```ts
 * const transport = httpTransport({ allow: ['127.0.0.1'] }); // a local receiver in tests
 * ```
 */
export function httpTransport(options: HttpTransportOptions = {}): WebhookTransport {
  const read = readOptions(options, 'httpTransport', TRANSPORT_RULES, {
    example: "{ allow: ['127.0.0.1'] }",
  });
  const { allow, lookup, agent } = read;
  const http = nodeHttp();
  const https = requireNodeBuiltin('node:https', 'httpTransport', FETCH_INSTEAD);
  const guard =
    read.guard ??
    ssrfGuard({
      ...(allow === undefined ? {} : { allow }),
      ...(lookup === undefined ? {} : { lookup }),
    });
  // A socket opened under another guard (a wider allow-list) would carry requests unchecked.
  const agents = {
    http: agent?.http ?? new http.Agent({ keepAlive: true, timeout: 5_000 }),
    https: agent?.https ?? new https.Agent({ keepAlive: true, timeout: 5_000 }),
  };
  return (request) =>
    new Promise<TransportResponse>((resolve, reject) => {
      let url: URL;
      try {
        url = new URL(request.url);
      } catch (error) {
        reject(
          new DeliveryTransportError('connection_failed', `"${request.url}" is no URL.`, error),
        );
        return;
      }
      const refused = literalHostRefusal(guard, url.hostname);
      if (refused !== undefined) {
        reject(refused);
        return;
      }
      const secure = url.protocol === 'https:';
      if (!secure && url.protocol !== 'http:') {
        reject(
          new DeliveryTransportError('connection_failed', `Cannot POST to ${url.protocol} URLs.`),
        );
        return;
      }
      const signal = AbortSignal.timeout(request.timeoutMs);
      const send = secure ? https.request : http.request;
      const agent = secure ? agents.https : agents.http;
      const req = send(
        url,
        {
          method: 'POST',
          headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) },
          lookup: guard.lookup as never,
          signal,
          agent,
        },
        (res) => {
          res.on('error', () => undefined);
          discardBody(res);
          resolve({ status: res.statusCode ?? 0, headers: flatten(res.headers) });
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (error instanceof ApiConventionsError) reject(error);
        else if (signal.aborted) {
          reject(
            new DeliveryTransportError(
              'timeout',
              `No answer from ${url.host} within ${request.timeoutMs} ms.`,
              error,
            ),
          );
        } else {
          reject(
            new DeliveryTransportError(
              'connection_failed',
              `Could not deliver to ${url.host}: ${error.code ?? error.message}.`,
              error,
            ),
          );
        }
      });
      req.end(request.body);
    });
}

/**
 * The most bytes of a response body read before its connection is closed: the body is not kept,
 * it is read only so that a short one leaves the keep-alive connection for the next delivery.
 */
export const RESPONSE_BODY_CAP = 64 * 1024;

/**
 * Read the body to its end and drop it, or close the connection as soon as it is, or announces
 * being, longer than {@link RESPONSE_BODY_CAP}: an endless or huge body costs no more than that.
 */
function discardBody(res: IncomingMessage): void {
  const announced = Number(res.headers['content-length']);
  if (announced > RESPONSE_BODY_CAP) {
    res.destroy();
    return;
  }
  let read = 0;
  res.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > RESPONSE_BODY_CAP) res.destroy();
  });
}

function flatten(headers: IncomingHttpHeaders): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
