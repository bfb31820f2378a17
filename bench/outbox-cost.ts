/**
 * The outbox's cost per published event: the latency of `publish()` on a service whose queue
 * drops every job, so that what is timed is publish's own work (the index's match, the message,
 * and, with the outbox, the record of the message and its deliveries in one transaction), one
 * call at a time, 16 and 64 at a time; and the latency of one `recordMessage` call of the
 * repository. Before the outbox, the same publish() recorded nothing: the figures of that build
 * are in docs/benchmarks.md.
 */
import { createWebhookMessage } from 'api-conventions';
import { eventOf, ourService } from './delivery-contenders.js';
import type { Backend } from './store-backends.js';
import { type CallFigures, measureCalls, round } from './support.js';

/** Publishes at once in the loaded measures: the publishers of one instance under load, and more. */
const IN_FLIGHT = 16;
const IN_FLIGHT_HIGH = 64;

/** The cost figures of one repository. */
export interface PublishCost {
  /** publish(), one at a time. */
  readonly publish: CallFigures;
  /** publish(), `IN_FLIGHT` (16) at a time. */
  readonly publishLoaded: CallFigures;
  /** publish(), `IN_FLIGHT_HIGH` (64) at a time. */
  readonly publishLoaded64: CallFigures;
  /** recordMessage of one message with one delivery, one at a time. */
  readonly recordMessage: CallFigures;
  /**
   * CPU time per publish, in microseconds, of this process and of the database server (where it
   * is a process of its own), 16 and 64 at a time.
   */
  readonly cpuUsPerPublish?: {
    readonly loaded: { readonly node: number; readonly server: number };
    readonly loaded64: { readonly node: number; readonly server: number };
  };
}

/** The CPU seconds used so far by the database server's processes. */
export type ServerCpu = () => number;

/** `measureCalls`, with the CPU time per call of this process and of the server. */
async function measureWithCpu(
  total: number,
  inFlight: number,
  call: () => Promise<unknown>,
  serverCpu: ServerCpu,
): Promise<{ figures: CallFigures; cpu: { node: number; server: number } }> {
  const node = process.cpuUsage();
  const server = serverCpu();
  const figures = await measureCalls(total, inFlight, call);
  const used = process.cpuUsage(node);
  return {
    figures,
    cpu: {
      node: round((used.user + used.system) / total),
      server: round(((serverCpu() - server) * 1e6) / total),
    },
  };
}

/**
 * Measure on `backend` (a fresh schema or database): a service with one matching subscription per
 * event; warm-up, then `calls` publishes one at a time, twice as many `IN_FLIGHT` at a time, and
 * `calls` records of a message straight into the repository; with `serverCpu`, the CPU time per
 * loaded publish too.
 */
export async function measurePublishCost(
  backend: Backend,
  endpointUrl: string,
  calls: number,
  serverCpu?: ServerCpu,
): Promise<PublishCost> {
  const setup = await ourService({
    key: 'outbox',
    name: backend.name,
    repository: backend.repository,
    queue: { kind: 'none' },
    endpointUrl,
  });
  const contender = setup.contenders[0]!;
  try {
    let n = 0;
    const publish = () => contender.publish(n++);
    await measureCalls(Math.ceil(calls / 10), 1, publish);
    const one = await measureCalls(calls, 1, publish);
    const loaded = await measureWithCpu(calls * 2, IN_FLIGHT, publish, serverCpu ?? (() => 0));
    const loaded64 = await measureWithCpu(
      calls * 4,
      IN_FLIGHT_HIGH,
      publish,
      serverCpu ?? (() => 0),
    );
    if (contender.errors() > 0) throw new Error(`${backend.name}: publish reported failures`);
    const { repository } = backend;
    const { items } = await repository.list('A0', { offset: 0, limit: 10 });
    const target = items.find((s) => s.events.includes('folio/created'))!;
    const deliveries = [{ subscriptionId: target.id, endpointUrl: target.endpointUrl }];
    // Made before the timing: the record alone is timed.
    const messages = Array.from({ length: calls + Math.ceil(calls / 10) }, (_, i) => {
      const event = eventOf(i, 'A0');
      const { id, body } = createWebhookMessage(event);
      return { accountCode: 'A0', id, kind: event.kind, propertyId: event.propertyId!, body };
    });
    let m = 0;
    const recordOne = () => {
      const createdAt = Date.now();
      const message = { ...messages[m++]!, createdAt };
      return repository.recordMessage(message, deliveries, { leaseUntil: createdAt + 300_000 });
    };
    await measureCalls(Math.ceil(calls / 10), 1, recordOne);
    return {
      publish: one,
      publishLoaded: loaded.figures,
      publishLoaded64: loaded64.figures,
      recordMessage: await measureCalls(calls, 1, recordOne),
      ...(serverCpu === undefined
        ? {}
        : { cpuUsPerPublish: { loaded: loaded.cpu, loaded64: loaded64.cpu } }),
    };
  } finally {
    await setup.close();
  }
}
