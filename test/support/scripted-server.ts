/**
 * A real local HTTP server (node:http on 127.0.0.1, port 0) whose JSON answers a test writes, as a
 * function of one query parameter, for the client iterators' tests; and a reader of a listing that
 * stops at a hundred pages, so that a listing that never ends fails its test instead of hanging it.
 */
import { createServer } from 'node:http';
import { afterAll, beforeAll, expect } from 'vitest';
import { isConfigurationError } from '../../src/index.js';
import type { StartedServer } from './adapter-suite.js';
import { listen } from './listen.js';

/** The body the server answers for the parameter as sent (`''` when it is missing). */
export type Script = (parameter: string) => unknown;

/** The server of one test file: started before its tests, closed after them. */
export interface ScriptedServer {
  /** Base URL, for example `http://127.0.0.1:40123`; read it inside a test. */
  readonly url: string;
  /** The query string of every request since the last {@link ScriptedServer.serve}. */
  readonly requests: string[];
  /** Answer with `script` from now on, with a fresh request log. */
  serve(script: Script): void;
}

/**
 * Start a scripted server for the calling test file (registers its beforeAll and afterAll).
 * @param parameter - the query parameter handed to the script (`cursor`, `pageNumber`)
 */
export function scriptedServer(parameter: string): ScriptedServer {
  let app: StartedServer | undefined;
  let script: Script = () => ({ items: [] });
  const requests: string[] = [];
  beforeAll(async () => {
    app = await listen(
      createServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://127.0.0.1');
        requests.push(url.search);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(script(url.searchParams.get(parameter) ?? '')));
      }),
    );
  });
  afterAll(() => app?.close());
  return {
    get url() {
      if (app === undefined) throw new Error('The scripted server starts in beforeAll.');
      return app.url;
    },
    requests,
    serve(next) {
      script = next;
      requests.length = 0;
    },
  };
}

/**
 * The pages read until the listing ended or threw, and what it threw. It stops reading after 100
 * pages, more than any test serves, so that a listing that never ends fails the test, not hangs it.
 */
export async function readPages<P>(
  listing: AsyncIterable<P>,
): Promise<{ pages: P[]; error: unknown }> {
  const pages: P[] = [];
  try {
    for await (const page of listing) if (pages.push(page) === 100) break;
    return { pages, error: undefined };
  } catch (error) {
    return { pages, error };
  }
}

/**
 * Check that each listing refuses its options before any request: reading it throws a
 * ConfigurationError `invalid_option` whose message holds `message`.
 * @param listings - the iterators made with the same options
 * @param message - a part of the expected message
 */
export async function expectRefusedOptions(
  listings: readonly AsyncIterable<unknown>[],
  message: string,
): Promise<void> {
  for (const listing of listings) {
    const error = await (async () => {
      for await (const _ of listing);
    })().catch((e: unknown) => e);
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toContain(message);
  }
}
