/**
 * The services of the framework benchmark, shared by the benchmark and the service it starts:
 * per framework, the framework bare, with this library's limiter (its default headers, with the
 * RateLimit fields of the nearest policy on every response, and with those of every policy) and
 * with the framework's own rate limiter.
 */

/** The frameworks compared, each on node:http. */
export const frameworks = ['fastify', 'hono', 'express'] as const;
/** One of {@link frameworks}. */
export type Framework = (typeof frameworks)[number];

/** The variants of each framework's service, taking turns in one process. */
export const frameworkVariants = [
  'bare',
  'api-conventions',
  'api-conventions, RateLimit fields',
  'api-conventions, RateLimit fields of every policy',
  'own limiter',
] as const;
/** One of {@link frameworkVariants}. */
export type FrameworkVariant = (typeof frameworkVariants)[number];

/** The package of each framework's own limiter. */
export const ownLimiter: Readonly<Record<Framework, string>> = {
  fastify: '@fastify/rate-limit',
  hono: 'hono-rate-limiter',
  express: 'express-rate-limit',
};

/** The route every request of the benchmark asks for. */
export const ROUTE = '/booking/v1/reservations';
