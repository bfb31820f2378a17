/**
 * The narrow client the Redis store needs, and adapters for ioredis and node-redis, typed by the
 * methods they call so that neither library is imported.
 * @module
 */
import { RedisNotReadyError } from '../errors/redis-not-ready-error.js';
import { checkValue, type Rule, withMethods, worded } from '../internal/options.js';

/** One argument of a script: text, or bytes with {@link RedisScriptClient.binaryArguments}. */
export type ScriptArgument = string | Buffer;

/** What the Redis store needs of a client: run a cached script by its SHA-1, or by its text. */
export interface RedisScriptClient {
  /** `EVALSHA sha1 numkeys key... arg...`, resolving to the script's reply. */
  evalSha(sha1: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown>;
  /** `EVAL script numkeys key... arg...` (also caches the script on the server). */
  eval(script: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown>;
  /**
   * Whether commands go to a Redis Cluster (keys of one command share a slot); only `false` lets
   * the store send several clients' leases in one command.
   * @defaultValue treated as `true`
   */
  readonly cluster?: boolean;
  /**
   * True when bulk strings come back as bytes: the decision script then replies in binary, which
   * costs Redis and the client less than text.
   * @defaultValue false
   */
  readonly binaryReplies?: boolean;
  /**
   * True when a `Buffer` argument is sent as its bytes: leases then travel packed, as Redis keeps
   * them, sparing about an eighth of a decision with a throttle.
   * @defaultValue false
   */
  readonly binaryArguments?: boolean;
  /**
   * Write the commands held back at once; called after a command carrying several decisions, so
   * Redis starts on it while the client prepares the next.
   */
  flush?(): void;
}

/** The methods of an ioredis `Redis` or `Cluster` the adapter calls. */
export interface IoredisLike {
  /** ioredis `evalsha`. */
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: ScriptArgument[]): Promise<unknown>;
  /** ioredis `eval`. */
  eval(script: string, numKeys: number, ...keysAndArgs: ScriptArgument[]): Promise<unknown>;
  /** ioredis `evalshaBuffer`: `evalsha` with bulk strings as Buffers. */
  evalshaBuffer?(sha1: string, numKeys: number, ...keysAndArgs: ScriptArgument[]): Promise<unknown>;
  /** ioredis `evalBuffer`: `eval` with bulk strings as Buffers. */
  evalBuffer?(script: string, numKeys: number, ...keysAndArgs: ScriptArgument[]): Promise<unknown>;
  /** ioredis connection status; commands are sent only when it is `ready`. */
  readonly status?: string;
  /** True for an ioredis `Cluster`, false for a `Redis`. */
  readonly isCluster?: boolean;
  /** The connection of an ioredis `Redis` (not a `Cluster`); its writes are batched per turn. */
  readonly stream?: Corkable;
}

/** A writable stream that can hold its writes and send them as one (`net.Socket`, `tls.TLSSocket`). */
export interface Corkable {
  /** Hold the writes that follow. */
  cork(): void;
  /** Send the held writes. */
  uncork(): void;
}

/** The options node-redis takes for `evalSha` and `eval`. */
export interface NodeRedisScriptOptions {
  /** The keys the script touches. */
  keys: string[];
  /** The script's arguments. */
  arguments: ScriptArgument[];
}

/** The methods of a node-redis client or cluster the adapter calls. */
export interface NodeRedisLike {
  /** node-redis `evalSha`. */
  evalSha(sha1: string, options: NodeRedisScriptOptions): Promise<unknown>;
  /** node-redis `eval`. */
  eval(script: string, options: NodeRedisScriptOptions): Promise<unknown>;
  /** node-redis readiness; commands are sent only when it is true. */
  readonly isReady?: boolean;
  /** Present on a node-redis cluster (`createCluster()`) only. */
  readonly getSlotMaster?: unknown;
  /** node-redis 5: the same client with other reply types (bulk strings as Buffers). */
  withTypeMapping?(mapping: Record<number, unknown>): Pick<NodeRedisLike, 'evalSha' | 'eval'>;
}

function clientRule<T extends object>(methods: readonly string[], what: string): Rule<T> {
  const rule = withMethods<T>(methods, what);
  return worded(rule, rule.expected, 'invalid_redis_client');
}

const IOREDIS = clientRule<IoredisLike>(['evalsha', 'eval'], 'an ioredis Redis or Cluster');
const NODE_REDIS = clientRule<NodeRedisLike>(['evalSha', 'eval'], 'a node-redis client or cluster');

/** The RESP type of a bulk string, as node-redis numbers it (`RESP_TYPES.BLOB_STRING`). */
const RESP_BLOB_STRING = 36;

/**
 * Adapt an ioredis client (`Redis` or `Cluster`); while it is not `ready` commands fail at once.
 * Create it with `enableOfflineQueue: false` and `autoResendUnfulfilledCommands: false`, so that
 * no decision is replayed after a reconnect.
 * @param client - an ioredis client
 * @returns the narrow client the store takes
 * @example
 * ```ts
 * const redis = new Redis({ enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
 * const store = new RedisStore({ client: ioredisClient(redis) });
 * ```
 */
export function ioredisClient(client: IoredisLike): RedisScriptClient {
  checkValue(IOREDIS, client, 'ioredisClient client');
  const { batch, flush } = writeBatcher(client);
  // Bulk strings as Buffers where the client offers it (every ioredis since 4).
  const binary =
    typeof client.evalshaBuffer === 'function' && typeof client.evalBuffer === 'function';
  const evalsha = binary ? client.evalshaBuffer!.bind(client) : client.evalsha.bind(client);
  const evaluate = binary ? client.evalBuffer!.bind(client) : client.eval.bind(client);
  // Not async functions: one more promise around ioredis's costs a decision three microtask turns.
  const unready = (): Promise<never> | undefined => {
    const status = client.status;
    return status !== undefined && status !== 'ready' ? notReady(status) : undefined;
  };
  return {
    evalSha: (sha1, keys, args) =>
      unready() ?? batch(() => evalsha(sha1, keys.length, ...keys, ...args)),
    eval: (script, keys, args) =>
      unready() ?? batch(() => evaluate(script, keys.length, ...keys, ...args)),
    cluster: client.isCluster !== false,
    binaryReplies: binary,
    binaryArguments: true,
    flush,
  };
}

const WRITE_BATCH = 16;

/** Join one turn's commands into few socket writes: a system call costs more than the client. */
function writeBatcher(client: IoredisLike): {
  batch: <T>(send: () => T) => T;
  flush: () => void;
} {
  let held: Corkable | undefined;
  let count = 0;
  const flush = (): void => {
    const stream = held;
    held = undefined;
    count = 0;
    stream?.uncork();
  };
  const batch = <T>(send: () => T): T => {
    const stream = client.stream;
    if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return send();
    if (held !== stream) {
      flush();
      held = stream;
      stream.cork();
      process.nextTick(flush);
    }
    try {
      return send();
    } finally {
      if (++count >= WRITE_BATCH) flush();
    }
  };
  return { batch, flush };
}

/**
 * Adapt a node-redis client (`createClient()` or `createCluster()`); while it is not ready
 * commands fail at once. Create it with `disableOfflineQueue: true`.
 * @param client - a connected node-redis client
 * @returns the narrow client the store takes
 * @example
 * ```ts
 * const redis = await createClient({ url, disableOfflineQueue: true }).connect();
 * const store = new RedisStore({ client: nodeRedisClient(redis) });
 * ```
 */
export function nodeRedisClient(client: NodeRedisLike): RedisScriptClient {
  checkValue(NODE_REDIS, client, 'nodeRedisClient client');
  // Bulk strings as Buffers where the client offers it (node-redis 5).
  const binary = typeof client.withTypeMapping === 'function';
  const commands = binary ? client.withTypeMapping!({ [RESP_BLOB_STRING]: Buffer }) : client;
  const unready = (): Promise<never> | undefined =>
    client.isReady === false ? notReady('not ready') : undefined;
  const options = (keys: readonly string[], args: readonly ScriptArgument[]) => ({
    keys: keys as string[],
    arguments: args as ScriptArgument[],
  });
  // Not async functions, as in ioredisClient.
  return {
    evalSha: (sha1, keys, args) => unready() ?? commands.evalSha(sha1, options(keys, args)),
    eval: (script, keys, args) => unready() ?? commands.eval(script, options(keys, args)),
    cluster: client.getSlotMaster !== undefined,
    binaryReplies: binary,
    binaryArguments: true,
  };
}

function notReady(state: string): Promise<never> {
  return Promise.reject(new RedisNotReadyError(state));
}
