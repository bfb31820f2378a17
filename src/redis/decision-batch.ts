/** Several decisions of one plan shape in one script call (see docs/redis-store.md). @module */

import type { Policy } from '../limits/policy.js';
import type { Plan, StoreOutcome } from '../limits/store.js';
import { decideScript } from './decide-script.js';
import type { Decider } from './plan-shapes.js';
import type { ScriptArgument } from './redis-client.js';
import {
  describeLeases,
  type PendingRelease,
  type ReleaseQueue,
  ridersDone,
} from './riding-releases.js';
import { isCrossSlot, type ScriptRunner, script } from './script-runner.js';

/** One decision: what its script call needs, and what its outcome is read with. */
export interface DecisionRequest {
  readonly plan: Plan;
  readonly now: number;
  /** Its own (a decision that goes alone adds the keys of its riders). */
  readonly keys: string[];
  /** Its own, as `keys`. */
  readonly args: ScriptArgument[];
  /** The active policies, in plan order, and the resource of each. */
  readonly policies: readonly Policy[];
  readonly resources: readonly string[];
  /** Its lease id; 0 for a plan without a throttle. */
  readonly id: number;
  /** Leases given back before the decision was asked for: given back before it. */
  readonly riders: PendingRelease[] | undefined;
}

/** How a decision of a batch is answered. */
export type Settle = (outcome: StoreOutcome | Promise<StoreOutcome>) => void;

/** What a batch needs of its store. */
export interface DecisionSteps {
  /** One decision in a script call of its own. */
  alone(decider: Decider, request: DecisionRequest): Promise<StoreOutcome>;
  /** A decision's outcome from its reply; throws the outage when the reply cannot be read. */
  outcome(reply: unknown, request: DecisionRequest, decider: Decider): StoreOutcome;
  /** Give back the lease a decision took after its timeout. */
  late(reply: unknown, request: DecisionRequest, decider: Decider): void;
  /** Report a failed decision and throw it. */
  failed(error: unknown): never;
  /** Ask a decision again (alone, now that keys of two clients may not meet). */
  again(request: DecisionRequest): Promise<StoreOutcome>;
}

/** The decisions of one shape waiting to go in one script call, and how to answer each. */
interface Batch {
  readonly decider: Decider;
  readonly requests: DecisionRequest[];
  readonly settles: Settle[];
}

/** The open batch and what is in Redis. */
export class DecisionBatcher {
  readonly #maxBatch: number;
  readonly #runner: ScriptRunner;
  readonly #releases: ReleaseQueue;
  readonly #steps: DecisionSteps;
  /** Decisions waiting to go together, until the end of the turn. */
  #open: Batch | undefined;
  /** Decisions sent and not answered yet. */
  #inFlight = 0;

  constructor(
    maxBatch: number,
    runner: ScriptRunner,
    releases: ReleaseQueue,
    steps: DecisionSteps,
  ) {
    this.#maxBatch = maxBatch;
    this.#runner = runner;
    this.#releases = releases;
    this.#steps = steps;
  }

  /** Add a decision to the open batch of its shape; another shape sends it first, keeping order. */
  add(decider: Decider, request: DecisionRequest, settle: Settle): void {
    let open = this.#open;
    if (open !== undefined && open.decider !== decider) {
      this.#sendOpen();
      open = undefined;
    }
    const opened = open === undefined;
    if (open === undefined) {
      open = { decider, requests: [], settles: [] };
      this.#open = open;
    }
    open.requests.push(request);
    open.settles.push(settle);
    const full = Math.min(this.#maxBatch, Math.max(1, this.#inFlight));
    if (open.requests.length >= full) this.#sendOpen();
    else if (opened) process.nextTick(this.#sendOpen);
  }

  /** Send the open batch now: a command that must follow its decisions goes after it. */
  sendOpen(): void {
    this.#sendOpen();
  }

  readonly #sendOpen = (): void => {
    const open = this.#open;
    if (open === undefined) return;
    this.#open = undefined;
    if (open.requests.length > 1) {
      void this.#send(open);
      return;
    }
    // One decision: the script of one, which costs Redis less; counted in Redis all the same.
    this.#inFlight++;
    const outcome = this.#steps.alone(open.decider, open.requests[0]!);
    // Counted off before the caller goes on: this reaction comes before the caller's.
    const answered = () => {
      this.#inFlight--;
    };
    outcome.then(answered, answered);
    open.settles[0]!(outcome);
  };

  /** One script call for the decisions of a batch; each is settled with its own outcome. */
  async #send({ decider, requests, settles }: Batch): Promise<void> {
    const steps = this.#steps;
    const late =
      decider.throttles.length === 0
        ? undefined
        : (value: unknown) => {
            if (!Array.isArray(value) || value.length !== requests.length) return;
            for (const [i, r] of requests.entries()) steps.late(value[i], r, decider);
          };
    // Counted off first, so the decisions callers ask next see what is still in Redis.
    this.#inFlight += requests.length;
    let replies: unknown;
    try {
      decider.batched ??= script(decideScript({ ...decider.shape, batched: true }));
      const { keys, args } = batchArguments(requests, this.#runner.binaryArguments);
      const call = this.#runner.run(decider.batched, keys, args, late);
      // Worth a write of its own: Redis starts on it while this process prepares the next.
      this.#runner.client.flush?.();
      replies = await call;
    } catch (error) {
      this.#inFlight -= requests.length;
      this.#failed(error, requests, settles);
      return;
    }
    this.#inFlight -= requests.length;
    for (const r of requests) if (r.riders !== undefined) ridersDone(r.riders);
    const fits = Array.isArray(replies) && replies.length === requests.length;
    for (const [i, r] of requests.entries()) {
      const reply = fits ? (replies as unknown[])[i] : replies;
      settles[i]!(settled(() => steps.outcome(reply, r, decider)));
    }
  }

  /** A call that failed: its riders sent apart, its decisions failed or asked again alone. */
  #failed(error: unknown, requests: readonly DecisionRequest[], settles: readonly Settle[]): void {
    const riders = requests.flatMap((r) => r.riders ?? []);
    // Sent again, apart: giving a lease back twice removes nothing else.
    if (riders.length > 0) this.#releases.sendApart(riders);
    if (isCrossSlot(error)) {
      // Keys of two clients may not meet in one command here: from now on every decision and
      // every release goes alone.
      this.#runner.separate = true;
      for (const [i, r] of requests.entries()) settles[i]!(this.#steps.again(r));
      return;
    }
    for (const i of requests.keys()) settles[i]!(settled(() => this.#steps.failed(error)));
  }
}

/** An outcome, or the rejection of what computing it threw (an outage). */
function settled(outcome: () => StoreOutcome): StoreOutcome | Promise<StoreOutcome> {
  try {
    return outcome();
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The KEYS and ARGV of a call of several decisions: how many, then per decision its keys and
 * arguments, how many throttles' records of given-back leases travel before it, and their keys and
 * records.
 */
function batchArguments(
  requests: readonly DecisionRequest[],
  binary: boolean,
): { keys: string[]; args: ScriptArgument[] } {
  const keys: string[] = [];
  const args: ScriptArgument[] = [String(requests.length)];
  for (const r of requests) {
    keys.push(...r.keys);
    args.push(...r.args);
    if (r.riders === undefined) {
      args.push('0');
      continue;
    }
    const count = args.push('') - 1;
    const before = keys.length;
    describeLeases(
      r.riders.map((p) => p.lease),
      keys,
      args,
      binary,
    );
    args[count] = String(keys.length - before);
  }
  return { keys, args };
}
