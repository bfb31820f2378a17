/**
 * Node's own modules, read where the runtime has them (Node; Bun, Deno, and workerd with
 * `nodejs_compat`, through `process.getBuiltinModule`) and never imported: a file of the portable
 * graph that needs one asks here when it needs it, so that loading the package on a runtime
 * without them (workerd without `nodejs_compat`, a browser) neither fails nor does anything.
 * @module
 */
import type * as NodeCrypto from 'node:crypto';
import type * as NodeDiagnosticsChannel from 'node:diagnostics_channel';
import type * as NodeDns from 'node:dns';
import type * as NodeHttp from 'node:http';
import type * as NodeHttps from 'node:https';
import { ConfigurationError } from '../errors/configuration-error.js';

/** The modules of Node's that the portable graph reads, by their names. */
export interface NodeBuiltins {
  readonly 'node:crypto': typeof NodeCrypto;
  readonly 'node:diagnostics_channel': typeof NodeDiagnosticsChannel;
  readonly 'node:dns': typeof NodeDns;
  readonly 'node:http': typeof NodeHttp;
  readonly 'node:https': typeof NodeHttps;
}

type GetBuiltinModule = (id: string) => unknown;

/**
 * One of Node's modules, or undefined on a runtime without it (or without
 * `process.getBuiltinModule`, which Node has from 20.16).
 * @param id - the module's name, with its `node:` prefix
 */
export function nodeBuiltin<K extends keyof NodeBuiltins>(id: K): NodeBuiltins[K] | undefined {
  const process = (globalThis as { process?: { getBuiltinModule?: GetBuiltinModule } }).process;
  const get = process?.getBuiltinModule;
  if (typeof get !== 'function') return undefined;
  try {
    return (get.call(process, id) ?? undefined) as NodeBuiltins[K] | undefined;
  } catch {
    return undefined;
  }
}

/**
 * One of Node's modules, for a function that has no other way to do its work.
 * @param id - the module's name, with its `node:` prefix
 * @param what - what needs it, for the message
 * @param instead - what to use on a runtime without it
 * @throws ConfigurationError `unsupported_runtime` when the runtime does not have it
 */
export function requireNodeBuiltin<K extends keyof NodeBuiltins>(
  id: K,
  what: string,
  instead: string,
): NodeBuiltins[K] {
  const found = nodeBuiltin(id);
  if (found === undefined) {
    throw new ConfigurationError(
      'unsupported_runtime',
      `${what} needs ${id}, which this runtime does not have: ${instead}.`,
    );
  }
  return found;
}

/**
 * `node:crypto`, for the synchronous forms (hashes, HMAC, ed25519 keys, AES-GCM).
 * @param what - what needs it, for the message
 * @throws ConfigurationError `unsupported_runtime` on a runtime without it
 */
export function nodeCrypto(what: string): typeof NodeCrypto {
  return requireNodeBuiltin(
    'node:crypto',
    what,
    'use the asynchronous form (WebCrypto), or on Cloudflare Workers turn on the nodejs_compat flag',
  );
}

/** The part of a diagnostics channel that the publishers use. */
export interface PublishingChannel {
  readonly hasSubscribers: boolean;
  publish(message: unknown): void;
}

const NO_CHANNEL: PublishingChannel = Object.freeze({ hasSubscribers: false, publish() {} });

/**
 * The `node:diagnostics_channel` channel of a name, where the runtime has the module; elsewhere a
 * channel that no one can subscribe to, so that every message is skipped unbuilt.
 * @param name - the channel's name
 */
export function diagnosticsChannel(name: string): PublishingChannel {
  return nodeBuiltin('node:diagnostics_channel')?.channel(name) ?? NO_CHANNEL;
}
