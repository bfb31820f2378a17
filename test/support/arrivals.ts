/**
 * Arrival sequences for the limit properties: arbitrary, bursty, steady at a limit, and adversarial
 * at window edges. An arrival is a time step (ms since the previous arrival); time never goes back.
 */
import fc from 'fast-check';

/** Gaps between arrivals mixing same-instant bursts, short and long pauses. */
export const arbitraryGaps = (maxLength = 400): fc.Arbitrary<number[]> =>
  fc.array(
    fc.oneof(
      { weight: 4, arbitrary: fc.constant(0) },
      { weight: 4, arbitrary: fc.integer({ min: 1, max: 50 }) },
      { weight: 2, arbitrary: fc.integer({ min: 51, max: 2_000 }) },
      { weight: 1, arbitrary: fc.integer({ min: 2_001, max: 120_000 }) },
    ),
    // `size: 'max'`: fast-check's default size stops arrays at about ten elements, far short of
    // the limits these sequences must reach.
    { maxLength, size: 'max' },
  );

/** Bursts of several requests at one instant or a few ms apart, separated by pauses. */
export const burstyGaps = (): fc.Arbitrary<number[]> =>
  fc
    .array(
      fc.record({
        pause: fc.integer({ min: 0, max: 3_000 }),
        size: fc.integer({ min: 1, max: 300 }),
        spacing: fc.integer({ min: 0, max: 3 }),
      }),
      { minLength: 1, maxLength: 12 },
    )
    .map((bursts) =>
      bursts.flatMap(({ pause, size, spacing }) => [
        pause,
        ...Array.from({ length: size - 1 }, () => spacing),
      ]),
    );

/** Arrivals exactly at a limit's average spacing (with the fractional part spread), from a random phase. */
export const steadyGaps = (
  limit: number,
  windowMs: number,
  count: number,
): fc.Arbitrary<number[]> =>
  fc.integer({ min: 0, max: windowMs }).map((phase) => {
    const gaps: number[] = [phase];
    let previous = 0;
    for (let i = 1; i < count; i++) {
      const at = Math.floor((i * windowMs) / limit);
      gaps.push(at - previous);
      previous = at;
    }
    return gaps;
  });

/** Arrivals clustered just before, at and just after multiples of a window length. */
export const edgeGaps = (windowMs: number): fc.Arbitrary<number[]> =>
  fc
    .array(
      fc.record({
        edge: fc.integer({ min: 0, max: 6 }),
        offset: fc.constantFrom(-1, 0, 1),
        size: fc.integer({ min: 1, max: 250 }),
      }),
      { minLength: 1, maxLength: 10 },
    )
    .map((clusters) => {
      const times = clusters
        .flatMap(({ edge, offset, size }) =>
          Array.from({ length: size }, () => Math.max(0, edge * windowMs + offset)),
        )
        .sort((a, b) => a - b);
      return times.map((t, i) => t - (i === 0 ? 0 : times[i - 1]!));
    });
