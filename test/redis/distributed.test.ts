/**
 * Four Node processes hammer the same client and account through one Redis: together they admit
 * at most the limit in every window (checked from the admitted timestamps, the server's time) and
 * at least 98% of what the exact oracle admits for the same arrivals (invariants 1 and 2 of docs/invariants.md).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExactOracle, maxInAnyWindow } from '../support/oracle.js';
import { type ClientKind, clientKinds } from '../support/redis-server.js';
import { type SharedRedis, sharedRedis } from '../support/shared-redis.js';
import { hammerPolicies } from './fixtures/hammer-policies.js';

const PROCESSES = 4;
const DECISIONS = 2_000;

let redis: SharedRedis;
beforeAll(async () => {
  redis = await sharedRedis();
});
afterAll(async () => {
  await redis.release();
});

interface Run {
  times: number[];
  allowed: boolean[];
}

/** Run one hammering process to its end and read what it decided. */
function hammer(kind: ClientKind, prefix: string): Promise<Run> {
  const file = join(import.meta.dirname, 'fixtures', 'hammer.ts');
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      file,
      String(redis.port),
      String(redis.db),
      kind,
      prefix,
      String(DECISIONS),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      if (code === 0) resolve(JSON.parse(output) as Run);
      else reject(new Error(`hammer exited with ${code}`));
    });
  });
}

describe.each(clientKinds)('four processes through one Redis (%s)', (kind) => {
  it('never admit more than the limit in any window, and admit at least 98% of what the exact oracle admits', async () => {
    // Arrange and act: four processes at once, on one key prefix.
    const runs = await Promise.all(
      Array.from({ length: PROCESSES }, () => hammer(kind, `dist-${kind}:`)),
    );
    const decisions = runs
      .flatMap((r) => r.times.map((t, i) => ({ t, allowed: r.allowed[i]! })))
      .sort((a, b) => a.t - b.t);
    const admitted = decisions.filter((d) => d.allowed).map((d) => d.t);

    // Assert: every window policy holds, over all processes together.
    for (const p of hammerPolicies) {
      if (p.kind === 'window')
        expect(maxInAnyWindow(admitted, p.windowMs)).toBeLessThanOrEqual(p.limit);
    }
    // The exact oracle, given every arrival in time order, admits no more than 2% more.
    const oracle = new ExactOracle(hammerPolicies);
    let oracleAdmitted = 0;
    for (const d of decisions) if (oracle.decide(d.t).allowed) oracleAdmitted++;
    expect(decisions.length).toBe(PROCESSES * DECISIONS);
    expect(admitted.length).toBeGreaterThan(0);
    expect(admitted.length).toBeGreaterThanOrEqual(0.98 * oracleAdmitted);
  });
});
