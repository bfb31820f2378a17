/**
 * `api-conventions/otel` with the real OpenTelemetry SDK: a MeterProvider read by an in-memory
 * reader, fed by real limiter checks on a fake clock and real deliveries to a local receiver.
 */
import { hasSubscribers } from 'node:diagnostics_channel';
import { metrics } from '@opentelemetry/api';
import {
  DataPointType,
  MeterProvider,
  type MetricData,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  FakeClock,
  isConfigurationError,
  limitsChannels,
  webhookChannels,
  window,
} from '../../src/index.js';
import { METER_NAME, metricNames, registerMetrics } from '../../src/otel/index.js';
import { UnreachableStore } from '../support/async-store.js';
import { deliverToEnd } from '../support/delivery-run.js';
import { thrown } from '../support/thrown.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/** A reader that exports nowhere: the test collects from it. */
class InMemoryReader extends MetricReader {
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }

  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

/** A provider, its reader, and the library's metrics registered on it until the test ends. */
function setup() {
  const reader = new InMemoryReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  stops.push(registerMetrics({ meterProvider }));
  return { reader, meterProvider };
}

/** The metrics collected now, by name. */
async function collect(reader: MetricReader): Promise<Map<string, MetricData>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  const found = new Map<string, MetricData>();
  for (const scope of resourceMetrics.scopeMetrics) {
    expect(scope.scope.name).toBe(METER_NAME);
    for (const metric of scope.metrics) found.set(metric.descriptor.name, metric);
  }
  return found;
}

/** A counter's points as `[attributes, value]`, in a stable order. */
async function sums(reader: MetricReader, name: string): Promise<[object, number][]> {
  const metric = (await collect(reader)).get(name);
  if (metric === undefined) return [];
  expect(metric.dataPointType).toBe(DataPointType.SUM);
  return metric.dataPoints
    .map((p) => [p.attributes, p.value as number] as [object, number])
    .sort(([a], [b]) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

const request = {
  clientId: 'client-1',
  accountCode: 'ACME',
  accountType: 'live',
  method: 'GET',
  path: '/folios',
};

describe('registerMetrics: limits', () => {
  it('counts decisions by outcome, and refusals by policy and reason', async () => {
    const { reader } = setup();
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [window(2, '10s', { name: 'two per 10 s' })],
      clock,
    });

    limiter.check(request);
    limiter.check(request);
    limiter.check(request); // full
    clock.advance(500);
    limiter.check(request); // blocked until the Retry-After it was told

    expect(await sums(reader, metricNames.decisions)).toEqual([
      [{ outcome: 'admitted' }, 2],
      [{ outcome: 'refused', policy: 'two per 10 s', reason: 'blocked' }, 1],
      [{ outcome: 'refused', policy: 'two per 10 s', reason: 'limit' }, 1],
    ]);
  });

  it('counts shadow refusals under their own outcome, with the policy and reason escaped, and their leases in flight', async () => {
    const { reader } = setup();
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [window(1, '10s', { name: 'one per 10 s' }), concurrency(5, { name: 'five' })],
      clock,
      shadow: ['one per 10 s'],
    });

    limiter.check(request);
    limiter.check(request); // would have been refused: admitted all the same
    limiter.check(request);

    expect(await sums(reader, metricNames.decisions)).toEqual([
      [{ outcome: 'admitted' }, 1],
      [{ outcome: 'shadow_refused', policy: 'one per 10 s', reason: 'limit' }, 2],
    ]);
    expect(await sums(reader, metricNames.leasesInFlight)).toEqual([[{}, 3]]);
  });

  it('records the time of every decision, in seconds, by outcome', async () => {
    const { reader } = setup();
    const limiter = createLimiter({ policies: [window(1, '1s')], clock: new FakeClock(0) });

    for (let i = 0; i < 3; i++) limiter.check(request);

    const histogram = (await collect(reader)).get(metricNames.decisionDuration);
    expect(histogram?.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(histogram?.descriptor.unit).toBe('s');
    const counts = Object.fromEntries(
      (histogram?.dataPoints ?? []).map((p) => {
        const value = p.value as { count: number; sum: number; buckets: { boundaries: number[] } };
        expect(value.sum).toBeGreaterThanOrEqual(0);
        expect(value.buckets.boundaries[0]).toBe(0.000_001);
        return [String(p.attributes.outcome), value.count];
      }),
    );
    expect(counts).toEqual({ admitted: 1, refused: 2 });
  });

  it('counts leases in flight: up on an admission with a lease, down once when it is given back', async () => {
    const { reader } = setup();
    const limiter = createLimiter({
      policies: [concurrency(5, { name: 'throttle' })],
      clock: new FakeClock(0),
    });

    const decisions = [0, 1, 2].map(() => limiter.check(request));
    const inFlight = async () => (await sums(reader, metricNames.leasesInFlight))[0]?.[1];
    expect(await inFlight()).toBe(3);
    const [first] = decisions;
    if (first?.allowed !== true) throw new Error('expected an admission');
    first.release();
    first.release();

    expect(await inFlight()).toBe(2);
  });

  it('takes nothing off for a lease taken before it registered', async () => {
    const limiter = createLimiter({
      policies: [concurrency(5, { name: 'throttle' })],
      clock: new FakeClock(0),
    });
    const before = limiter.check(request);
    const { reader } = setup();

    const after = limiter.check(request);
    if (!before.allowed || !after.allowed) throw new Error('expected admissions');
    before.release();

    expect(await sums(reader, metricNames.leasesInFlight)).toEqual([[{}, 1]]);
  });

  it('counts leases found expired by policy; their requests stay in flight until they end', async () => {
    const { reader } = setup();
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 'throttle', leaseTtl: '1s' })],
      clock,
    });

    limiter.check(request); // never released
    clock.advance(1_000);
    const second = limiter.check(request);
    await Promise.resolve();

    expect(second.allowed).toBe(true);
    expect(await sums(reader, metricNames.leaseExpiries)).toEqual([[{ policy: 'throttle' }, 1]]);
    expect(await sums(reader, metricNames.leasesInFlight)).toEqual([[{}, 2]]);
  });

  it('counts store failures by operation and what the limiter did', async () => {
    const { reader } = setup();
    const store = new UnreachableStore();
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [window(1, '1s')],
      store,
      clock,
      outage: 'closed',
      onOutage: () => undefined,
    });

    await limiter.check(request);
    await limiter.check(request);
    await createLimiter({ policies: [window(1, '1s')], store, clock })
      .check(request)
      .catch(() => undefined);

    expect(await sums(reader, metricNames.storeFailures)).toEqual([
      [{ operation: 'apply', outage: 'closed' }, 2],
      [{ operation: 'apply', outage: 'reject' }, 1],
    ]);
    expect(await sums(reader, metricNames.decisions)).toEqual([
      [{ outcome: 'refused', reason: 'unavailable' }, 2],
    ]);
  });
});

describe('registerMetrics: webhooks', () => {
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver.close());

  it('counts attempts by outcome and deliveries by outcome and reason', async () => {
    const { reader } = setup();

    await deliverToEnd(receiver, [500, 503]);
    await deliverToEnd(receiver, [410]);

    expect(await sums(reader, metricNames.webhookAttempts)).toEqual([
      [{ outcome: 'delivered' }, 1],
      [{ outcome: 'disabled' }, 1],
      [{ outcome: 'retry' }, 2],
    ]);
    expect(await sums(reader, metricNames.webhookDeliveries)).toEqual([
      [{ outcome: 'delivered' }, 1],
      [{ outcome: 'disabled', reason: 'gone' }, 1],
    ]);
  });
});

describe('registerMetrics: registration', () => {
  const channels = [...Object.values(limitsChannels), ...Object.values(webhookChannels)];

  it('subscribes to every channel until stopped, then records nothing more', async () => {
    const reader = new InMemoryReader();
    const stop = registerMetrics({ meterProvider: new MeterProvider({ readers: [reader] }) });
    const limiter = createLimiter({ policies: [window(5, '1s')], clock: new FakeClock(0) });
    expect(channels.map((name) => hasSubscribers(name))).toEqual(channels.map(() => true));

    limiter.check(request);
    stop();
    stop();
    limiter.check(request);

    expect(channels.map((name) => hasSubscribers(name))).toEqual(channels.map(() => false));
    expect(await sums(reader, metricNames.decisions)).toEqual([[{ outcome: 'admitted' }, 1]]);
  });

  it('takes a meter instead of a provider', async () => {
    const reader = new InMemoryReader();
    const meter = new MeterProvider({ readers: [reader] }).getMeter('my-service');
    stops.push(registerMetrics({ meter }));

    createLimiter({ policies: [window(5, '1s')], clock: new FakeClock(0) }).check(request);

    const { resourceMetrics } = await reader.collect();
    expect(resourceMetrics.scopeMetrics.map((s) => s.scope.name)).toEqual(['my-service']);
  });

  it("uses the global provider when given none (a no-op until one is set: OpenTelemetry's default)", async () => {
    const reader = new InMemoryReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(meterProvider);
    try {
      stops.push(registerMetrics());
      createLimiter({ policies: [window(5, '1s')], clock: new FakeClock(0) }).check(request);

      expect(await sums(reader, metricNames.decisions)).toEqual([[{ outcome: 'admitted' }, 1]]);
    } finally {
      metrics.disable();
    }
  });

  it('refuses both a meter and a provider, and what is neither, with a message that says what to pass', () => {
    const meterProvider = new MeterProvider();
    const meter = meterProvider.getMeter('x');

    const both = thrown(() => registerMetrics({ meter, meterProvider }));
    const wrong = thrown(() => registerMetrics({ meterProvider: {} as never }));
    const unknown = thrown(() => registerMetrics({ provider: meterProvider } as never));

    for (const error of [both, wrong, unknown]) {
      expect(isConfigurationError(error)).toBe(true);
      expect((error as { code: string }).code).toBe('invalid_option');
    }
    expect((both as Error).message).toBe(
      'registerMetrics options must be an object with a meter or a meterProvider, not both, got one with meter and meterProvider.',
    );
    expect((wrong as Error).message).toContain('getMeter()');
    expect((unknown as Error).message).toContain('meterProvider');
    expect(channels.map((name) => hasSubscribers(name))).toEqual(channels.map(() => false));
  });
});
