/**
 * Shadow mode, against the exact oracle and an enforcing limiter: the same suite for every store.
 * A shadow limiter admits what only shadow policies would refuse, records it, and reports the
 * refusal an enforcing limiter would have made on the same history; the enforcing policies decide
 * as they would alone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  type Decision,
  FakeClock,
  type LimitStore,
  type Policy,
  rate,
  type ShadowRefusal,
  window,
} from '../../src/index.js';
import { ExactOracle, type OracleEntry, type OracleRefusal } from './oracle.js';

/** The policies of the sequences: every kind, small enough to fill. */
const POLICIES: readonly Policy[] = [
  window(3, '2s', { name: 'window' }),
  rate(2, 2, { name: 'rate' }),
  concurrency(2, { name: 'throttle', leaseTtl: '5s', retryAfter: '1s' }),
];

const steps = fc.array(
  fc.record({
    gap: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 700 }), fc.constant(2_000)),
    release: fc.boolean(),
  }),
  { minLength: 1, maxLength: 40 },
);

/** The names put in shadow mode: all, or some of them. */
const shadowNames = fc.subarray(
  POLICIES.map((p) => p.name),
  { minLength: 1 },
);

const request = { clientId: 'client-1', accountCode: 'ACME', method: 'GET', path: '/folios' };

/** A shadow report as the oracle words it. */
function asOracle(report: ShadowRefusal | undefined): OracleRefusal | undefined {
  if (report === undefined) return undefined;
  const { policy, retryAfterSeconds, reason } = report;
  return { policy: policy.name, retryAfterSeconds, reason };
}

/** Give back the oldest lease held, to the limiter and to the oracle. */
async function releaseOldest(
  held: { decision: Decision; lease: number | undefined }[],
  oracle: ExactOracle,
): Promise<void> {
  const oldest = held.shift();
  if (oldest === undefined) return;
  if (oldest.decision.allowed) await oldest.decision.release();
  if (oldest.lease !== undefined) oracle.release(oldest.lease);
}

/**
 * @param freshStore - a new, empty store of the kind under test (two calls, two stores)
 * @param numRuns - property runs (fewer for a networked store)
 */
export function shadowSuite(
  name: string,
  freshStore: () => LimitStore | Promise<LimitStore>,
  numRuns: number,
): void {
  describe(`shadow mode on ${name}`, () => {
    it('shadow admits everything and reports exactly what enforce would have refused: an enforcing limiter peeking the same store, and the exact oracle on the recorded history', async () => {
      let escaped = 0;
      await fc.assert(
        fc.asyncProperty(steps, async (sequence) => {
          // Arrange: a limiter with every policy in shadow, and one that enforces them, on one
          // store (the same policies: the same state).
          const store = await freshStore();
          const clock = new FakeClock(1_000_000);
          const shadow = createLimiter({ policies: POLICIES, store, clock, shadow: true });
          const enforcing = createLimiter({ policies: POLICIES, store, clock });
          const oracle = new ExactOracle();
          const entries: OracleEntry[] = POLICIES.map((policy) => ({ id: policy.name, policy }));
          const held: { decision: Decision; lease: number | undefined }[] = [];
          for (const step of sequence) {
            clock.advance(step.gap);
            if (step.release) await releaseOldest(held, oracle);
            // Act
            const would = await enforcing.peek(request);
            const decision = await shadow.check(request);
            const expected = oracle.decideShadow(clock.now(), entries, () => true);
            // Assert: admitted, with the refusal enforce would have made
            expect(decision.allowed).toBe(true);
            if (!decision.allowed) return;
            const report = decision.shadow;
            if (would.allowed) expect(report).toBeUndefined();
            else {
              escaped++;
              expect(report).toEqual({
                policy: would.policy,
                reason: would.reason,
                retryAfterSeconds: would.retryAfterSeconds,
                retryAt: would.retryAt,
              });
            }
            expect(asOracle(report)).toEqual(expected.shadow);
            held.push({ decision, lease: expected.leaseId });
          }
        }),
        { numRuns },
      );
      // Every policy kind's refusal was escaped, not only admissions seen.
      expect(escaped).toBeGreaterThan(numRuns);
    }, 120_000);

    it('only the enforcing policies refuse, with their blocks, as the exact oracle decides; shadow policies are counted and never blocked', async () => {
      const seen = { refused: 0, escaped: 0 };
      await fc.assert(
        fc.asyncProperty(steps, shadowNames, async (sequence, names) => {
          const store = await freshStore();
          const clock = new FakeClock(1_000_000);
          const limiter = createLimiter({ policies: POLICIES, store, clock, shadow: names });
          const oracle = new ExactOracle();
          const entries: OracleEntry[] = POLICIES.map((policy) => ({ id: policy.name, policy }));
          const inShadow = (e: OracleEntry) => names.includes(e.policy.name);
          const held: { decision: Decision; lease: number | undefined }[] = [];
          for (const step of sequence) {
            clock.advance(step.gap);
            if (step.release) await releaseOldest(held, oracle);
            const decision = await limiter.check(request);
            const expected = oracle.decideShadow(clock.now(), entries, inShadow);
            expect(decision.allowed).toBe(expected.allowed);
            if (decision.allowed) {
              const report = decision.shadow;
              expect(asOracle(report)).toEqual(expected.shadow);
              held.push({ decision, lease: expected.leaseId });
              if (report !== undefined) seen.escaped++;
            } else {
              seen.refused++;
              expect(names).not.toContain(decision.policy?.name);
              expect({
                policy: decision.policy?.name,
                retryAfterSeconds: decision.retryAfterSeconds,
              }).toEqual({
                policy: expected.policy,
                retryAfterSeconds: expected.retryAfterSeconds,
              });
            }
          }
        }),
        { numRuns },
      );
      expect(seen.refused).toBeGreaterThan(0);
      expect(seen.escaped).toBeGreaterThan(0);
    }, 120_000);

    it('a peek reports the refusal a check would escape, and records nothing', async () => {
      const store = await freshStore();
      const clock = new FakeClock(1_000_000);
      const limiter = createLimiter({
        policies: [window(1, '10s', { name: 'tight' }), window(5, '10s', { name: 'loose' })],
        store,
        clock,
        shadow: ['tight'],
      });
      await limiter.check(request);
      clock.advance(1_000);

      const peeked = await limiter.peek(request);
      const checked = await limiter.check(request);

      expect(peeked.allowed && peeked.shadow).toEqual({
        policy: expect.objectContaining({ name: 'tight' }),
        reason: 'limit',
        retryAfterSeconds: 9,
        retryAt: 1_010_000,
      });
      expect(checked.allowed && checked.shadow).toEqual(peeked.allowed && peeked.shadow);
      // Both admissions counted in both windows: the peek none.
      expect(checked.statuses.map((s) => [s.policy.name, s.remaining])).toEqual([
        ['tight', 0],
        ['loose', 3],
      ]);
    });

    it('with a cost, reports when the whole cost would have been admitted', async () => {
      const store = await freshStore();
      const clock = new FakeClock(1_000_000);
      const limiter = createLimiter({
        policies: [window(4, '10s', { name: 'w' })],
        store,
        clock,
        shadow: true,
      });
      await limiter.check(request, { cost: 3 });
      clock.advance(2_000);

      const decision = await limiter.check(request, { cost: 3 });

      expect(decision.allowed && decision.shadow?.retryAfterSeconds).toBe(8);
      expect(decision.statuses[0]?.remaining).toBe(0);
    });
  });
}
