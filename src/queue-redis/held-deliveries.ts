/**
 * Which BullMQ job holds each delivery, for a queue that puts several deliveries in one job
 * (`deliveriesPerJob`, docs/delivery.md "Several deliveries in one job"): a marker per delivery
 * in Redis, its value the id of the job that holds it, claimed before the job is added. A job
 * attempts only the deliveries whose marker names it; a delivery leaves a job (finished, or moved
 * to a job of its own for a retry or a deferral) by a compare-and-set on its marker, so that a job
 * taken again after a crash skips what left it, and a job added while another held its delivery
 * never attempts it.
 * @module
 */

import { createHash } from 'node:crypto';

/** The Redis commands the markers need: an ioredis client, as BullMQ holds one. */
export interface MarkerClient {
  eval(script: string, numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>;
  evalsha(sha: string, numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>;
  mget(...keys: string[]): Promise<(string | null)[]>;
}

/**
 * Enqueueing: take each marker that is free for `owner`; answer, per key, 1 when `owner` holds it
 * now, 0 when another job does (or its delivery finished).
 */
const CLAIM = `local held = {}
for i, key in ipairs(KEYS) do
  local value = redis.call('GET', key)
  if value == false then
    redis.call('SET', key, ARGV[1])
    held[i] = 1
  elseif value == ARGV[1] then
    held[i] = 1
  else
    held[i] = 0
  end
end
return held`;

/**
 * Taking: answer, per key, 0 when no job or another one holds the marker, else 1 plus the takings
 * of `owner` in which the delivery waited and started no attempt (the marker `owner#k`). A marker
 * `parent` holds (the job a moved delivery left, whose hand-over had not landed) is taken over.
 */
const HOLDS = `local held = {}
local mine = ARGV[1] .. '#'
local parent = ARGV[2] .. '#'
for i, key in ipairs(KEYS) do
  local value = redis.call('GET', key)
  if value == ARGV[1] then
    held[i] = 1
  elseif value and string.sub(value, 1, #mine) == mine then
    held[i] = 1 + (tonumber(string.sub(value, #mine + 1)) or 0)
  elseif value and ARGV[2] ~= '' and (value == ARGV[2] or string.sub(value, 1, #parent) == parent) then
    redis.call('SET', key, ARGV[1])
    held[i] = 1
  else
    held[i] = 0
  end
end
return held`;

/**
 * Edit each marker that its owner holds (`owner`, or `owner#k`), in order, by three arguments a
 * key: `owner`, then `to` and the value to set, or `waited` and one more (1) or one fewer (-1,
 * never below none) taking of `owner` in which the delivery waited without an attempt (`owner#k`
 * becomes `owner#(k + delta)`). Markers another job holds are left as they are.
 */
const EDIT = `for i, key in ipairs(KEYS) do
  local owner = ARGV[3 * i - 2]
  local arg = ARGV[3 * i]
  local mine = owner .. '#'
  local value = redis.call('GET', key)
  local waited = nil
  if value == owner then
    waited = 0
  elseif value and string.sub(value, 1, #mine) == mine then
    waited = tonumber(string.sub(value, #mine + 1)) or 0
  end
  if waited ~= nil then
    if ARGV[3 * i - 1] == 'to' then
      redis.call('SET', key, arg)
    else
      local next = waited + tonumber(arg)
      if next <= 0 then
        redis.call('SET', key, owner)
      else
        redis.call('SET', key, mine .. next)
      end
    end
  end
end
return 0`;

/** Delete each marker whose value is `ARGV[1]`. */
const RELEASE = `for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key) end
end
return 0`;

/** The value of a marker whose delivery `owner` finished: kept until `owner` completes. */
export function finishedBy(owner: string): string {
  return `${FINISHED}${owner}`;
}

const FINISHED = 'done>';

/** Whether a marker's value says its delivery finished (rather than naming the job holding it). */
export function isFinished(holder: string): boolean {
  return holder.startsWith(FINISHED);
}

/**
 * The id of the job a marker's value names: the value is the id, or `id#k` where the delivery
 * waited without an attempt in `k` of the job's takings (`#` is percent-encoded in every
 * delivery's id, so it never ends one).
 */
export function holdingJob(value: string): string {
  const at = value.indexOf('#');
  return at === -1 ? value : value.slice(0, at);
}

/** The id of the job a delivery moves to from the bundle `owner`: one per bundle and delivery. */
export function movedFrom(owner: string, deliveryKey: string): string {
  return `${owner}>${deliveryKey}`;
}

/** The bundle a moved job left (see {@link movedFrom}), or `''`. */
export function parentOf(jobId: string): string {
  const at = jobId.indexOf('>');
  return at === -1 ? '' : jobId.slice(0, at);
}

/**
 * The markers of one queue, under `${prefix}:${name}:held:`. Every call sends one command (a
 * script over all its keys), and rejects as the client does.
 * @internal
 */
export class HeldDeliveries {
  readonly #client: () => Promise<MarkerClient>;
  #connected: MarkerClient | undefined;
  readonly #base: string;
  // Edits asked for in this turn: key, owner, kind and argument, four entries each.
  #edits: string[] = [];
  #waiting: { resolve: () => void; reject: (error: unknown) => void }[] = [];

  /**
   * @param client - the queue's Redis client, once connected (asked for once)
   * @param base - the key prefix of the queue (`${prefix}:${name}`)
   */
  constructor(client: () => Promise<MarkerClient>, base: string) {
    this.#client = client;
    this.#base = `${base}:held:`;
  }

  /** The marker key of the delivery whose job id (of its own) is `deliveryKey`. */
  key(deliveryKey: string): string {
    return this.#base + deliveryKey;
  }

  /** Hold each free marker for `owner` (enqueueing): `true` per key where `owner` holds it now. */
  async claim(keys: readonly string[], owner: string): Promise<boolean[]> {
    return (await this.#answer(CLAIM, keys, owner)).map((n) => n === 1);
  }

  /** Resolves once the client is connected (at once after the first time). */
  async connect(): Promise<void> {
    await this.#ready();
  }

  /** The client, asked of the queue once. */
  async #ready(): Promise<MarkerClient> {
    this.#connected ??= await this.#client();
    return this.#connected;
  }

  /**
   * {@link claim}, its command written before this call returns (after {@link connect}), so that
   * a command sent after it on the same connection runs after it; its text sent in full, so that
   * Redis never answers `NOSCRIPT` and runs it later.
   */
  claimFirst(keys: readonly string[], owner: string): Promise<boolean[]> {
    const client = this.#connected;
    if (client === undefined) return Promise.reject(new Error('the markers are not connected'));
    return client
      .eval(CLAIM, keys.length, ...keys, owner)
      .then((answer) => numbers(keys, answer).map((n) => n === 1));
  }

  /**
   * Whether `owner` holds each marker (taking a job): per key, `undefined` when it does not (its
   * delivery finished, moved, or was never `owner`'s to attempt), else the takings in which the
   * delivery waited without an attempt. With `parent`, a marker `parent` still holds is taken
   * over (`owner` is the job its delivery moved to).
   */
  async holds(
    keys: readonly string[],
    owner: string,
    parent = '',
  ): Promise<(number | undefined)[]> {
    const answer = await this.#answer(HOLDS, keys, owner, parent);
    return answer.map((n) => (n >= 1 ? n - 1 : undefined));
  }

  async #answer(script: string, keys: readonly string[], ...args: string[]): Promise<number[]> {
    return numbers(keys, await this.#run(script, keys, ...args));
  }

  /** Count one more (`1`) or one fewer (`-1`) taking of `owner` each delivery waited through. */
  waited(keys: readonly string[], owner: string, delta: 1 | -1): Promise<void> {
    return this.#edit(keys, owner, 'waited', String(delta));
  }

  /** Hand the markers `from` holds to `to`. */
  replace(keys: readonly string[], from: string, to: string): Promise<void> {
    return this.#edit(keys, from, 'to', to);
  }

  /**
   * Edits asked for in one turn of the event loop go in one command, in the order asked: each
   * caller settles with it.
   */
  #edit(keys: readonly string[], owner: string, kind: 'to' | 'waited', arg: string): Promise<void> {
    if (keys.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (this.#edits.length === 0) setImmediate(() => this.#flush());
      for (const key of keys) this.#edits.push(key, owner, kind, arg);
      this.#waiting.push({ resolve, reject });
    });
  }

  #flush(): void {
    const edits = this.#edits;
    const waiting = this.#waiting;
    this.#edits = [];
    this.#waiting = [];
    const keys = edits.filter((_, i) => i % 4 === 0);
    const args = edits.filter((_, i) => i % 4 !== 0);
    this.#run(EDIT, keys, ...args).then(
      () => {
        for (const w of waiting) w.resolve();
      },
      (error: unknown) => {
        for (const w of waiting) w.reject(error);
      },
    );
  }

  /** Delete the markers whose value is `value`. */
  async release(keys: readonly string[], value: string): Promise<void> {
    await this.#run(RELEASE, keys, value);
  }

  /** Run a script by its digest, sending its text only where Redis does not hold it yet; no keys, no call. */
  async #run(script: string, keys: readonly string[], ...args: string[]): Promise<unknown> {
    if (keys.length === 0) return [];
    const client = await this.#ready();
    try {
      return await client.evalsha(digest(script), keys.length, ...keys, ...args);
    } catch (error) {
      if (!String((error as Error | undefined)?.message).startsWith('NOSCRIPT')) throw error;
      return client.eval(script, keys.length, ...keys, ...args);
    }
  }

  /** The job holding each marker (`null`: none, or the delivery ended). */
  async holders(keys: readonly string[]): Promise<(string | null)[]> {
    if (keys.length === 0) return [];
    return (await this.#ready()).mget(...keys);
  }
}

/** A script's answer, one number per key (0 where it gave none). */
function numbers(keys: readonly string[], answer: unknown): number[] {
  return keys.map((_, i) => Number((answer as unknown[] | undefined)?.[i] ?? 0));
}

const digests = new Map<string, string>();

/** A script's SHA-1, as Redis names it. */
function digest(script: string): string {
  let sha = digests.get(script);
  if (sha === undefined) {
    sha = createHash('sha1').update(script).digest('hex');
    digests.set(script, sha);
  }
  return sha;
}

/** The queue's Redis client: BullMQ 6 holds it on its backend, BullMQ 5 on the queue. */
export function redisClientOf(queue: unknown): Promise<MarkerClient> {
  // Each BullMQ major types only its own way to the client, so neither is in the other's type.
  const q = queue as unknown as {
    getBackend?: () => { client: Promise<MarkerClient> };
    client?: Promise<MarkerClient>;
  };
  const client = typeof q.getBackend === 'function' ? q.getBackend().client : q.client;
  if (client === undefined) {
    return Promise.reject(new Error('this bullmq gives no Redis client of its queue'));
  }
  return client;
}
