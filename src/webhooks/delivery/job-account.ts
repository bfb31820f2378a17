/** The account a delivery job is shared out under, for queues that share workers fairly. @module */
import type { DeliveryJob } from './job.js';

/**
 * The job's `accountCode`, else its envelope's `accountId` (what the webhook service writes),
 * else `''`: the job tells no account. Never throws.
 * @internal
 */
export function jobAccount(job: DeliveryJob): string {
  try {
    const code = job.accountCode;
    if (typeof code === 'string' && code !== '') return code;
    const envelope: unknown = JSON.parse(job.body);
    const account = (envelope as { accountId?: unknown } | null)?.accountId;
    return typeof account === 'string' ? account : '';
  } catch {
    return '';
  }
}

/** The default share of one account: a quarter of the workers, at least 1. @internal */
export function defaultAccountConcurrency(concurrency: number): number {
  return Math.max(1, Math.floor(concurrency / 4));
}
