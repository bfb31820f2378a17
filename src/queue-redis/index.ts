/**
 * The durable delivery queue on Redis, through BullMQ:
 * `import { createRedisDeliveryQueue } from 'api-conventions/queue-redis'`. BullMQ is an optional
 * peer dependency and is passed in, not imported, so the package loads without it.
 * @module
 */

export type { RedisDeliveryQueue } from './bullmq-delivery-queue.js';
export { createRedisDeliveryQueue } from './bullmq-delivery-queue.js';
export type { BullMQModule, RedisDeliveryQueueOptions } from './redis-queue-options.js';
