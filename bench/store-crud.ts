/**
 * Creates, reads and list pages on a subscription repository, `IN_FLIGHT` calls at a time: the
 * same seeded workload on every repository, each call's latency kept. The creates spread over
 * `ACCOUNTS` accounts (about 100 subscriptions each), so that a list has pages to read.
 */
import { randomBytes } from 'node:crypto';
import type { Subscription, SubscriptionRepository } from 'api-conventions';
import type { Backend } from './store-backends.js';
import { type CallFigures, measureCalls } from './support.js';
import { makeSubscriptions, seededRandom } from './webhook-workload.js';

/** Calls in flight at once: the clients of one instance under load. */
export const IN_FLIGHT = 16;
const scaled = (n: number) =>
  Math.max(IN_FLIGHT, Math.round(n * Number(process.env.WEBHOOK_STORE_BENCH_SCALE ?? 1)));
/** The workload's sizes; `WEBHOOK_STORE_BENCH_SCALE` scales them for a first look. */
export const CREATES = scaled(4_000);
export const GETS = scaled(10_000);
export const LISTS = scaled(3_000);
const WARM_UP = scaled(400);
export const ACCOUNTS = 40;
export const PAGE_SIZE = 20;
/** An account's cap, as the service's default: the workload never reaches it. */
const MAX_PER_ACCOUNT = 1_000;

/** One phase's figures. */
export type Phase = CallFigures;

/** Run `total` calls of `call`, `IN_FLIGHT` at a time; wall time and each call's latency. */
function drive(total: number, call: (i: number) => Promise<void>): Promise<Phase> {
  return measureCalls(total, IN_FLIGHT, call);
}

/** The workload's subscriptions and secrets: the same on every repository. */
function workload(prefix: string, count: number, seed: number) {
  const subscriptions = makeSubscriptions(count, seededRandom(seed), ACCOUNTS).map(
    (s): Subscription => ({ ...s, id: `${prefix}${s.id}` }),
  );
  const secrets = subscriptions.map(() => `whsec_${randomBytes(24).toString('base64')}`);
  return { subscriptions, secrets };
}

async function createAll(
  repository: SubscriptionRepository,
  { subscriptions, secrets }: ReturnType<typeof workload>,
): Promise<Phase> {
  return drive(subscriptions.length, async (i) => {
    const at = Date.now();
    const stored = await repository.create(subscriptions[i]!, secrets[i]!, {
      at,
      maxPerAccount: MAX_PER_ACCOUNT,
    });
    if (stored === undefined) throw new Error(`create ${subscriptions[i]!.id} was refused`);
  });
}

async function getAll(
  repository: SubscriptionRepository,
  subscriptions: readonly Subscription[],
  count: number,
  seed: number,
): Promise<Phase> {
  const random = seededRandom(seed);
  const picks = Array.from({ length: count }, () =>
    Math.floor(random() * subscriptions.length),
  ).map((i) => subscriptions[i]!);
  return drive(count, async (i) => {
    const wanted = picks[i]!;
    const stored = await repository.get(wanted.accountCode, wanted.id);
    if (stored?.id !== wanted.id) throw new Error(`get ${wanted.id} found nothing`);
  });
}

/** Pages of `PAGE_SIZE` of random accounts, each at a random page the account fills. */
async function listAll(
  repository: SubscriptionRepository,
  subscriptions: readonly Subscription[],
  count: number,
  seed: number,
): Promise<Phase> {
  const held = new Map<string, number>();
  for (const s of subscriptions) held.set(s.accountCode, (held.get(s.accountCode) ?? 0) + 1);
  const accounts = [...held.keys()].sort();
  const random = seededRandom(seed);
  const picks = Array.from({ length: count }, () => {
    const accountCode = accounts[Math.floor(random() * accounts.length)]!;
    const pages = Math.ceil(held.get(accountCode)! / PAGE_SIZE);
    return { accountCode, offset: Math.floor(random() * pages) * PAGE_SIZE };
  });
  return drive(count, async (i) => {
    const { accountCode, offset } = picks[i]!;
    const page = await repository.list(accountCode, { offset, limit: PAGE_SIZE });
    if (page.totalItems !== held.get(accountCode) || page.items.length === 0) {
      throw new Error(`list of ${accountCode} at ${offset} gave ${page.items.length} items`);
    }
  });
}

/** The figures of one repository. */
export interface CrudFigures {
  readonly creates: Phase;
  readonly gets: Phase;
  readonly lists: Phase;
}

/**
 * Warm up on subscriptions of other accounts (untimed), then time the creates, the gets of random
 * subscriptions and the list pages of random accounts.
 */
export async function measureCrud(backend: Backend): Promise<CrudFigures> {
  const { repository } = backend;
  const warm = workload('w', WARM_UP, 1);
  const warmAccounts = warm.subscriptions.map((s) => ({ ...s, accountCode: `w${s.accountCode}` }));
  await createAll(repository, { ...warm, subscriptions: warmAccounts });
  await getAll(repository, warmAccounts, WARM_UP, 2);
  await listAll(repository, warmAccounts, WARM_UP, 3);

  const timed = workload('', CREATES, 26);
  const creates = await createAll(repository, timed);
  const gets = await getAll(repository, timed.subscriptions, GETS, 27);
  const lists = await listAll(repository, timed.subscriptions, LISTS, 28);
  return { creates, gets, lists };
}
