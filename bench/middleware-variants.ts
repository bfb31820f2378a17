/** The services of the middleware benchmark, shared by the benchmark and the service it starts. */

/** The services compared. */
export const variants = [
  'bare',
  'bare-tracking-id',
  'api-conventions',
  'api-conventions-tracking-id',
  'express',
  'express-rate-limit',
] as const;
/** One of {@link variants}. */
export type Variant = (typeof variants)[number];
