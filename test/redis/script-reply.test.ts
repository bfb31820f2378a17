/**
 * Reading the decision script's reply (docs/redis-store.md, "The decision script"): the leases a
 * decision dropped expired, which follow its numbers, are reported with the decision's time only
 * when the whole reply reads, and a tail that is not such leases makes the reply unreadable.
 */
import { describe, expect, it } from 'vitest';
import { concurrency, type Plan, type Policy, window } from '../../src/index.js';
import { type ExpiryReport, parseOutcome } from '../../src/redis/script-reply.js';

const hourly = window(10, '1h', { name: 'hourly' });
const throttle = concurrency(2, { name: 'throttle', leaseTtl: '1s' });
const sections: readonly Policy[] = [hourly, throttle];
const plan: Plan = {
  scopes: [{ clientId: 'c', accountCode: 'a', resource: '', policies: sections, active: [0, 1] }],
};
const request = { plan, policies: sections, resources: ['', ''] };

/** Read `numbers` as a text reply; the reports made, as [policy, expiredAt, foundAt]. */
function read(numbers: readonly number[], readPlan: Plan = plan) {
  const reports: [string, number, number][] = [];
  const report: ExpiryReport = (policy, expiredAt, foundAt) => {
    reports.push([policy, expiredAt, foundAt]);
  };
  const outcome = parseOutcome(
    numbers.join(','),
    false,
    { ...request, plan: readPlan },
    sections,
    () => report,
  );
  return { outcome, reports };
}

describe('parseOutcome', () => {
  it('reports each lease an admission dropped, with the decision time, and reads the admission as without them', () => {
    // Admitted at 5000: the window's count 3, the throttle's 1; the throttle dropped two leases.
    const plain = read([1, 5_000, 3, 1]);
    const { outcome, reports } = read([1, 5_000, 3, 1, 2, 2, 4_000, 4_500]);

    expect(outcome).toEqual(plain.outcome);
    expect(plain.reports).toEqual([]);
    expect(reports).toEqual([
      ['throttle', 4_000, 5_000],
      ['throttle', 4_500, 5_000],
    ]);
  });

  it('reports the leases a refusal dropped', () => {
    const { outcome, reports } = read([0, 5_000, 2, 60, 1, 0, 1_000, 2, 0, 2, 1, 5_000]);

    expect(outcome?.allowed).toBe(false);
    expect(reports).toEqual([['throttle', 5_000, 5_000]]);
  });

  it('asks for no report when the decision dropped nothing', () => {
    let asked = 0;
    const outcome = parseOutcome('1,5000,3,1', false, request, sections, () => {
      asked++;
      return undefined;
    });

    expect(outcome?.allowed).toBe(true);
    expect(asked).toBe(0);
  });

  it.each([
    ['a section that is not a throttle', [1, 2, 4_000]],
    ['a section past the last', [3, 1, 4_000]],
    ['no lease', [2, 0]],
    ['a count that is not whole', [2, 1.5, 4_000]],
    ['fewer expiries than counted', [2, 2, 4_000]],
    ['an expiry after the decision', [2, 1, 5_001]],
    ['a section without its count', [2]],
  ])('reads no outcome and reports nothing for a tail with %s', (_, tail) => {
    const { outcome, reports } = read([1, 5_000, 3, 1, ...tail]);

    expect(outcome).toBeUndefined();
    expect(reports).toEqual([]);
  });

  it('reads no outcome from a peek with numbers after its own: a peek drops nothing', () => {
    const peek: Plan = { ...plan, peek: true };
    const numbers = [1, 5_000, 1, 0, 0, 10, 0, 2, 0];

    expect(read(numbers, peek).outcome?.allowed).toBe(true);
    expect(read([...numbers, 2, 1, 4_000], peek).outcome).toBeUndefined();
  });
});
