/**
 * A web-standard fetch handler served by each of the five supported stacks, as docs/mounting.md
 * mounts it, on 127.0.0.1 over real HTTP: node:http, Express 5, Fastify 5 and Koa 3 through
 * `nodeFetchHandler`, Hono 4 on @hono/node-server with no bridge. Parameterised by the handler,
 * so that any fetch service (the echo of the bridge's tests, the webhook service) runs through the
 * same five mountings.
 */
import { createServer, type Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { fastifyFetchPlugin } from '../../src/adapters/fastify.js';
import {
  type FetchTarget,
  type NodeFetchHandlerOptions,
  nodeFetchHandler,
} from '../../src/adapters/node.js';
import { problemDetails, problemResponse } from '../../src/index.js';
import { listen } from './listen.js';

/** The stacks a fetch handler is mounted in. */
export const FRAMEWORKS = ['node:http', 'Express', 'Fastify', 'Koa', 'Hono'] as const;

/** One of {@link FRAMEWORKS}. */
export type Framework = (typeof FRAMEWORKS)[number];

/** A fetch handler served over real HTTP. */
export interface MountedServer {
  readonly framework: Framework;
  /** `http://127.0.0.1:port` */
  readonly url: string;
  /** Close every connection and the server. */
  close(): Promise<void>;
}

/** How the handler is mounted. */
export interface MountOptions {
  /** Told of a failure the mounting answered (the bridge's `onError`, Hono's `onError`). */
  readonly onError?: (error: unknown) => void;
  /** The bridge's `origin` (Hono builds its own URL from the Host header). */
  readonly origin?: string;
}

function bridgeOptions(options: MountOptions): NodeFetchHandlerOptions {
  const { onError, origin } = options;
  return {
    origin,
    onError: onError === undefined ? () => undefined : (event) => onError(event.error),
  };
}

/** node:http: the bridge is the request listener. */
async function startNode(handler: FetchTarget, options: MountOptions) {
  return listen(createServer(nodeFetchHandler(handler, bridgeOptions(options))));
}

/** Express 5: the bridge is the application's last middleware. */
async function startExpress(handler: FetchTarget, options: MountOptions) {
  const app = express();
  app.use(nodeFetchHandler(handler, bridgeOptions(options)));
  return listen(createServer(app));
}

/** Fastify 5: the plugin, encapsulated, with its catch-all route and raw bodies. */
async function startFastify(handler: FetchTarget, options: MountOptions) {
  const app = Fastify({ logger: false });
  await app.register(fastifyFetchPlugin, { handler, ...bridgeOptions(options) });
  await app.ready();
  return listen(app.server, async () => {
    app.server.closeAllConnections();
    await app.close();
  });
}

/** Koa 3: Koa lets go of the response, and the bridge writes node's. */
async function startKoa(handler: FetchTarget, options: MountOptions) {
  const koa = new Koa();
  koa.silent = true;
  const serve = nodeFetchHandler(handler, bridgeOptions(options));
  koa.use((ctx) => {
    ctx.respond = false;
    return serve(ctx.req, ctx.res);
  });
  return listen(createServer(koa.callback()));
}

/** Hono 4 on @hono/node-server: the handler mounted as it is; a throw answered as a problem. */
async function startHono(handler: FetchTarget, options: MountOptions) {
  const app = new Hono();
  // Hono calls what it mounts unbound: a service's method is called on its service.
  app.mount('/', typeof handler === 'function' ? handler : (request) => handler.fetch(request));
  app.onError((error) => {
    options.onError?.(error);
    const parts = problemResponse(
      problemDetails({ code: 'internal_error', title: 'Internal server error', status: 500 }),
    );
    return new Response(parts.body, parts);
  });
  return listen(createAdaptorServer({ fetch: app.fetch }) as Server);
}

const STARTERS = {
  'node:http': startNode,
  Express: startExpress,
  Fastify: startFastify,
  Koa: startKoa,
  Hono: startHono,
} as const;

/**
 * Serve the handler in one framework on 127.0.0.1, port 0.
 * @param framework - which stack
 * @param handler - the fetch handler, or an object whose `fetch` method is one (the webhook service)
 * @param options - failure reports, origin
 */
export async function mountServer(
  framework: Framework,
  handler: FetchTarget,
  options: MountOptions = {},
): Promise<MountedServer> {
  const started = await STARTERS[framework](handler, options);
  return { framework, url: started.url, close: started.close };
}

/**
 * Serve the handler in each of the five frameworks, each on a port of its own.
 * @param handler - the fetch handler, or an object whose `fetch` method is one (the webhook service)
 * @param options - failure reports, origin
 */
export async function mountedServers(
  handler: FetchTarget,
  options: MountOptions = {},
): Promise<MountedServer[]> {
  return Promise.all(FRAMEWORKS.map((framework) => mountServer(framework, handler, options)));
}
