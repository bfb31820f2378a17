/**
 * What the repository contract's tests are made of: how a repository is opened for a test,
 * subscriptions and attempts to store, and waiting for a condition with a deadline.
 */
import { randomUUID } from 'node:crypto';
import { vi } from 'vitest';
import type {
  DeliveryAttempt,
  StoredSubscription,
  Subscription,
  SubscriptionRepository,
} from '../../src/index.js';

/** A repository opened for one test, and how to release it. */
export interface OpenedRepository {
  /** A repository holding nothing yet. */
  readonly repository: SubscriptionRepository;
  /** Release it (and whatever was started for it). */
  close(): Promise<void>;
}

/** Opens a fresh, empty repository. */
export type OpenRepository = () => Promise<OpenedRepository>;

/** The time of the tests' first change: 2026-01-01T00:00:00Z. */
export const T0 = Date.UTC(2026, 0, 1);

export const iso = (ms: number): string => new Date(ms).toISOString();

/** A subscription of `accountCode` (acme by default) created at T0, with a fresh UUID. */
export function aSubscription(fields: Partial<Subscription> = {}): Subscription {
  const id = fields.id ?? randomUUID();
  return {
    id,
    accountCode: 'acme',
    endpointUrl: `https://hooks.example.com/${id}`,
    events: ['folio/created'],
    createdAt: iso(T0),
    ...fields,
  };
}

/** One delivery attempt of a subscription. */
export function anAttempt(
  subscriptionId: string,
  fields: Partial<DeliveryAttempt> = {},
): DeliveryAttempt {
  return {
    id: `msg_${randomUUID()}`,
    subscriptionId,
    endpointUrl: `https://hooks.example.com/${subscriptionId}`,
    attempt: 1,
    at: T0,
    status: 200,
    outcome: 'delivered',
    ...fields,
  };
}

/** Runs `body` on a fresh repository, closing it however the body ends. */
export function withRepository(
  open: OpenRepository,
  body: (repository: SubscriptionRepository) => Promise<void>,
): () => Promise<void> {
  return async () => {
    const opened = await open();
    try {
      await body(opened.repository);
    } finally {
      await opened.close();
    }
  };
}

/** Create, failing the test when the repository refuses. */
export async function created(
  repository: SubscriptionRepository,
  subscription: Subscription,
  options: { at?: number; secret?: string; maxPerAccount?: number; publicKey?: string } = {},
): Promise<StoredSubscription> {
  const stored = await repository.create(
    subscription,
    options.secret ?? `whsec_${subscription.id}`,
    {
      at: options.at ?? T0,
      maxPerAccount: options.maxPerAccount ?? 100,
      ...(options.publicKey === undefined ? {} : { publicKey: options.publicKey }),
    },
  );
  if (stored === undefined) throw new Error(`create refused ${subscription.id}`);
  return stored;
}

/** A repository test: a title and a body given a fresh repository. */
export type RepositoryTest = (
  title: string,
  body: (repository: SubscriptionRepository) => Promise<void>,
) => void;

/** Waits for a condition, failing after a deadline (never a fixed pause). */
export async function eventually(check: () => void): Promise<void> {
  await vi.waitFor(check, { timeout: 5_000, interval: 10 });
}
