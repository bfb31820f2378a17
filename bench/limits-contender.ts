/**
 * One contender of the limit engine benchmark, measured in a process of its own: `limits.bench.ts`
 * starts this file once per contender, build and round, so that no contender runs on a heap or a
 * JIT that another one left behind. Sends its figures to the parent over IPC.
 */

import { Session } from 'node:inspector/promises';
import type { LimitRequest } from 'api-conventions';
import { MemoryStore as ExpressMemoryStore } from 'express-rate-limit';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { loadLibrary } from './builds.js';
import { handWrittenLive } from './limits-floor.js';
import { consumeEach, settledHeap, withDateNow } from './support.js';

// The build whose limiter this process measures: another build's `dist` folder when the parent
// compares builds, this checkout's otherwise.
const { createLimiter, livePreset, presets, MemoryOverrides } = await loadLibrary(
  process.env.LIMITS_BENCH_BUILD,
);

export const KEYS = 100_000;
export const DECISIONS = 2_000_000;

/** The engine workload: the three Live global policies and the throttle lease, no route rules. */
export const liveGlobal = livePreset({ resourceLimits: [], throttleExemptRoutes: [] });

const clientIds = Array.from({ length: KEYS }, (_, i) => `client-${i}`);
export const request = (i: number): LimitRequest => ({
  clientId: clientIds[i % KEYS]!,
  accountCode: 'ACME',
  accountType: 'live',
  method: 'GET',
  path: '/booking/v1/reservations',
});

export interface Throughput {
  decisionsPerSecond: number;
  heapBytesPerKey: number;
  admitted: number;
  /** Bytes of heap objects made per decision, whether or not they live on (see allocatedPerDecision). */
  allocatedBytesPerDecision: number;
}

async function measure(make: () => (i: number) => boolean | Promise<boolean>): Promise<Throughput> {
  // Warm up on a store of its own, so the JIT has settled before the timed run.
  const warm = make();
  for (let i = 0; i < 200_000; i++) await warm(i);
  const decide = make();
  let admitted = 0;
  // CPU time of this process, not wall time: the figure holds on a machine shared with other work.
  // A synchronous answer is used as it comes; only a promise is awaited.
  const start = process.cpuUsage();
  for (let i = 0; i < DECISIONS; i++) {
    const result = decide(i);
    if (typeof result === 'boolean' ? result : await result) admitted++;
  }
  const used = process.cpuUsage(start);
  const seconds = (used.user + used.system) / 1e6;
  return {
    decisionsPerSecond: DECISIONS / seconds,
    heapBytesPerKey: await heapPerKey(make),
    admitted,
    allocatedBytesPerDecision: await allocatedPerDecision(decide, DECISIONS),
  };
}

const SAMPLED = 100_000;

/**
 * Bytes of heap objects made per decision: V8's sampling heap profiler (a sample every 256 bytes
 * on average), with the objects the collector has freed counted too, over the next 100,000
 * decisions of the timed run's limiter, on its 100,000 keys. A count of what each decision leaves
 * for the collector, steadier than any timing. Array buffers (the memory store's arenas) lie
 * outside the heap and are not counted; heap per key counts them.
 */
async function allocatedPerDecision(
  decide: (i: number) => boolean | Promise<boolean>,
  from: number,
): Promise<number> {
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.enable');
    // The two flags are in the protocol V8 speaks, not in @types/node's copy of it: passed as a
    // variable, the object is not checked for properties the type does not name.
    const sampling = {
      samplingInterval: 256,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    };
    await session.post('HeapProfiler.startSampling', sampling);
    for (let i = from; i < from + SAMPLED; i++) {
      const result = decide(i);
      if (typeof result !== 'boolean') await result;
    }
    const { profile } = await session.post('HeapProfiler.stopSampling');
    let bytes = 0;
    const visit = (node: typeof profile.head): void => {
      bytes += node.selfSize;
      for (const child of node.children) visit(child);
    };
    visit(profile.head);
    return bytes / SAMPLED;
  } finally {
    session.disconnect();
  }
}

/**
 * Heap per key on a fixed timeline, so that the figure does not depend on how fast the run went:
 * the same 2,000,000 decisions over 40 simulated seconds (1 ms per 50 decisions), every key
 * visited every 2 s and so active in the 60 s window throughout. `Date.now()` is the simulated
 * time for every limiter (the peers read it, ours reads it through the system clock).
 */
async function heapPerKey(make: () => (i: number) => boolean | Promise<boolean>): Promise<number> {
  let now = 1_700_000_000_000;
  return withDateNow(
    () => now,
    async () => {
      const before = settledHeap();
      const decide = make();
      for (let i = 0; i < DECISIONS; i++) {
        if (i % 50 === 0) now++;
        const result = decide(i);
        if (typeof result !== 'boolean') await result;
      }
      const heap = settledHeap() - before;
      // Keep the store reachable until after the heap was measured.
      await decide(0);
      return heap / KEYS;
    },
  );
}

/**
 * Ours on the workload. With `statuses` false, admitted decisions report no statuses, as the
 * middleware asks unless it sends the RateLimit fields.
 */
const ours =
  (statuses = true) =>
  () => {
    const limiter = createLimiter({ preset: liveGlobal });
    const options = { statuses };
    return (i: number): boolean => {
      const d = limiter.check(request(i), options);
      if (d.allowed) d.release();
      return d.allowed;
    };
  };

/** The complete Live preset (route rules included), for a plain GET and for a PATCH of a booking. */
const full = (method: 'GET' | 'PATCH') => () => {
  const limiter = createLimiter({ preset: presets.live });
  const paths = clientIds.map((_, i) =>
    method === 'GET' ? '/booking/v1/reservations' : `/booking/v1/bookings/BK-${i % 64}`,
  );
  return (i: number): boolean => {
    const d = limiter.check({ ...request(i), method, path: paths[i % KEYS]! });
    if (d.allowed) d.release();
    return d.allowed;
  };
};

const flexible = () => {
  const perSecond = new RateLimiterMemory({ points: 200, duration: 1 });
  const perMinute = new RateLimiterMemory({ points: 3500, duration: 60 });
  return (i: number): Promise<boolean> =>
    consumeEach([perSecond, perMinute], `${clientIds[i % KEYS]}:ACME`);
};

const express = () => {
  const perSecond = new ExpressMemoryStore();
  const perMinute = new ExpressMemoryStore();
  perSecond.init({ windowMs: 1_000 } as never);
  perMinute.init({ windowMs: 60_000 } as never);
  return async (i: number): Promise<boolean> => {
    const key = `${clientIds[i % KEYS]}:ACME`;
    if ((await perSecond.increment(key)).totalHits > 200) return false;
    return (await perMinute.increment(key)).totalHits <= 3500;
  };
};

/** The floor: a hand-written exact limiter for this workload alone (see limits-floor.ts). */
const floor = () => {
  const { decide, release } = handWrittenLive();
  return (i: number): boolean => {
    const key = clientIds[i % KEYS]!;
    const allowed = decide(key);
    if (allowed) release(key);
    return allowed;
  };
};

/**
 * Ours with an overrides source holding `held` overrides: of the first `held` keys (x2), or of
 * other clients, the keys asking the source and finding nothing. This checkout's build only (a
 * build before overrides has no source).
 */
const overridden = (held: number, ofKeys: boolean) => () => {
  const overrides = new MemoryOverrides();
  const limiter = createLimiter({ preset: liveGlobal, overrides });
  for (let k = 0; k < held; k++) {
    overrides.set({ clientId: ofKeys ? clientIds[k]! : `other-${k}` }, { multiplier: 2 });
  }
  return (i: number): boolean => {
    const d = limiter.check(request(i));
    if (d.allowed) d.release();
    return d.allowed;
  };
};

/** The contenders, by the name the report gives them. */
export const contenders = {
  'api-conventions': ours(),
  'api-conventions, no statuses': ours(false),
  'rate-limiter-flexible': flexible,
  'express-rate-limit': express,
  'floor: hand-written exact Live limiter': floor,
  'api-conventions, full Live preset, GET': full('GET'),
  'api-conventions, full Live preset, PATCH booking': full('PATCH'),
  'with overrides: 1000 held for other clients': overridden(1_000, false),
  'with overrides: every key x2': overridden(KEYS, true),
} as const;

/** A contender's name. */
export type Contender = keyof typeof contenders;

/** Whether a contender is this library's limiter, which a comparison of builds measures in each. */
export const isOurs = (name: Contender): boolean => name.startsWith('api-conventions');

const contender = process.env.LIMITS_BENCH_CONTENDER as Contender | undefined;
if (contender !== undefined && process.send !== undefined) {
  const figures = await measure(contenders[contender]);
  process.send(figures, () => process.exit(0));
}
