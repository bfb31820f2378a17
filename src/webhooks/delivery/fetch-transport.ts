/**
 * The transport of deliveries on runtimes without `node:http` (Cloudflare Workers, Vercel Edge):
 * one POST through the runtime's `fetch`. @module
 */
import { DeliveryTransportError } from '../../errors/delivery-transport-error.js';
import { ApiConventionsError } from '../../errors/index.js';
import { aFunction, readOptions } from '../../internal/options.js';
import { readBounded } from '../../internal/read-bounded.js';
import { ALLOW_OPTION, addressAllowList } from './address-allow-list.js';
import { forbiddenAddressRange } from './forbidden-address.js';
import type { TransportResponse, WebhookTransport } from './http-transport.js';
import { RESPONSE_BODY_CAP } from './http-transport.js';
import { literalHostRefusal } from './ssrf-guard.js';

/** How {@link fetchTransport} sends. */
export interface FetchTransportOptions {
  /**
   * Addresses and ranges to allow despite the SSRF rule (a receiver on a private network), as
   * `httpTransport`'s `allow`. Only an address written in the URL can be checked.
   */
  allow?: readonly string[];
  /** The fetch to send with. @defaultValue the runtime's `fetch` */
  fetch?: typeof fetch;
}

const FETCH_TRANSPORT_RULES = {
  allow: ALLOW_OPTION,
  fetch: aFunction<typeof fetch>('a fetch function, (request) => Promise<Response>'),
};

/**
 * A transport through `fetch`, for runtimes without `node:http` (the default there). Its SSRF
 * rule covers what `fetch` lets it see: an endpoint whose host is an IP address is refused when
 * the address is private, loopback, link-local or otherwise not public, as by `httpTransport`; a
 * host name is sent as it is, as `fetch` resolves it out of sight (on Cloudflare Workers, the
 * platform's own network refuses private addresses). Redirects are not followed, as by
 * `httpTransport`; the body of the answer is read up to {@link RESPONSE_BODY_CAP} bytes and
 * dropped.
 * @throws ConfigurationError `invalid_address_allow_list` for a bad allow-list entry,
 * `invalid_option` for options that are no object, a misspelt one or a fetch that is no function
 * @example
 * ```ts
 * const transport = fetchTransport(); // on Cloudflare Workers
 * ```
 */
export function fetchTransport(options: FetchTransportOptions = {}): WebhookTransport {
  const read = readOptions(options, 'fetchTransport', FETCH_TRANSPORT_RULES, {
    example: "{ allow: ['10.0.0.0/8'] }",
  });
  const allowed = addressAllowList(read.allow ?? []);
  const guard = {
    refusal: (address: string) =>
      allowed.allows(address) ? undefined : forbiddenAddressRange(address),
  };
  const send = read.fetch ?? ((input, init) => globalThis.fetch(input, init));
  return async (request) => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch (error) {
      throw new DeliveryTransportError('connection_failed', `"${request.url}" is no URL.`, error);
    }
    const refused = literalHostRefusal(guard, url.hostname);
    if (refused !== undefined) throw refused;
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new DeliveryTransportError('connection_failed', `Cannot POST to ${url.protocol} URLs.`);
    }
    const signal = AbortSignal.timeout(request.timeoutMs);
    let response: Response;
    try {
      response = await send(url, {
        method: 'POST',
        headers: request.headers,
        body: request.body,
        redirect: 'manual',
        signal,
      });
    } catch (error) {
      if (error instanceof ApiConventionsError) throw error;
      if (signal.aborted) {
        throw new DeliveryTransportError(
          'timeout',
          `No answer from ${url.host} within ${request.timeoutMs} ms.`,
          error,
        );
      }
      throw new DeliveryTransportError(
        'connection_failed',
        `Could not deliver to ${url.host}: ${error instanceof Error ? error.message : String(error)}.`,
        error,
      );
    }
    const answer: TransportResponse = { status: response.status, headers: headersOf(response) };
    await discardBody(response);
    return answer;
  };
}

function headersOf(response: Response): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  response.headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/**
 * Read the body up to the cap and drop it; a longer one is cancelled. A body that fails to arrive
 * changes nothing: the status is the answer.
 */
async function discardBody(response: Response): Promise<void> {
  if (response.body === null) return;
  if (Number(response.headers.get('content-length')) > RESPONSE_BODY_CAP) {
    await response.body.cancel().catch(() => undefined);
    return;
  }
  await readBounded(response, RESPONSE_BODY_CAP);
}
