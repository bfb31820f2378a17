/**
 * The floor of the limit engine benchmark: the least an exact in-memory limiter for the workload
 * does, written by hand for it. Per key: the two sliding logs as rings of times that double when
 * full, the rate as one GCRA number and the throttle as a count of leases. Nothing else: no input
 * checks, no statuses, no reclamation, no key cap, no lease expiry, no other policies. It tells how
 * far the workload itself (a map of 100,000 keys visited in turn, and their rings) lets any exact
 * limiter go on this machine.
 */

interface Ring {
  times: Float64Array;
  start: number;
  count: number;
}

interface FloorRecord {
  second: Ring;
  minute: Ring;
  tat: number;
  leases: number;
}

const ring = (): Ring => ({ times: new Float64Array(4), start: 0, count: 0 });

// Room for one more in `(t - windowMs, t]`, dropping what has left the window.
function hasRoom(r: Ring, limit: number, windowMs: number, t: number): boolean {
  const mask = r.times.length - 1;
  while (r.count > 0 && (r.times[r.start] as number) <= t - windowMs) {
    r.start = (r.start + 1) & mask;
    r.count--;
  }
  return r.count < limit;
}

function push(r: Ring, t: number): void {
  if (r.count === r.times.length) {
    const grown = new Float64Array(2 * r.count);
    for (let i = 0; i < r.count; i++) grown[i] = r.times[(r.start + i) & (r.count - 1)] as number;
    r.times = grown;
    r.start = 0;
  }
  r.times[(r.start + r.count) & (r.times.length - 1)] = t;
  r.count++;
}

/**
 * The Live global policies and the throttle, hand-written: 200 per 1 s, 100 per s (burst 200),
 * 3500 per 60 s, 20 in flight.
 * @returns `decide(key)`: true and one lease taken when admitted; `release(key)` gives it back
 */
export function handWrittenLive(): {
  decide: (key: string) => boolean;
  release: (key: string) => void;
} {
  const records = new Map<string, FloorRecord>();
  const interval = 10;
  const tolerance = 199 * interval;
  return {
    decide(key) {
      const t = Date.now();
      let r = records.get(key);
      if (r === undefined) {
        r = { second: ring(), minute: ring(), tat: 0, leases: 0 };
        records.set(key, r);
      }
      if (
        !hasRoom(r.second, 200, 1_000, t) ||
        !hasRoom(r.minute, 3_500, 60_000, t) ||
        r.tat - tolerance > t ||
        r.leases >= 20
      ) {
        return false;
      }
      push(r.second, t);
      push(r.minute, t);
      r.tat = Math.max(r.tat, t) + interval;
      r.leases++;
      return true;
    },
    release(key) {
      const r = records.get(key);
      if (r !== undefined) r.leases--;
    },
  };
}
