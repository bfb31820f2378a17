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

/** The Redis commands the markers need: an ioredis client, as BullMQ holds one. */
export interface MarkerClient {
  eval(script: string, numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>;
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
 * Taking: answer, per key, 1 when `owner` holds the marker (taking it over from `parent`, the job
 * a moved delivery left, whose hand-over had not landed), 0 when no job or another one does.
 */
const HOLDS = `local held = {}
for i, key in ipairs(KEYS) do
  local value = redis.call('GET', key)
  if value == ARGV[1] then
    held[i] = 1
  elseif ARGV[2] ~= '' and value == ARGV[2] then
    redis.call('SET', key, ARGV[1])
    held[i] = 1
  else
    held[i] = 0
  end
end
return held`;

/** Set each marker `from` holds to `to`; the others are left as they are. */
const REPLACE = `for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('SET', key, ARGV[2]) end
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
  readonly #base: string;

  /**
   * @param client - the queue's Redis client, once connected
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
    return this.#answer(CLAIM, keys, owner);
  }

  /**
   * Whether `owner` holds each marker (taking a job): with `parent`, a marker `parent` still
   * holds is taken over (`owner` is the job its delivery moved to). A marker no job holds is not
   * `owner`'s: its delivery finished, or was never `owner`'s to attempt.
   */
  async holds(keys: readonly string[], owner: string, parent = ''): Promise<boolean[]> {
    return this.#answer(HOLDS, keys, owner, parent);
  }

  async #answer(script: string, keys: readonly string[], ...args: string[]): Promise<boolean[]> {
    if (keys.length === 0) return [];
    const answer = await (await this.#client()).eval(script, keys.length, ...keys, ...args);
    return keys.map((_, i) => (answer as unknown[])[i] === 1);
  }

  /** Hand the markers `from` holds to `to`. */
  async replace(keys: readonly string[], from: string, to: string): Promise<void> {
    if (keys.length === 0) return;
    await (await this.#client()).eval(REPLACE, keys.length, ...keys, from, to);
  }

  /** Delete the markers whose value is `value`. */
  async release(keys: readonly string[], value: string): Promise<void> {
    if (keys.length === 0) return;
    await (await this.#client()).eval(RELEASE, keys.length, ...keys, value);
  }

  /** The job holding each marker (`null`: none, or the delivery ended). */
  async holders(keys: readonly string[]): Promise<(string | null)[]> {
    if (keys.length === 0) return [];
    return (await this.#client()).mget(...keys);
  }
}
