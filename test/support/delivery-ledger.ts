/**
 * What a kill test (test/webhooks/kill*.test.ts) made and published, and what must therefore
 * arrive: the subscriptions (with the secrets shown at create), every message published, answered
 * or cut off by a kill, a model of which subscriptions an event matches, and the checks of what
 * the receiver got against them.
 *
 * Every message carries its sequence number in its data, so that a copy is tied to what the test
 * published whatever `webhook-id` it carries, and a message whose publish the kill cut off is
 * still recognised if it was recorded.
 */

import type { PublishEvent } from '../../src/index.js';
import { verifyWebhook } from '../../src/index.js';
import type { HoldingReceiver } from './holding-receiver.js';
import type { InstanceProcess } from './instance-process.js';
import type { ReceivedDelivery } from './webhook-receiver.js';

/** A subscription the test makes: on an account, with event patterns and maybe properties. */
interface SubscriptionPlan {
  readonly name: string;
  readonly account: string;
  readonly events: readonly string[];
  readonly propertyIds?: readonly string[];
}

/**
 * Several accounts, each filter alone and together; the last two never match an event published
 * (no event of P3, none of account K3): nothing may reach them.
 */
const PLANS: readonly SubscriptionPlan[] = [
  { name: 'k1-reservations', account: 'K1', events: ['reservation/*'] },
  {
    name: 'k1-folios-p1',
    account: 'K1',
    events: ['folio/created', 'folio/charges-changed'],
    propertyIds: ['P1'],
  },
  { name: 'k1-all-p2', account: 'K1', events: ['reservation/*', 'folio/*'], propertyIds: ['P2'] },
  { name: 'k2-created', account: 'K2', events: ['reservation/created', 'folio/created'] },
  {
    name: 'k2-changes-p1-p2',
    account: 'K2',
    events: ['reservation/changed', 'folio/charges-changed'],
    propertyIds: ['P1', 'P2'],
  },
  { name: 'k2-folios-p3', account: 'K2', events: ['folio/*'], propertyIds: ['P3'] },
  { name: 'k3-all', account: 'K3', events: ['reservation/*', 'folio/*'] },
];

/** The endpoint a scenario makes refuse deliveries once (503, Retry-After). */
export const REFUSING_ENDPOINT = '/k2-created';

const ACCOUNTS = ['K1', 'K2'];
const KINDS = [
  'reservation/created',
  'reservation/changed',
  'folio/created',
  'folio/charges-changed',
];
const PROPERTIES = ['P1', 'P2', undefined];

/** A subscription as created. */
interface Made extends SubscriptionPlan {
  readonly id: string;
  readonly secret: string;
  /** The path of its endpoint on the receiver. */
  readonly path: string;
}

/** A message the test published: acknowledged with its id and deliveries, or cut off. */
interface Published {
  readonly seq: number;
  readonly event: PublishEvent;
  /** The instance it was published on. */
  readonly on: string;
  /** The answer of publish, once it came. */
  answer?: { readonly id: string; readonly deliveries: readonly string[] };
  /** Why no answer came. */
  failure?: string;
  /** The id of a message known to be on record though its publish was never answered. */
  recordedId?: string;
}

/** One request the receiver got, read. */
interface Copy {
  readonly delivery: ReceivedDelivery;
  readonly path: string;
  readonly webhookId: string | undefined;
  readonly body: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The message's sequence number, from the body's data. */
  readonly seq: number | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: the parsed envelope, checked field by field
  readonly envelope: any;
}

/** Where things stood when an instance was killed. */
export interface KillPoint {
  readonly label: string;
  /** Messages acknowledged so far. */
  readonly acknowledged: number;
  /** Publishes under way (sent, not yet answered). */
  readonly publishing: number;
  /** Deliveries due not accepted yet: in the receiver's hands, queued, or awaiting a retry. */
  readonly outstanding: number;
  /** Attempts in the receiver's hands, unanswered: all, and the killed instance's. */
  readonly held: number;
  readonly heldFromKilled: number;
  /** Deliveries the receiver refused once whose retry has not come yet. */
  readonly retriesAwaited: number;
  /** Of those, the ones not yet due when the next process served: a sweep's, not its start's. */
  retriesDueAfterRestart?: number;
  /** Requests received so far. */
  readonly received: number;
}

/** Whether subscription `plan` matches `event` (the documented semantics, written out). */
function matches(plan: SubscriptionPlan, event: PublishEvent): boolean {
  if (plan.account !== event.accountCode) return false;
  const topic = event.kind.slice(0, event.kind.indexOf('/'));
  if (!plan.events.some((pattern) => pattern === event.kind || pattern === `${topic}/*`)) {
    return false;
  }
  // An account-level event reaches only subscriptions without propertyIds.
  if (plan.propertyIds === undefined) return true;
  return event.propertyId !== undefined && plan.propertyIds.includes(event.propertyId);
}

/** The test's record of subscriptions and messages, and the receiver's view of them. */
export class DeliveryLedger {
  readonly #receiver: HoldingReceiver;
  readonly subscriptions: Made[] = [];
  readonly messages: Published[] = [];
  readonly kills: KillPoint[] = [];
  readonly #copies: Copy[] = [];
  /** The deliveries the service's log holds as delivered (`id subscriptionId`), when last read. */
  #logged: ReadonlySet<string> | undefined;

  constructor(receiver: HoldingReceiver) {
    this.#receiver = receiver;
  }

  /** Create every planned subscription on `on`, through its API. */
  async subscribe(on: InstanceProcess): Promise<void> {
    for (const plan of PLANS) {
      const path = `/${plan.name}`;
      const created = await on.call('POST', '/v1/subscriptions', {
        account: plan.account,
        body: {
          endpointUrl: `${this.#receiver.url}${path}`,
          events: plan.events,
          ...(plan.propertyIds === undefined ? {} : { propertyIds: plan.propertyIds }),
        },
      });
      if (created.status !== 201) {
        throw new Error(`create ${plan.name}: ${created.status} ${JSON.stringify(created.body)}`);
      }
      this.subscriptions.push({ ...plan, id: created.body.id, secret: created.body.secret, path });
    }
  }

  /** Publish the next `count` messages on `on`, one after another, each answered. */
  async publish(on: InstanceProcess, count: number): Promise<void> {
    for (let n = 0; n < count; n++) {
      const message = this.#next(on);
      message.answer = await on.publish(message.event);
    }
  }

  /**
   * Publish the next `count` messages on `on` all at once, for a kill to cut off. `first`
   * resolves once one is answered (or all have failed); `settled` once each is answered or failed.
   */
  publishAtOnce(
    on: InstanceProcess,
    count: number,
  ): { first: Promise<void>; settled: Promise<void> } {
    const all = Array.from({ length: count }, () => {
      const message = this.#next(on);
      return on.publish(message.event).then(
        (answer) => {
          message.answer = answer;
          return true;
        },
        (error: unknown) => {
          message.failure =
            error instanceof Error ? `${error.name}: ${error.message}` : String(error);
          return false;
        },
      );
    });
    const settled = Promise.all(all).then(() => undefined);
    const first = new Promise<void>((resolve) => {
      for (const answered of all) void answered.then((ok) => ok && resolve());
      void settled.then(resolve);
    });
    return { first, settled };
  }

  /**
   * Publish the next message on `on` so that its enqueue hangs once it is on record
   * (webhook-instance.ts): its publish is never answered. An event two subscriptions match.
   */
  publishStalled(on: InstanceProcess): Published {
    const message = this.#next(on, {
      accountCode: 'K1',
      kind: 'reservation/created',
      propertyId: 'P2',
    });
    on.call('POST', '/test/publish?stall', { body: message.event }).then(
      (answer) => {
        message.failure = `answered ${answer.status} ${JSON.stringify(answer.body)}`;
      },
      (error: unknown) => {
        message.failure =
          error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      },
    );
    return message;
  }

  /** Message `seq` is on record as `id`, whatever became of its publish. */
  recorded(seq: number, id: string): void {
    (this.messages[seq] as Published).recordedId = id;
  }

  #next(on: InstanceProcess, event?: Omit<PublishEvent, 'data'>): Published {
    const seq = this.messages.length;
    const message: Published = {
      seq,
      on: on.name,
      event: {
        ...(event ?? {
          accountCode: ACCOUNTS[seq % ACCOUNTS.length] as string,
          kind: KINDS[Math.floor(seq / 2) % KINDS.length] as string,
          propertyId: PROPERTIES[seq % PROPERTIES.length],
        }),
        data: { seq },
      },
    };
    this.messages.push(message);
    return message;
  }

  /** Note where things stand, just before the kill of `sender` (its `x-sender`). */
  noteKill(label: string, sender: string): KillPoint {
    const point = {
      label,
      acknowledged: this.messages.filter((m) => m.answer !== undefined).length,
      publishing: this.messages.filter((m) => m.answer === undefined && m.failure === undefined)
        .length,
      outstanding: this.missing().length,
      held: this.#receiver.held,
      heldFromKilled: this.#receiver.heldFrom(sender),
      retriesAwaited: this.#receiver.retriesAwaited.size,
      received: this.#receiver.received.length,
    };
    this.kills.push(point);
    return point;
  }

  /** Note, once a killed instance serves again, how many retries it awaits are not yet due. */
  noteRestart(): void {
    const point = this.kills.at(-1);
    if (point === undefined) return;
    const now = Date.now();
    const due = [...this.#receiver.retriesAwaited.values()];
    point.retriesDueAfterRestart = due.filter((at) => at > now).length;
  }

  /** The subscriptions the model says `event` reaches. */
  expectedFor(event: PublishEvent): Made[] {
    return this.subscriptions.filter((s) => matches(s, event));
  }

  /** Every copy received so far, read. */
  copies(): readonly Copy[] {
    const received = this.#receiver.received;
    for (const delivery of received.slice(this.#copies.length)) {
      let envelope: unknown;
      try {
        envelope = JSON.parse(delivery.body);
      } catch {
        envelope = undefined;
      }
      const seq = (envelope as { data?: { seq?: unknown } } | undefined)?.data?.seq;
      const id = delivery.headers['webhook-id'];
      this.#copies.push({
        delivery,
        path: delivery.path,
        webhookId: typeof id === 'string' ? id : undefined,
        body: delivery.body,
        headers: delivery.headers,
        seq: typeof seq === 'number' ? seq : undefined,
        envelope,
      });
    }
    return this.#copies;
  }

  /**
   * The messages that must arrive, with their `webhook-id`: every acknowledged one, every one known
   * to be on record, and every one cut off whose copy came all the same (it was recorded: then all
   * of it must arrive).
   */
  #due(): Array<{ message: Published; id: string }> {
    const seen = new Map<number, string>();
    for (const copy of this.copies()) {
      if (copy.seq !== undefined && copy.webhookId !== undefined && !seen.has(copy.seq)) {
        seen.set(copy.seq, copy.webhookId);
      }
    }
    return this.messages.flatMap((message) => {
      const id = message.answer?.id ?? message.recordedId ?? seen.get(message.seq);
      return id === undefined ? [] : [{ message, id }];
    });
  }

  /** The deliveries (message, subscription) due that the receiver has not accepted, as `seq → name`. */
  missing(): string[] {
    const got = new Set(
      this.copies()
        .filter((c) => this.#receiver.accepted(c.delivery))
        .map((c) => `${c.webhookId} ${c.path}`),
    );
    return this.#due().flatMap(({ message, id }) =>
      this.expectedFor(message.event)
        .filter((s) => !got.has(`${id} ${s.path}`))
        .map((s) => `${message.seq} → ${s.name}`),
    );
  }

  /**
   * Read the service's delivery log on `on`: the attempts ended `delivered`, of every account, all
   * pages (a cursor holds on the instance that made it).
   * @returns the deliveries due that it does not hold as delivered, as `seq → name`
   */
  async readLog(on: InstanceProcess): Promise<string[]> {
    const logged = new Set<string>();
    for (const account of new Set(this.subscriptions.map((s) => s.account))) {
      let cursor: string | undefined;
      do {
        const query = `outcome=delivered&limit=500${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
        const page = await on.call('GET', `/v1/audit-logs?${query}`, { account });
        if (page.status !== 200) {
          throw new Error(`the log of ${account}: ${page.status} ${JSON.stringify(page.body)}`);
        }
        for (const item of page.body.items) logged.add(`${item.id} ${item.subscriptionId}`);
        cursor = page.body.endOfData ? undefined : page.body.nextCursor;
      } while (cursor !== undefined);
    }
    this.#logged = logged;
    return this.#unlogged(logged);
  }

  #unlogged(logged: ReadonlySet<string>): string[] {
    return this.#due().flatMap(({ message, id }) =>
      this.expectedFor(message.event)
        .filter((s) => !logged.has(`${id} ${s.id}`))
        .map((s) => `${message.seq} → ${s.name}`),
    );
  }

  /**
   * Every problem with what was received, as sentences; none when every due message reached every
   * subscription it matches at least once and is on record as delivered in the service's log (as
   * last read), nothing reached another, and every copy of a message carries its one `webhook-id`
   * and body, signed with the subscription's secret.
   */
  problems(): string[] {
    const problems: string[] = [];
    const lost = this.missing();
    const due = this.#due();
    if (lost.length > 0) {
      const total = due.reduce((sum, d) => sum + this.expectedFor(d.message.event).length, 0);
      problems.push(
        `lost: ${lost.length} of ${total} deliveries never accepted by the receiver: ${lost.slice(0, 30).join(', ')}${lost.length > 30 ? ', ...' : ''}`,
      );
    }
    const unlogged = this.#logged === undefined ? ['(never read)'] : this.#unlogged(this.#logged);
    if (unlogged.length > 0) {
      problems.push(
        `not on record as delivered in the service's log: ${unlogged.length}: ${unlogged.slice(0, 30).join(', ')}${unlogged.length > 30 ? ', ...' : ''}`,
      );
    }
    for (const message of this.messages) {
      const expected = this.expectedFor(message.event).map((s) => s.id);
      if (message.answer !== undefined) {
        const got = [...message.answer.deliveries].sort();
        if (JSON.stringify(got) !== JSON.stringify([...expected].sort())) {
          problems.push(
            `message ${message.seq}: publish queued ${JSON.stringify(got)}, the model ${JSON.stringify(expected)}`,
          );
        }
      } else if (message.failure !== undefined && !message.failure.includes('fetch failed')) {
        // Only a kill may cut a publish off: any other failure is one.
        problems.push(`message ${message.seq}: publish failed: ${message.failure}`);
      }
    }
    const idOf = new Map(due.map((d) => [d.message.seq, d.id]));
    const bodyOf = new Map<number, string>();
    for (const [n, copy] of this.copies().entries()) {
      const where = `copy ${n} (${copy.path}, webhook-id ${copy.webhookId})`;
      const subscription = this.subscriptions.find((s) => s.path === copy.path);
      const message = copy.seq === undefined ? undefined : this.messages[copy.seq];
      if (subscription === undefined || message === undefined) {
        problems.push(`${where}: not a subscription and message of this test: ${copy.body}`);
        continue;
      }
      const { event } = message;
      const envelope = copy.envelope;
      if (
        envelope.accountId !== event.accountCode ||
        envelope.type !== event.kind ||
        envelope.propertyId !== event.propertyId
      ) {
        problems.push(`${where}: the body is not message ${message.seq}'s: ${copy.body}`);
      }
      if (!matches(subscription, event)) {
        problems.push(`${where}: message ${message.seq} does not match ${subscription.name}`);
      }
      const id = idOf.get(message.seq);
      if (copy.webhookId !== id || envelope.id !== id) {
        problems.push(
          `${where}: message ${message.seq} has webhook-id ${id}, the copy ${copy.webhookId} and id ${envelope.id} in its body`,
        );
      }
      const first = bodyOf.get(message.seq);
      if (first === undefined) bodyOf.set(message.seq, copy.body);
      else if (first !== copy.body) {
        problems.push(`${where}: a body other than the first copy's of message ${message.seq}`);
      }
      const verdict = verifyWebhook(copy.body, copy.headers, { secrets: subscription.secret });
      if (!verdict.ok) problems.push(`${where}: ${verdict.code}: ${verdict.message}`);
    }
    return problems;
  }

  /** Figures for the report: messages, deliveries due, copies received, duplicates. */
  summary(): string {
    const due = this.#due();
    const pairs = new Set(this.copies().map((c) => `${c.webhookId} ${c.path}`));
    const deliveries = due.reduce((sum, d) => sum + this.expectedFor(d.message.event).length, 0);
    const acknowledged = this.messages.filter((m) => m.answer !== undefined).length;
    const cutOff = this.messages.length - acknowledged;
    const kills = this.kills.map(
      (k) =>
        `${k.label} (${k.acknowledged} acknowledged, ${k.publishing} publishing, ${k.outstanding} outstanding, ${k.held} held of which ${k.heldFromKilled} from the killed process, ${k.retriesAwaited} retries awaited (${k.retriesDueAfterRestart ?? '-'} due after the restart), ${k.received} received)`,
    );
    const stalled = this.messages.filter((m) => m.recordedId !== undefined).length;
    return [
      `${this.messages.length} messages (${acknowledged} acknowledged, ${cutOff} cut off, ${due.length - acknowledged} of those recorded, ${stalled} of them stalled after the record)`,
      `${deliveries} deliveries due, ${this.copies().length} copies received, ${this.copies().length - pairs.size} duplicates`,
      `kills: ${kills.join('; ')}`,
    ].join('; ');
  }
}
