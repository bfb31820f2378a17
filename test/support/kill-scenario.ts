/**
 * The scenarios of the kill tests (test/webhooks/kill*.test.ts): webhook service instances, real
 * processes, killed with SIGKILL while attempts are in the receiver's hands, more wait in the
 * queue (some for a retry) and publishes are under way, one of them stalled after its record;
 * started again on the same data, or left dead while another finishes; and finally let run. The
 * ledger (delivery-ledger.ts) then tells what was lost, duplicated or wrongly sent.
 *
 * Nothing sleeps: each step waits for a condition (attempts held, copies received), with a
 * deadline after which the test says what it waited for.
 */

import { DeliveryLedger, REFUSING_ENDPOINT } from './delivery-ledger.js';
import { eventually } from './eventually.js';
import { type HoldingReceiver, startHoldingReceiver } from './holding-receiver.js';
import type { InstanceProcess } from './instance-process.js';

/** What a scenario runs on. */
export interface KillSetup {
  /** Start the instance called `name`, or start it again on the same data. */
  readonly start: (name: string) => Promise<InstanceProcess>;
  /** The instances that run at once (one where a single process may open the data). */
  readonly names: readonly string[];
  /** The attempts one instance makes at a time. @defaultValue 8, either queue's default */
  readonly concurrency?: number;
  /** From {@link startKillReceiver}. */
  readonly receiver: HoldingReceiver;
}

/** What a scenario leaves: the ledger to check, and the figures for the report. */
export interface KillOutcome {
  readonly ledger: DeliveryLedger;
  /** Its time, the ledger's figures and what the instances' onError was told. */
  readonly report: string;
}

/** A scenario's bound: starts, kills and restarts take seconds each, the last deliveries up to 45 s. */
export const KILL_TEST_TIMEOUT_MS = 120_000;

/** What the instances may take, after the last kill, to deliver everything due. */
const SETTLE_MS = 45_000;
/** The Retry-After of the refusing endpoint, in seconds: longer than a restart takes. */
const RETRY_AFTER_S = 8;

/** The receiver of the scenarios: refusals carry `Retry-After: 8`. */
export function startKillReceiver(): Promise<HoldingReceiver> {
  return startHoldingReceiver({ retryAfterSeconds: RETRY_AFTER_S });
}

/** Poll `check` until it holds; fails after the guard (see `eventually`), saying what was awaited. */
const until = (what: string, check: () => boolean | Promise<boolean>): Promise<boolean> =>
  eventually(what, check, 10);

/** The `x-sender` of an instance's deliveries (see webhook-instance.ts). */
const senderOf = (instance: InstanceProcess) => `${instance.name}/${instance.child.pid}`;

const isRunning = (instance: InstanceProcess) =>
  instance.child.exitCode === null && instance.child.signalCode === null;

/** A scenario under way: the instances, and the ledger. */
class KillRun {
  readonly ledger: DeliveryLedger;
  readonly #setup: KillSetup;
  /** The latest process of each name, running or killed. */
  readonly #instances: InstanceProcess[];
  /** When it began (performance.now()), before the first start. */
  readonly #began: number;
  #turn = 0;

  private constructor(setup: KillSetup, instances: InstanceProcess[], began: number) {
    this.#setup = setup;
    this.#instances = instances;
    this.#began = began;
    this.ledger = new DeliveryLedger(setup.receiver);
  }

  /** Start every instance, and make the subscriptions on the first; all hold them before any publish. */
  static async begin(setup: KillSetup): Promise<KillRun> {
    const began = performance.now();
    const instances = await Promise.all(setup.names.map((n) => setup.start(n)));
    const run = new KillRun(setup, instances, began);
    const [first, ...others] = instances as [InstanceProcess, ...InstanceProcess[]];
    await run.ledger.subscribe(first);
    const { revision } = await first.stats();
    await until('every instance holding the subscriptions', async () => {
      const stats = await Promise.all(others.map((o) => o.stats()));
      return stats.every((s) => s.revision === revision);
    });
    return run;
  }

  get #running(): InstanceProcess[] {
    return this.#instances.filter(isRunning);
  }

  /** Whether attempts are held by the receiver and more deliveries due wait behind them. */
  get queued(): boolean {
    const { held } = this.#setup.receiver;
    return held > 0 && this.ledger.missing().length > held;
  }

  /** Publish `count` messages, one after another, taking the running instances in turn. */
  async publish(count: number): Promise<void> {
    for (let n = 0; n < count; n++) {
      const running = this.#running;
      await this.ledger.publish(running[this.#turn++ % running.length] as InstanceProcess, 1);
    }
  }

  /**
   * Publish a message on instance `index` whose enqueue hangs once it is on record: its publish is
   * never answered, yet the message must reach every subscription it matches.
   */
  async publishStalled(index: number): Promise<void> {
    const on = this.#instances[index] as InstanceProcess;
    const { seq } = this.ledger.publishStalled(on);
    await until(`message ${seq} on record at ${on.name}, its enqueue stalled`, async () => {
      const stalled: Array<{ id: string; data: { seq?: unknown } }> = (
        await on.call('GET', '/test/stalled')
      ).body;
      const found = stalled.find((message) => message.data?.seq === seq);
      if (found !== undefined) this.ledger.recorded(seq, found.id);
      return found !== undefined;
    });
  }

  /**
   * The receiver holds every answer; `count` messages are published; wait until every running
   * instance has at least as many attempts in the receiver's hands as one account may hold at once
   * (its share of the workers, a quarter of them): the rest wait.
   */
  async heldAndQueued(count: number): Promise<void> {
    const { receiver, concurrency = 8 } = this.#setup;
    const share = Math.max(1, Math.floor(concurrency / 4));
    receiver.hold();
    await this.publish(count);
    const senders = this.#running.map(senderOf);
    await until(`${share} attempts of each of ${senders.join(', ')} held`, () =>
      senders.every((sender) => receiver.heldFrom(sender) >= share),
    );
  }

  /**
   * Kill instance `index` (SIGKILL) while `count` publishes to it are under way: once one is
   * answered and `ready` holds.
   */
  async killCuttingOffPublishes(
    index: number,
    label: string,
    { count = 5, ready = () => true }: { count?: number; ready?: () => boolean } = {},
  ): Promise<void> {
    const victim = this.#instances[index] as InstanceProcess;
    const publishing = this.ledger.publishAtOnce(victim, count);
    await publishing.first;
    await until(`${label}: ready for the kill`, ready);
    await this.kill(index, label);
    await publishing.settled;
  }

  /**
   * Kill instance `index` with SIGKILL, noting where things stood; with `queued`, only with
   * attempts of its held by the receiver and more deliveries waiting (else the kill would prove
   * less than it says). Resolves once the receiver has seen its held requests' connections close.
   */
  async kill(index: number, label: string, queued = false): Promise<void> {
    const victim = this.#instances[index] as InstanceProcess;
    const sender = senderOf(victim);
    const point = this.ledger.noteKill(`${label} (${victim.name})`, sender);
    if (queued && (point.heldFromKilled === 0 || !this.queued)) {
      throw new Error(`${label}: ${point.heldFromKilled} attempts held, ${point.outstanding} due`);
    }
    const code = await victim.stop('SIGKILL');
    if (code !== null) throw new Error(`${victim.name} exited with ${code} before the kill`);
    // Released later, a held request of the dead process must not count as answered.
    await until(`the connections of ${sender} closed at the receiver`, () => {
      return this.#setup.receiver.heldFrom(sender) === 0;
    });
  }

  /** The receiver answers again, and instance `index` starts again on the same data. */
  async restart(index: number): Promise<void> {
    this.#setup.receiver.release();
    const name = this.#setup.names[index] as string;
    this.#instances[index] = await this.#setup.start(name);
    this.ledger.noteRestart();
  }

  /**
   * Let the running instances work until every delivery due is accepted by the receiver and on
   * record as delivered in the service's log, or the deadline has passed (then the ledger's
   * problems say what is missing).
   */
  async settle(): Promise<KillOutcome> {
    this.#setup.receiver.release();
    const deadline = Date.now() + SETTLE_MS;
    const reader = this.#running[0] as InstanceProcess;
    while (Date.now() < deadline) {
      // The log is read over HTTP: only once the receiver has everything.
      if (this.ledger.missing().length === 0 && (await this.ledger.readLog(reader)).length === 0) {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await this.ledger.readLog(reader);
    const told = (await Promise.all(this.#running.map((i) => i.errors()))).flat();
    const seconds = ((performance.now() - this.#began) / 1000).toFixed(1);
    const report = `${seconds} s; ${this.ledger.summary()}; onError: ${JSON.stringify(told)}`;
    return { ledger: this.ledger, report };
  }
}

/** The first kill of each scenario. */
const HELD = 'attempts held, more queued, publishes under way, one stalled after its record';

/**
 * Killed once: with attempts in the receiver's hands, more queued, publishes under way, and one
 * publish stalled between its record and its enqueue; started again on the same data.
 */
export async function killedOnce(setup: KillSetup): Promise<KillOutcome> {
  const run = await KillRun.begin(setup);
  await run.heldAndQueued(40);
  await run.publishStalled(0);
  await run.killCuttingOffPublishes(0, HELD, { ready: () => run.queued });
  await run.restart(0);
  return run.settle();
}

/**
 * Killed three times, at three points, taking the instances in turn (the others keep running):
 * as in {@link killedOnce}; then while the redeliveries after the restart are in the receiver's
 * hands, among new messages; then while the receiver answers at once, so that attempts end and
 * are written as the kill comes, and while publishes are under way and a delivery its endpoint
 * refused (503, Retry-After: 8) waits in the queue for its retry.
 */
export async function killedSeveralTimes(setup: KillSetup): Promise<KillOutcome> {
  const run = await KillRun.begin(setup);
  const victim = (kill: number) => kill % setup.names.length;
  const { receiver } = setup;

  await run.heldAndQueued(30);
  await run.publishStalled(victim(0));
  await run.killCuttingOffPublishes(victim(0), HELD, { ready: () => run.queued });
  await run.restart(victim(0));

  await run.heldAndQueued(24);
  await run.kill(victim(1), 'redeliveries and new attempts held, more queued', true);
  await run.restart(victim(1));

  const before = receiver.received.length;
  receiver.refuse([REFUSING_ENDPOINT]);
  await run.killCuttingOffPublishes(victim(2), 'answers flowing, a retry awaited', {
    count: 20,
    ready: () => receiver.received.length >= before + 5 && receiver.retriesAwaited.size > 0,
  });
  receiver.refuse([]);
  await run.restart(victim(2));
  return run.settle();
}

/**
 * Two instances or more; the first killed as in {@link killedOnce} and never started again: the
 * others finish its work, the deliveries of its publishes cut off after their record included
 * (those wait for their lease: the instances need a short `redeliveryLeaseMs` and
 * `redeliveryIntervalMs`).
 */
export async function killedAndLeftDead(setup: KillSetup): Promise<KillOutcome> {
  if (setup.names.length < 2) throw new Error('another instance must finish the work');
  const run = await KillRun.begin(setup);
  await run.heldAndQueued(30);
  await run.publishStalled(0);
  await run.killCuttingOffPublishes(0, HELD, { ready: () => run.queued });
  return run.settle();
}
