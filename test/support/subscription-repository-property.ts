/**
 * Account isolation, as a property: random sequences of operations from two to four accounts, with
 * ids used across accounts (an account naming another's real id, or one nobody holds), against any
 * repository and the model. Every answer must be the model's; at the end no account's data was
 * read, changed or deleted by another's operations, and an index built from `changesSince(0)`
 * matches every event as the model says. Each run opens a fresh, empty repository.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AttemptQuery,
  type DeliveryAttempt,
  FakeClock,
  type StoredSubscription,
  type SubscriptionChange,
  type SubscriptionEvent,
  SubscriptionIndex,
  type SubscriptionRepository,
} from '../../src/index.js';
import { iso, type OpenRepository, T0 } from './subscription-repository-fixtures.js';
import { SubscriptionRepositoryModel, type Unstamped } from './subscription-repository-model.js';
import { ACCOUNTS, MAX_STEPS, type Step, scenarioArb } from './subscription-repository-steps.js';
import { EVENTS, PROPERTIES, TOPICS } from './webhook-arbitraries.js';

// Larger than any page of a run: the whole list, log or change feed.
const ALL = 10_000;

/** A stored subscription without its revision, to compare with the model's before stamping. */
function unstamped(stored: StoredSubscription | undefined): Unstamped | undefined {
  if (stored === undefined) return undefined;
  const { revision: _, ...rest } = stored;
  return rest;
}

/** A change as the model tells it: the revision of a delete is the repository's own. */
function comparable(change: SubscriptionChange): object {
  const { id, accountCode, subscription } = change;
  if (subscription === undefined) return { id, accountCode };
  // The change's revision is that of the subscription it carries: the revision of its last change.
  expect(change.revision, `revision of the change of ${id}`).toBe(subscription.revision);
  return { id, accountCode, subscription };
}

/** One run: a fresh repository, the model, and the steps applied to both. */
class Run {
  readonly model = new SubscriptionRepositoryModel();
  readonly clock = new FakeClock(T0);
  readonly accounts: readonly string[];
  // Every id created so far, in any account and deleted ones too, then the one nobody holds.
  readonly pool: string[] = [];
  #created = 0;

  constructor(
    readonly repository: SubscriptionRepository,
    accounts: number,
    readonly ids: readonly string[],
  ) {
    this.accounts = ACCOUNTS.slice(0, accounts);
  }

  account(n: number): string {
    return this.accounts[n % this.accounts.length]!;
  }

  id(n: number): string {
    const pool = [...this.pool, this.ids[MAX_STEPS]!];
    return pool[n % pool.length]!;
  }

  /**
   * The account and the id a step names: any account with any id (most often another account's,
   * or one nobody holds), or, for `mine`, the id with the account that holds it.
   */
  target(step: { account: number; id: number; mine: boolean }): [string, string] {
    const id = this.id(step.id);
    const owner = step.mine ? this.model.owner(id) : undefined;
    return [owner ?? this.account(step.account), id];
  }

  /** Applies one step to both and checks the repository answered as the model. */
  async step(step: Step, index: number): Promise<void> {
    const { repository, model } = this;
    const at = this.clock.now();
    switch (step.op) {
      case 'create': {
        const id = this.ids[this.#created++]!;
        const subscription = {
          id,
          accountCode: this.account(step.account),
          endpointUrl: `https://hooks.example.com/${index}`,
          events: step.events,
          ...(step.propertyIds === undefined ? {} : { propertyIds: step.propertyIds }),
          createdAt: iso(at),
        };
        const options = { at, maxPerAccount: step.maxPerAccount };
        const stored = await repository.create(subscription, `whsec_${index}`, options);
        const expected = model.create(subscription, `whsec_${index}`, options);
        expect(unstamped(stored), `create ${id}`).toEqual(expected);
        if (stored !== undefined) this.#stamp(stored);
        this.pool.push(id);
        return;
      }
      case 'get': {
        const [account, id] = this.target(step);
        expect(await repository.get(account, id), `get ${account} ${id}`).toEqual(
          model.get(account, id),
        );
        return;
      }
      case 'list': {
        const account = this.account(step.account);
        const page = { offset: step.offset, limit: step.limit };
        expect(await repository.list(account, page), `list ${account}`).toEqual(
          model.list(account, page),
        );
        return;
      }
      case 'update': {
        const [account, id] = this.target(step);
        const next = await repository.update(account, id, step.changes, at);
        expect(unstamped(next), `update ${account} ${id}`).toEqual(
          model.update(account, id, step.changes, at),
        );
        if (next !== undefined) this.#stamp(next);
        return;
      }
      case 'delete': {
        const [account, id] = this.target(step);
        expect(await repository.delete(account, id, at), `delete ${account} ${id}`).toBe(
          model.delete(account, id),
        );
        return;
      }
      case 'rotate': {
        const [account, id] = this.target(step);
        const options = { at, graceMs: step.graceMs };
        const secret = `whsec_r${index}`;
        const rotated = model.rotateSecret(account, id, secret, options);
        expect(
          await repository.rotateSecret(account, id, secret, options),
          `rotate ${account} ${id}`,
        ).toBe(rotated);
        // A rotation is a change: the subscription takes a new revision, higher than any before.
        if (rotated) {
          const after = await repository.get(account, id);
          expect(unstamped(after), `rotate ${account} ${id} changes no field`).toEqual(
            unstamped(model.get(account, id)),
          );
          if (after !== undefined) this.#stamp(after);
        }
        return;
      }
      case 'secrets': {
        const [account, id] = this.target(step);
        // Now, and just before and at each instant a secret stops signing from now on.
        const expiries = model.expiries(account, id).flatMap((until) => [until - 1, until]);
        for (const t of [at, ...expiries.filter((t) => t > at)]) {
          expect(
            await repository.signingSecrets(account, id, t),
            `signingSecrets ${account} ${id} ${t}`,
          ).toEqual(model.signingSecrets(account, id, t));
        }
        return;
      }
      case 'changes': {
        const all = await this.checkChanges();
        const revision = [0, ...all.map((c) => c.revision)][step.revision % (all.length + 1)]!;
        const expected = all.filter((c) => c.revision > revision).slice(0, step.limit);
        expect(
          await repository.changesSince(revision, step.limit),
          `changesSince ${revision}`,
        ).toEqual(expected);
        return;
      }
      case 'record': {
        const account = this.account(step.account);
        const id = this.id(step.id);
        const attempt: DeliveryAttempt = {
          id: `msg_${this.ids[index % MAX_STEPS]}`,
          subscriptionId: id,
          endpointUrl: `https://hooks.example.com/${id}`,
          attempt: 1 + (index % 3),
          at,
          ...step.attempt,
        };
        const { entry } = await repository.recordAttempt(account, attempt);
        expect(entry, `recordAttempt ${account}`).toEqual({ ...attempt, sequence: entry.sequence });
        expect(model.recordAttempt(account, attempt, entry.sequence), 'sequence').toBeUndefined();
        return;
      }
      case 'attempts': {
        const account = this.account(step.account);
        const sequences = [undefined, ...this.model.sequences(account)];
        const before = sequences[step.before % sequences.length];
        const page: AttemptQuery = {
          ...(before === undefined ? {} : { beforeSequence: before }),
          limit: step.limit,
          ...(step.subscription === undefined
            ? {}
            : { subscriptionId: this.id(step.subscription) }),
          ...(step.outcomes === undefined ? {} : { outcomes: step.outcomes }),
          ...(step.since === undefined ? {} : { since: T0 + step.since }),
          ...(step.until === undefined ? {} : { until: T0 + step.until }),
        };
        expect(await repository.attempts(account, page), `attempts ${account}`).toEqual(
          model.attempts(account, page),
        );
        return;
      }
    }
  }

  #stamp(stored: StoredSubscription): void {
    expect(
      this.model.stamp(stored.accountCode, stored.id, stored.revision),
      'revision',
    ).toBeUndefined();
  }

  /** Every change since 0: the model's, in ascending revisions; returns the repository's. */
  async checkChanges(): Promise<readonly SubscriptionChange[]> {
    const all = await this.repository.changesSince(0, ALL);
    expect(all.map(comparable), 'changesSince(0)').toEqual(this.model.changes());
    for (let i = 1; i < all.length; i++) {
      expect(all[i]!.revision, 'revisions ascend').toBeGreaterThan(all[i - 1]!.revision);
    }
    for (const change of all) this.model.sawRevision(change.revision);
    return all;
  }

  /** Each account's subscriptions, secrets and log are the model's. */
  async checkAccounts(): Promise<void> {
    const at = this.clock.now();
    for (const account of this.accounts) {
      const page = { offset: 0, limit: ALL };
      expect(await this.repository.list(account, page), `list ${account}`).toEqual(
        this.model.list(account, page),
      );
      for (const id of this.model.ids(account)) {
        expect(await this.repository.signingSecrets(account, id, at), `secrets ${id}`).toEqual(
          this.model.signingSecrets(account, id, at),
        );
      }
      const log = { limit: ALL };
      expect(await this.repository.attempts(account, log), `log ${account}`).toEqual(
        this.model.attempts(account, log),
      );
    }
  }

  /** Every account tries every other account's ids: nothing is read, and nothing changes. */
  async trespass(): Promise<void> {
    const at = this.clock.now();
    const before = await this.repository.changesSince(0, ALL);
    for (const account of this.accounts) {
      const foreign = this.accounts.filter((a) => a !== account).flatMap((a) => this.model.ids(a));
      for (const id of foreign) {
        expect(await this.repository.get(account, id), `${account} reads ${id}`).toBeUndefined();
        expect(await this.repository.signingSecrets(account, id, at)).toEqual([]);
      }
      const id = foreign[0];
      if (id === undefined) continue;
      expect(await this.repository.update(account, id, { status: 'disabled' }, at)).toBeUndefined();
      expect(await this.repository.rotateSecret(account, id, 'x', { at, graceMs: 0 })).toBe(false);
      expect(await this.repository.delete(account, id, at)).toBe(false);
    }
    expect(await this.repository.changesSince(0, ALL), 'no change').toEqual(before);
    await this.checkAccounts();
  }

  /** An index fed every change (a page at a time) matches each event as the model says. */
  async checkIndex(): Promise<void> {
    const index = new SubscriptionIndex();
    let revision = 0;
    for (;;) {
      const changes = await this.repository.changesSince(revision, 7);
      if (changes.length === 0) break;
      for (const change of changes) {
        if (change.subscription?.status === 'enabled') index.replace(change.subscription);
        else index.remove(change.id);
        revision = change.revision;
      }
    }
    for (const event of this.events()) {
      const matched = index
        .match(event)
        .map((s) => s.id)
        .sort();
      expect(matched, `match ${JSON.stringify(event)}`).toEqual(this.model.match(event));
    }
  }

  /** Every event of the small alphabet for the accounts in play: each kind, each property or none. */
  events(): SubscriptionEvent[] {
    return this.accounts.flatMap((accountCode) =>
      TOPICS.flatMap((topic) =>
        EVENTS.flatMap((name) =>
          [undefined, ...PROPERTIES].map((propertyId) => ({
            accountCode,
            kind: `${topic}/${name}`,
            ...(propertyId === undefined ? {} : { propertyId }),
          })),
        ),
      ),
    );
  }
}

/**
 * Declares the account-isolation property for the repositories `open` gives fresh and empty.
 * @param numRuns - runs of at most 30 steps each (50 by default)
 */
export function accountIsolationProperty(name: string, open: OpenRepository, numRuns = 50): void {
  describe(`${name}: account isolation`, () => {
    it('answers every operation as the model does, never across accounts, and its changes index as the model matches', async () => {
      await fc.assert(
        fc.asyncProperty(scenarioArb, async ({ accounts, ids, steps }) => {
          const opened = await open();
          try {
            const run = new Run(opened.repository, accounts, ids);
            for (const [index, [step, advance]] of steps.entries()) {
              run.clock.advance(advance);
              await run.step(step, index);
            }
            await run.checkChanges();
            await run.checkAccounts();
            await run.trespass();
            await run.checkIndex();
          } finally {
            await opened.close();
          }
        }),
        { numRuns },
      );
    });
  });
}
