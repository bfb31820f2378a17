/**
 * OpenTelemetry metrics from the diagnostics channels: decisions, their time, leases in flight,
 * lease expiries, store failures, webhook attempts and deliveries (docs/observability.md).
 * @module
 */

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type Attributes, type Meter, type MeterProvider, metrics } from '@opentelemetry/api';
import { conflictingKeys, readOptions, withMethods } from '../internal/options.js';
import {
  type DecisionMessage,
  type LeaseExpiryMessage,
  type LeaseReleaseMessage,
  limitsChannels,
  type StoreFailureMessage,
} from '../limits/channels.js';
import type { AdmittedDecision } from '../limits/decision-types.js';
import {
  type DeliveryAttemptMessage,
  type DeliveryEndMessage,
  webhookChannels,
} from '../webhooks/delivery/channels.js';

/** Options of {@link registerMetrics}: where the instruments come from. Give one or neither. */
export interface MetricsOptions {
  /**
   * The provider to take the meter `api-conventions` from.
   * @defaultValue the global provider, `metrics.getMeterProvider()` of `@opentelemetry/api`
   */
  meterProvider?: MeterProvider;
  /** The meter to make the instruments with, instead of one from a provider. */
  meter?: Meter;
}

/** The name of the meter taken from a provider. */
export const METER_NAME = 'api-conventions';

/** The names of the instruments {@link registerMetrics} makes. */
export const metricNames = Object.freeze({
  /** Counter of decisions, by `outcome` (`shadow_refused` too), and for refusals `policy` and `reason`. */
  decisions: 'api_conventions.limits.decisions',
  /** Histogram of the time of `limiter.check`, in seconds, by `outcome`. */
  decisionDuration: 'api_conventions.limits.decision.duration',
  /** Up-down counter of admitted requests holding a concurrency lease not given back yet. */
  leasesInFlight: 'api_conventions.limits.leases.in_flight',
  /** Counter of leases a store (memory or Redis) found expired, never given back, by `policy`. */
  leaseExpiries: 'api_conventions.limits.lease.expiries',
  /** Counter of store failures, by `operation` (`apply`, `release`) and, for `apply`, `outage`. */
  storeFailures: 'api_conventions.limits.store.failures',
  /** Counter of webhook attempts, by `outcome`. */
  webhookAttempts: 'api_conventions.webhooks.attempts',
  /** Counter of webhook deliveries that ended, by `outcome` and, when one is given, `reason`. */
  webhookDeliveries: 'api_conventions.webhooks.deliveries',
} as const);

// From a microsecond (a memory store decision) to a second (a store far away), in seconds.
const DURATION_BUCKETS = [
  0.000_001, 0.000_002_5, 0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5,
  0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
];

const OPTION_RULES = {
  meterProvider: withMethods<MeterProvider>(['getMeter'], 'a MeterProvider'),
  meter: withMethods<Meter>(['createCounter', 'createHistogram', 'createUpDownCounter'], 'a Meter'),
};

const ADMITTED: Attributes = Object.freeze({ outcome: 'admitted' });

/**
 * Record the library's metrics from its diagnostics channels. Each call subscribes once more:
 * register once per meter. Until it is called, and after its answer is called, nothing is
 * measured and no channel message is built.
 * @param options - a `meterProvider` or a `meter`; the global provider by default
 * @returns a function that stops recording (unsubscribes); calling it again does nothing
 * @throws ConfigurationError `invalid_option` for options that are not an object, give both
 *   `meter` and `meterProvider`, or give something that is not one
 * @example
 * ```ts
 * import { MeterProvider } from '@opentelemetry/sdk-metrics';
 * import { registerMetrics } from 'api-conventions/otel';
 *
 * const stop = registerMetrics({ meterProvider: new MeterProvider({ readers: [reader] }) });
 * // … on shutdown
 * stop();
 * ```
 */
export function registerMetrics(options?: MetricsOptions): () => void {
  const read = readOptions(options, 'registerMetrics', OPTION_RULES, {
    example: '{ meterProvider }',
  });
  if (read.meter !== undefined && read.meterProvider !== undefined) {
    throw conflictingKeys('registerMetrics options', 'a meter or a meterProvider, not both', [
      'meter',
      'meterProvider',
    ]);
  }
  const meter =
    read.meter ?? (read.meterProvider ?? metrics.getMeterProvider()).getMeter(METER_NAME);
  const listeners = [...limitsListeners(meter), ...webhookListeners(meter)];
  for (const [name, listener] of listeners) subscribe(name, listener);
  let subscribed = true;
  return () => {
    if (!subscribed) return;
    subscribed = false;
    for (const [name, listener] of listeners) unsubscribe(name, listener);
  };
}

type Listener = (message: unknown, name: string | symbol) => void;

function limitsListeners(meter: Meter): [string, Listener][] {
  const decisions = meter.createCounter(metricNames.decisions, {
    description:
      'Decisions of limiter.check, by outcome, and for refusals (shadow ones too) policy and reason.',
    unit: '{decision}',
  });
  const duration = meter.createHistogram(metricNames.decisionDuration, {
    description:
      'Time of limiter.check, from its call to its answer (a store round trip included).',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const inFlight = meter.createUpDownCounter(metricNames.leasesInFlight, {
    description: 'Admitted requests holding a concurrency lease not given back yet.',
    unit: '{lease}',
  });
  const expiries = meter.createCounter(metricNames.leaseExpiries, {
    description: 'Leases found expired, never given back, by policy.',
    unit: '{lease}',
  });
  const failures = meter.createCounter(metricNames.storeFailures, {
    description: 'Limit store failures, by operation and what the limiter did.',
    unit: '{failure}',
  });
  // Leases counted in flight by this registration: a release of one taken before it began, or
  // given back twice, takes nothing away.
  const held = new WeakSet<AdmittedDecision>();
  const onDecision: Listener = (message) => {
    const { outcome, policy, reason, lease, durationMs, decision } = message as DecisionMessage;
    const attributes = outcome === 'admitted' ? ADMITTED : refusal(outcome, policy, reason);
    decisions.add(1, attributes);
    duration.record(durationMs / 1000, outcome === 'admitted' ? ADMITTED : { outcome });
    if (lease && decision.allowed) {
      held.add(decision);
      inFlight.add(1);
    }
  };
  const onRelease: Listener = (message) => {
    if (held.delete((message as LeaseReleaseMessage).decision)) inFlight.add(-1);
  };
  const onExpiry: Listener = (message) => {
    expiries.add(1, { policy: (message as LeaseExpiryMessage).policy });
  };
  const onFailure: Listener = (message) => {
    const { operation, outage } = message as StoreFailureMessage;
    failures.add(1, outage === undefined ? { operation } : { operation, outage });
  };
  return [
    [limitsChannels.decision, onDecision],
    [limitsChannels.leaseRelease, onRelease],
    [limitsChannels.leaseExpiry, onExpiry],
    [limitsChannels.storeFailure, onFailure],
  ];
}

function refusal(outcome: string, policy: string | undefined, reason: string | undefined) {
  const attributes: Attributes = { outcome };
  if (policy !== undefined) attributes.policy = policy;
  if (reason !== undefined) attributes.reason = reason;
  return attributes;
}

function webhookListeners(meter: Meter): [string, Listener][] {
  const attempts = meter.createCounter(metricNames.webhookAttempts, {
    description: 'Webhook delivery attempts, by outcome.',
    unit: '{attempt}',
  });
  const deliveries = meter.createCounter(metricNames.webhookDeliveries, {
    description: 'Webhook deliveries that ended, by outcome and reason.',
    unit: '{delivery}',
  });
  const onAttempt: Listener = (message) => {
    attempts.add(1, { outcome: (message as DeliveryAttemptMessage).attempt.outcome });
  };
  const onDelivery: Listener = (message) => {
    const { outcome, reason } = message as DeliveryEndMessage;
    deliveries.add(1, reason === undefined ? { outcome } : { outcome, reason });
  };
  return [
    [webhookChannels.attempt, onAttempt],
    [webhookChannels.delivery, onDelivery],
  ];
}
