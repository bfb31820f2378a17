/** The services of the middleware benchmark, shared by the benchmark and the service it starts. */

/** The services compared. */
export const variants = [
  'bare',
  'bare-tracking-id',
  'hand-written',
  'api-conventions',
  'api-conventions-tracking-id',
  'express',
  'express-rate-limit',
] as const;
/** One of {@link variants}. */
export type Variant = (typeof variants)[number];

/**
 * The service that serves {@link interleaved} in turns of {@link SLICE_MS}, each turn's requests,
 * wall time and CPU time counted to its variant.
 */
export const INTERLEAVED = 'interleaved';
/** The variants the interleaved service takes turns with. */
export const interleaved = [
  'bare',
  'hand-written',
  'api-conventions',
] as const satisfies readonly Variant[];
/** Length of one turn of the interleaved service, in ms. */
export const SLICE_MS = 50;

/** What the interleaved service reports of each variant. */
export interface TurnFigures {
  requestsPerSecond: number;
  cpuUsPerRequest: number;
  turns: number;
}
