/** The services of the middleware benchmark, shared by the benchmark and the service it starts. */
import { BASELINE } from './builds.js';

/** The services compared. */
export const variants = [
  'bare',
  'bare-tracking-id',
  'hand-written',
  'api-conventions',
  'api-conventions-tracking-id',
  'express',
  'express-rate-limit',
  'api-conventions-baseline',
] as const;
/** One of {@link variants}. */
export type Variant = (typeof variants)[number];

/** The baseline build's middleware (`BENCH_BASELINE`), measured only when one is named. */
export const BASELINE_VARIANT: Variant = 'api-conventions-baseline';

/** The variants a run measures in services of their own by default. */
export const measured: readonly Variant[] = variants.filter(
  (v) => v !== BASELINE_VARIANT || BASELINE !== undefined,
);

/**
 * The service that serves {@link interleaved} in turns of {@link SLICE_MS}, each turn's requests,
 * wall time and CPU time counted to its variant.
 */
export const INTERLEAVED = 'interleaved';
/** The variants the interleaved service takes turns with: the baseline's middleware too, when named. */
export const interleaved: readonly Variant[] = [
  'bare',
  'hand-written',
  'api-conventions',
  ...(BASELINE === undefined ? [] : [BASELINE_VARIANT]),
];
/** Length of one turn of the interleaved service, in ms. */
export const SLICE_MS = 50;
