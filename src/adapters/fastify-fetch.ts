/** A fetch handler mounted in Fastify 5 as a plugin, from `api-conventions/fastify`. @module */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import {
  type FetchTarget,
  type NodeFetchHandlerOptions,
  type NodeFetchListener,
  nodeFetchHandler,
} from './fetch-bridge.js';

/** Options of {@link fastifyFetchPlugin}: the handler, and the bridge's `origin` and `onError`. */
export interface FastifyFetchOptions extends NodeFetchHandlerOptions {
  /**
   * What answers every request under the plugin's prefix: a fetch handler, or an object whose
   * `fetch` method is one (the webhook service).
   */
  handler: FetchTarget;
}

/**
 * A fetch handler (`(request: Request) => Promise<Response>`) answering every method and path
 * under the prefix it is registered with, through {@link nodeFetchHandler}. The plugin is
 * encapsulated: inside it, every body is left unread for the handler (Fastify's parsers and its
 * `bodyLimit` do not run; the handler reads and limits the body itself), while the hooks of its
 * parents (a rate limit among them) still run first. The `Request` URL is the whole path, prefix
 * included.
 * @example
 * ```ts
 * await app.register(fastifyFetchPlugin, { handler: service, prefix: '/v1' });
 * ```
 */
export const fastifyFetchPlugin: FastifyPluginCallback<FastifyFetchOptions> = (
  fastify,
  options,
  done,
) => {
  let serve: NodeFetchListener;
  try {
    // Fastify hands the plugin its registration options too (`prefix`, `logLevel`, ...).
    const { handler, origin, onError } = options;
    serve = nodeFetchHandler(handler, { origin, onError });
  } catch (error) {
    done(error as Error);
    return;
  }
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (_request, _payload, parsed) => parsed(null));
  const answer = (request: FastifyRequest, reply: FastifyReply) => {
    // Fastify lets go of the reply: the bridge writes node's response itself.
    reply.hijack();
    return serve(request.raw, reply.raw);
  };
  fastify.all('/', answer);
  fastify.all('/*', answer);
  done();
};
