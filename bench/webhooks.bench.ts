/**
 * The subscription index against qlobber (QlobberDedup keyed `account/property/topic/event`, `*`
 * for a property wildcard and a topic wildcard) on the same seeded data: build time, heap, matches
 * per second over 100,000 events, and a check that both return the same sets.
 */

import type { Subscription, SubscriptionEvent } from 'api-conventions';
import { SubscriptionIndex } from 'api-conventions';
import { QlobberDedup } from 'qlobber';
import { makeEvents, makeSubscriptions, seededRandom } from './webhook-workload.js';

const SIZES = [1_000, 100_000, 1_000_000];
const EVENTS = 100_000;
const TIMED_PASSES = 5;
const gc = (globalThis as { gc?: () => void }).gc;

// Subscriptions without propertyIds sit under "*"; an account-level event uses "-", a word no
// property id of the workload has, so it reaches only the "*" ones (as the index does).
function qlobberKeys(subscription: Subscription): string[] {
  const properties = subscription.propertyIds ?? ['*'];
  return properties.flatMap((p) =>
    subscription.events.map((e) => `${subscription.accountCode}/${p}/${e}`),
  );
}

function qlobberTopic(event: SubscriptionEvent): string {
  return `${event.accountCode}/${event.propertyId ?? '-'}/${event.kind}`;
}

function heapUsed(): number | undefined {
  if (gc === undefined) return undefined;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function timed(run: () => void): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

// Matches per second of each matcher: a warm-up pass each, then timed passes taken in turn (so
// that both see the same load on a shared machine), best pass kept.
function matchesPerSecond(
  events: number,
  passes: Record<'index' | 'qlobber', () => number>,
): Record<'index' | 'qlobber', { perSecond: number; results: number }> {
  const best = { index: Number.POSITIVE_INFINITY, qlobber: Number.POSITIVE_INFINITY };
  const results = { index: passes.index(), qlobber: passes.qlobber() };
  for (let i = 0; i < TIMED_PASSES; i++) {
    for (const name of ['index', 'qlobber'] as const) {
      best[name] = Math.min(
        best[name],
        timed(() => (results[name] = passes[name]())),
      );
    }
  }
  return {
    index: { perSecond: (events / best.index) * 1000, results: results.index },
    qlobber: { perSecond: (events / best.qlobber) * 1000, results: results.qlobber },
  };
}

const mb = (bytes: number | undefined) =>
  bytes === undefined ? null : Math.round(bytes / 2 ** 20);

async function measure(size: number): Promise<Record<string, unknown>> {
  const random = seededRandom(size);
  const subscriptions = makeSubscriptions(size, random);
  const events = makeEvents(EVENTS, random);
  const topics = events.map(qlobberTopic);
  const idOf = new Map(subscriptions.map((s, i) => [s, i]));

  const heap0 = heapUsed();
  const index = new SubscriptionIndex();
  const indexBuildMs = timed(() => {
    for (const s of subscriptions) index.add(s);
  });
  const heap1 = heapUsed();
  const qlobber = new QlobberDedup<number>({
    separator: '/',
    wildcard_one: '*',
    wildcard_some: '#',
  });
  const qlobberBuildMs = timed(() => {
    for (let i = 0; i < subscriptions.length; i++) {
      for (const key of qlobberKeys(subscriptions[i]!)) qlobber.add(key, i);
    }
  });
  const heap2 = heapUsed();

  const { index: ours, qlobber: theirs } = matchesPerSecond(EVENTS, {
    index: () => {
      let n = 0;
      for (const event of events) n += index.match(event).length;
      return n;
    },
    // qlobber's topic strings are built before timing, which favours qlobber.
    qlobber: () => {
      let n = 0;
      for (const topic of topics) n += qlobber.match(topic).size;
      return n;
    },
  });

  let mismatches = 0;
  for (let i = 0; i < events.length; i++) {
    const a = index.match(events[i]!).map((s) => idOf.get(s)!);
    const b = qlobber.match(topics[i]!);
    if (a.length !== b.size || new Set(a).size !== a.length || a.some((id) => !b.has(id)))
      mismatches++;
  }

  const indexHeap = heap0 === undefined || heap1 === undefined ? undefined : heap1 - heap0;
  const qlobberHeap = heap1 === undefined || heap2 === undefined ? undefined : heap2 - heap1;
  const figures = {
    subscriptions: size,
    events: EVENTS,
    resultsPerPass: ours.results,
    mismatches,
    index: {
      buildMs: Math.round(indexBuildMs),
      heapMb: mb(indexHeap),
      matchesPerSecond: Math.round(ours.perSecond),
      microsecondsPerMatch: Number((1e6 / ours.perSecond).toFixed(3)),
    },
    qlobber: {
      buildMs: Math.round(qlobberBuildMs),
      heapMb: mb(qlobberHeap),
      matchesPerSecond: Math.round(theirs.perSecond),
      microsecondsPerMatch: Number((1e6 / theirs.perSecond).toFixed(3)),
    },
    ratios: {
      matchesPerSecond: Number((ours.perSecond / theirs.perSecond).toFixed(2)),
      buildTime: Number((indexBuildMs / qlobberBuildMs).toFixed(2)),
      heap:
        indexHeap === undefined || qlobberHeap === undefined
          ? null
          : Number((indexHeap / qlobberHeap).toFixed(2)),
    },
  };
  console.error(
    `${size.toLocaleString('en')} subscriptions: index ${figures.index.microsecondsPerMatch} µs/match, ` +
      `build ${figures.index.buildMs} ms, heap ${figures.index.heapMb} MB | qlobber ` +
      `${figures.qlobber.microsecondsPerMatch} µs/match, build ${figures.qlobber.buildMs} ms, heap ` +
      `${figures.qlobber.heapMb} MB | ${figures.ratios.matchesPerSecond}x matches/s, build ` +
      `${figures.ratios.buildTime}, heap ${figures.ratios.heap}, ${mismatches} mismatches ` +
      `(${ours.results} results per pass)`,
  );
  if (mismatches > 0) throw new Error(`the index and qlobber disagree on ${mismatches} events`);
  return figures;
}

export async function run(): Promise<Record<string, unknown>> {
  if (gc === undefined) console.error('heap figures need node --expose-gc; they are left out');
  const results: Record<string, unknown> = {};
  for (const size of SIZES) results[String(size)] = await measure(size);
  return results;
}
