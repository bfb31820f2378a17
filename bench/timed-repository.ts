/**
 * A repository that times each call it passes on to another: where the time of a delivery goes
 * (the secrets read, the attempt recorded, the message recorded). Each call's time runs from the
 * call to its settling, waits for a pooled connection included. The wrapper itself costs about a
 * microsecond a call.
 */
import type { SubscriptionRepository } from 'api-conventions';
import { latencyFigures, round } from './support.js';

/** The figures of one operation over the calls since the last reset. */
export interface OperationTimes {
  readonly calls: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** A repository that times its calls, and what it measured. */
export interface TimedRepository {
  readonly repository: SubscriptionRepository;
  /** The operations called since the last reset, by name. */
  times(): Record<string, OperationTimes>;
  reset(): void;
}

/** Wrap `inner`: every method of it is passed on, timed; `secretsAtRest` is read through. */
export function timedRepository(inner: SubscriptionRepository): TimedRepository {
  const samples = new Map<string, number[]>();
  const wrapper: Record<string, unknown> = {};
  for (let proto = Object.getPrototypeOf(inner); proto !== Object.prototype && proto !== null; ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const method = Reflect.get(inner, name, inner) as unknown;
      if (name === 'constructor' || name in wrapper || typeof method !== 'function') continue;
      wrapper[name] = async (...args: unknown[]) => {
        const start = performance.now();
        try {
          return await (method as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
        } finally {
          const took = performance.now() - start;
          const list = samples.get(name);
          if (list === undefined) samples.set(name, [took]);
          else list.push(took);
        }
      };
    }
    proto = Object.getPrototypeOf(proto);
  }
  wrapper.secretsAtRest = inner.secretsAtRest;
  return {
    repository: wrapper as unknown as SubscriptionRepository,
    times: () =>
      Object.fromEntries(
        [...samples].map(([name, list]) => {
          const mean = list.reduce((a, b) => a + b, 0) / list.length;
          const { p50Ms, p99Ms } = latencyFigures(Float64Array.from(list));
          return [name, { calls: list.length, meanMs: round(mean), p50Ms, p99Ms }];
        }),
      ),
    reset: () => samples.clear(),
  };
}
