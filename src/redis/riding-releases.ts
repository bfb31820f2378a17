/** Leases given back, riding on the next decision outside Redis Cluster. @module */
import type { LeaseToken } from '../limits/store.js';
import type { ScriptArgument } from './redis-client.js';
import { releaseScript } from './release-script.js';
import {
  isCrossSlot,
  type Script,
  type ScriptRunner,
  script,
  toStoreError,
} from './script-runner.js';
import { RELEASE_RECORD_SIZE } from './state-codec.js';

/** One throttle that a decision script takes leases of, and what giving one back needs. */
export interface Throttle {
  /** Its scope's place in the decision's KEYS. */
  readonly scope: number;
  /** Its position among the scope's policies, from 1. */
  readonly position: number;
  /** Its lease TTL (ms): a lease expires this long after its decision. */
  readonly ttlMs: number;
  /** How many times the plan names it (one entry each). */
  readonly copies: number;
}

/** The leases of one admitted request: the scopes that hold them, their id and their time. */
export interface RedisLease extends LeaseToken {
  /** The decision's KEYS (its scopes' keys first). */
  readonly keys: readonly string[];
  readonly throttles: readonly Throttle[];
  readonly id: number;
  /** The decision's time (ms). */
  readonly t: number;
  /** The first release's promise: a lease is given back once. */
  given: Promise<void> | undefined;
}

/** A lease given back but not yet sent, and what to call once it has been. */
export interface PendingRelease {
  readonly lease: RedisLease;
  readonly done: () => void;
}

/** The most given-back leases that ride on one decision. */
const MAX_RIDERS = 32;
/** The most leases one release script gives back. */
const MAX_PER_SCRIPT = 256;

const RELEASE_TEXT = script(releaseScript(false));
const RELEASE_BINARY = script(releaseScript(true));

/** The leases waiting for a command to ride on, and the release scripts of those that find none. */
export class ReleaseQueue {
  readonly #runner: ScriptRunner;
  readonly #script: Script;
  #pending: PendingRelease[] = [];
  #flushScheduled = false;

  constructor(runner: ScriptRunner) {
    this.#runner = runner;
    this.#script = runner.binaryArguments ? RELEASE_BINARY : RELEASE_TEXT;
  }

  /** Give a lease back; resolves once Redis has answered the command that carried it. */
  add(lease: RedisLease): Promise<void> {
    if (this.#runner.separate) return this.#send([lease]);
    return new Promise((resolve) => {
      this.#pending.push({ lease, done: resolve });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  /** The leases that ride on the next decision, given back before it; undefined for none. */
  riders(): PendingRelease[] | undefined {
    if (this.#pending.length === 0 || this.#runner.separate) return undefined;
    return this.#pending.splice(0, MAX_RIDERS);
  }

  /** Send the leases of `pending` in release scripts of their own, then tell each it is done. */
  sendApart(pending: readonly PendingRelease[]): void {
    const size = this.#runner.separate ? 1 : MAX_PER_SCRIPT;
    for (let i = 0; i < pending.length; i += size) {
      const batch = pending.slice(i, i + size);
      void this.#send(batch.map((p) => p.lease)).then(() => {
        for (const p of batch) p.done();
      });
    }
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const pending = this.#pending;
    this.#pending = [];
    this.sendApart(pending);
  };

  /** One release script for `leases`; a failure is reported, never thrown. */
  async #send(leases: readonly RedisLease[]): Promise<void> {
    const keys: string[] = [];
    const args: ScriptArgument[] = [];
    describeLeases(leases, keys, args, this.#runner.binaryArguments);
    try {
      await this.#runner.run(this.#script, keys, args);
    } catch (error) {
      if (leases.length > 1 && isCrossSlot(error)) {
        this.#runner.separate = true;
        await Promise.all(leases.map((lease) => this.#send([lease])));
        return;
      }
      this.#runner.report(toStoreError('release', error));
    }
  }
}

/** Tell each rider its lease is back. */
export function ridersDone(riders: readonly PendingRelease[]): void {
  for (const r of riders) r.done();
}

/** Append each throttle's scope to `keys` and its release records, packed or as text, to `args`. */
export function describeLeases(
  leases: readonly RedisLease[],
  keys: string[],
  args: ScriptArgument[],
  binary: boolean,
): void {
  for (const lease of leases) {
    for (const throttle of lease.throttles) {
      keys.push(lease.keys[throttle.scope]!);
      const expiry = lease.t + throttle.ttlMs;
      if (!binary) {
        args.push(
          String(throttle.position),
          String(expiry),
          String(lease.id),
          String(throttle.copies),
        );
        continue;
      }
      const records = Buffer.allocUnsafe(RELEASE_RECORD_SIZE * throttle.copies);
      for (let at = 0; at < records.length; at += RELEASE_RECORD_SIZE) {
        records.writeDoubleLE(throttle.position, at);
        records.writeDoubleLE(expiry, at + 8);
        records.writeDoubleLE(lease.id, at + 16);
      }
      args.push(records);
    }
  }
}

/** A lease id as the script takes it from a client that sends bytes: a little-endian double. */
export function packedId(id: number): Buffer {
  const bytes = Buffer.allocUnsafe(8);
  bytes.writeDoubleLE(id, 0);
  return bytes;
}
