/**
 * The webhook receiver's seen-store on Redis, for receivers behind a load balancer: a claim is
 * `SET NX PX`, so that of two instances receiving one message id at once only one runs the
 * handler. @module
 */

import { readOptions, requiredValue } from '../internal/options.js';
import type { WebhookSeenStore } from '../webhooks/receiver/seen-store.js';
import type { RedisScriptClient, ScriptArgument } from './redis-client.js';
import { type Script, script } from './script-runner.js';
import { aScriptClient, keyPrefix } from './store-options.js';

/** Options of {@link redisSeenStore}. */
export interface RedisSeenStoreOptions {
  /** The client, through an adapter: `ioredisClient(redis)` or `nodeRedisClient(redis)`. */
  client: RedisScriptClient;
  /**
   * Prefix of every key, the message id following it. Must not contain `{` or `}`, nor a lone
   * surrogate.
   * @defaultValue `'webhooks:seen:'`
   */
  prefix?: string | undefined;
}

// A key holds '0' while claimed, '1' once handled; each with its own time to live.
const CLAIM = script(`
if redis.call('SET', KEYS[1], '0', 'NX', 'PX', ARGV[1]) then return 'claimed' end
if redis.call('GET', KEYS[1]) == '1' then return 'handled' end
return 'pending'
`);
const COMPLETE = script(`redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) return 1`);
// Only a claim is given back: a handled mark stays.
const RELEASE = script(`
if redis.call('GET', KEYS[1]) == '0' then redis.call('DEL', KEYS[1]) end
return 1
`);

const RULES = { client: aScriptClient, prefix: keyPrefix };

/**
 * A seen-store on Redis for `createWebhookReceiver`: every instance sharing the server shares the
 * ids handled and the claims held. Each claim is one atomic script (`SET NX PX`, then what holds
 * the id); times to live are kept by Redis. A failed command rejects: the receiver answers 503 and
 * the sender retries.
 * @throws ConfigurationError `invalid_redis_client` for a client without `evalSha` and `eval`,
 *   `invalid_option` for a bad prefix
 * @example
 * ```ts
 * const seen = redisSeenStore({ client: ioredisClient(redis) });
 * const receiver = createWebhookReceiver({ secrets, seen, handle });
 * ```
 */
export function redisSeenStore(options: RedisSeenStoreOptions): WebhookSeenStore {
  const read = readOptions(options, 'redisSeenStore', RULES, {
    required: true,
    defaults: { prefix: 'webhooks:seen:' },
    example: '{ client: ioredisClient(redis) }',
  });
  const client = requiredValue(RULES.client, read.client, 'client');
  const { prefix } = read;
  const run = (which: Script, id: string, args: ScriptArgument[]): Promise<unknown> =>
    runScript(client, which, [`${prefix}${id}`], args);
  return {
    async claim(id, claimMs) {
      const reply = String(await run(CLAIM, id, [String(Math.ceil(claimMs))]));
      return reply === 'claimed' || reply === 'handled' ? reply : 'pending';
    },
    async complete(id, ttlMs) {
      await run(COMPLETE, id, [String(Math.ceil(ttlMs))]);
    },
    async release(id) {
      await run(RELEASE, id, []);
    },
  };
}

// EVALSHA, then EVAL when the server has lost its script cache (a restart, SCRIPT FLUSH).
async function runScript(
  client: RedisScriptClient,
  which: Script,
  keys: string[],
  args: ScriptArgument[],
): Promise<unknown> {
  try {
    return await client.evalSha(which.sha1, keys, args);
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
    return client.eval(which.text, keys, args);
  }
}
