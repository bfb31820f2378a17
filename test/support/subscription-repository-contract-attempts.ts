/**
 * The delivery log part of the repository contract: every attempt kept, read newest first by
 * sequence with the filters the service's attempt listings pass, and deleted by age in bounded
 * batches. Declared by `subscriptionChangesContract`.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { DeliveryAttempt, DeliveryLogEntry } from '../../src/index.js';
import { anAttempt, type RepositoryTest, T0 } from './subscription-repository-fixtures.js';

const MINUTE = 60_000;

/** Declares the tests of the delivery log with the contract's `test`. */
export function subscriptionAttemptsContract(test: RepositoryTest): void {
  describe('recordAttempt and attempts', () => {
    test('sequences start at 1 or above and grow; attempts are newest first, before a sequence, at most limit', async (repository) => {
      const id = randomUUID();
      const recorded: DeliveryLogEntry[] = [];
      for (let i = 1; i <= 4; i++) {
        recorded.push(
          (await repository.recordAttempt('acme', anAttempt(id, { attempt: i, at: T0 + i }))).entry,
        );
      }
      const sequences = recorded.map((e) => e.sequence);
      expect(sequences[0]).toBeGreaterThanOrEqual(1);
      for (let i = 1; i < sequences.length; i++) {
        expect(sequences[i]).toBeGreaterThan(sequences[i - 1]!);
      }
      const newest = [...recorded].reverse();
      expect(await repository.attempts('acme', { limit: 10 })).toEqual(newest);
      expect(await repository.attempts('acme', { limit: 2 })).toEqual(newest.slice(0, 2));
      expect(
        await repository.attempts('acme', { beforeSequence: sequences[2]!, limit: 10 }),
      ).toEqual(newest.slice(2));
      expect(
        await repository.attempts('acme', { beforeSequence: sequences[0]!, limit: 10 }),
      ).toEqual([]);
    });

    test('keeps every field of the attempt, and no field it did not have', async (repository) => {
      const id = randomUUID();
      const attempts: DeliveryAttempt[] = [
        anAttempt(id, { durationMs: 42 }),
        anAttempt(id, {
          status: 503,
          outcome: 'retry',
          nextAttemptAt: T0 + 5_000,
          attempt: 2,
          durationMs: 0.5,
        }),
        {
          id: `msg_${randomUUID()}`,
          subscriptionId: id,
          endpointUrl: 'https://hooks.example.com/x',
          attempt: 3,
          at: T0 + 10_000,
          error: { code: 'timeout', message: 'No answer within 15 s.' },
          outcome: 'failed',
        },
      ];
      const recorded = [];
      for (const attempt of attempts) {
        const { entry } = await repository.recordAttempt('acme', attempt);
        expect(entry).toEqual({ ...attempt, sequence: entry.sequence });
        recorded.push(entry);
      }
      const read = await repository.attempts('acme', { limit: 10 });
      expect(read).toEqual([...recorded].reverse());
      expect(read[0]).not.toHaveProperty('status');
      expect(read[0]).not.toHaveProperty('durationMs');
      expect(read[2]).not.toHaveProperty('error');
    });

    test('each account has its own log', async (repository) => {
      const id = randomUUID();
      const { entry: mine } = await repository.recordAttempt('acme', anAttempt(id));
      const { entry: theirs } = await repository.recordAttempt(
        'globex',
        anAttempt(id, { attempt: 2 }),
      );
      expect(await repository.attempts('acme', { limit: 10 })).toEqual([mine]);
      expect(await repository.attempts('globex', { limit: 10 })).toEqual([theirs]);
      expect(await repository.attempts('initech', { limit: 10 })).toEqual([]);
      expect(await repository.attempts('globex', { subscriptionId: id, limit: 10 })).toEqual([
        theirs,
      ]);
    });

    test('what it keeps does not change when the caller changes the attempt later', async (repository) => {
      const error = { code: 'timeout', message: 'No answer.' };
      const attempt = anAttempt(randomUUID(), { error, outcome: 'retry' });
      await repository.recordAttempt('acme', attempt);
      error.code = 'changed';
      const [read] = await repository.attempts('acme', { limit: 1 });
      expect(read?.error).toEqual({ code: 'timeout', message: 'No answer.' });
    });
  });

  describe('attempts filtered', () => {
    /** Six attempts of two subscriptions, a minute apart: delivered, retry, failed, twice. */
    const six = async (repository: Parameters<Parameters<RepositoryTest>[1]>[0]) => {
      const [a, b] = [randomUUID(), randomUUID()];
      const outcomes = ['delivered', 'retry', 'failed'] as const;
      const recorded: DeliveryLogEntry[] = [];
      for (let i = 0; i < 6; i++) {
        const attempt = anAttempt(i % 2 === 0 ? a : b, {
          at: T0 + i * MINUTE,
          outcome: outcomes[i % 3]!,
        });
        recorded.push((await repository.recordAttempt('acme', attempt)).entry);
      }
      return { a, b, newest: recorded.reverse() };
    };

    test('by subscription, outcomes and [since, until), each and together, newest first', async (repository) => {
      const { a, newest } = await six(repository);
      const read = (query: Omit<Parameters<typeof repository.attempts>[1], 'limit'>) =>
        repository.attempts('acme', { limit: 10, ...query });
      expect(await read({ subscriptionId: a })).toEqual(
        newest.filter((e) => e.subscriptionId === a),
      );
      expect(await read({ outcomes: ['failed'] })).toEqual(
        newest.filter((e) => e.outcome === 'failed'),
      );
      expect(await read({ outcomes: ['delivered', 'retry'] })).toEqual(
        newest.filter((e) => e.outcome !== 'failed'),
      );
      expect(await read({ since: T0 + 2 * MINUTE })).toEqual(
        newest.filter((e) => e.at >= T0 + 2 * MINUTE),
      );
      expect(await read({ until: T0 + 2 * MINUTE })).toEqual(
        newest.filter((e) => e.at < T0 + 2 * MINUTE),
      );
      expect(await read({ subscriptionId: a, since: T0 + MINUTE, until: T0 + 5 * MINUTE })).toEqual(
        newest.filter(
          (e) => e.subscriptionId === a && e.at >= T0 + MINUTE && e.at < T0 + 5 * MINUTE,
        ),
      );
      expect(await read({ subscriptionId: randomUUID() })).toEqual([]);
      expect(await read({ since: T0 + 3 * MINUTE, until: T0 + 3 * MINUTE })).toEqual([]);
    });

    test('paging a filter by sequence reads each matching attempt once', async (repository) => {
      const { b, newest } = await six(repository);
      const pages: DeliveryLogEntry[] = [];
      let before: number | undefined;
      for (;;) {
        const page = await repository.attempts('acme', {
          subscriptionId: b,
          limit: 2,
          ...(before === undefined ? {} : { beforeSequence: before }),
        });
        pages.push(...page);
        if (page.length < 2) break;
        before = page.at(-1)!.sequence;
      }
      expect(pages).toEqual(newest.filter((e) => e.subscriptionId === b));
    });
  });

  describe('deleteAttemptsBefore', () => {
    test('deletes attempts of every account older than the time, at most limit a call', async (repository) => {
      const id = randomUUID();
      for (let i = 0; i < 5; i++) {
        await repository.recordAttempt('acme', anAttempt(id, { at: T0 + i * MINUTE }));
        await repository.recordAttempt('globex', anAttempt(id, { at: T0 + i * MINUTE }));
      }
      const cutoff = T0 + 3 * MINUTE; // three of each account are older
      expect(await repository.deleteAttemptsBefore(cutoff, 4)).toBe(4);
      expect(await repository.deleteAttemptsBefore(cutoff, 4)).toBe(2);
      expect(await repository.deleteAttemptsBefore(cutoff, 4)).toBe(0);
      for (const account of ['acme', 'globex']) {
        const left = await repository.attempts(account, { limit: 10 });
        expect(left.map((e) => e.at)).toEqual([T0 + 4 * MINUTE, T0 + 3 * MINUTE]);
      }
    });

    test('sequences keep growing after the log was emptied', async (repository) => {
      const id = randomUUID();
      const { entry: first } = await repository.recordAttempt('acme', anAttempt(id, { at: T0 }));
      expect(await repository.deleteAttemptsBefore(T0 + 1, 10)).toBe(1);
      const { entry: next } = await repository.recordAttempt('acme', anAttempt(id, { at: T0 + 2 }));
      expect(next.sequence).toBeGreaterThan(first.sequence);
      expect(
        await repository.attempts('acme', { beforeSequence: next.sequence, limit: 10 }),
      ).toEqual([]);
    });
  });
}
