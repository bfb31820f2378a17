/**
 * The outbox's half of the repository on PostgreSQL: messages and their deliveries, the log of
 * attempts, claims, replays and retention, each write of many callers at once in one statement
 * (group commit). {@link PostgresSubscriptionRepository} holds one and hands these calls to it,
 * as the memory repository does its `MemoryOutbox`.
 * @module
 */
import { type GroupBatching, GroupCommit } from '../internal/group-commit.js';
import type { DeliveryAttempt } from '../webhooks/delivery/attempt.js';
import type {
  AttemptQuery,
  AttemptRecord,
  DeliveryClaim,
  DeliveryKey,
  DeliveryLogEntry,
  DeliveryStatus,
  KeptMessage,
  MessageKey,
  OutboxDelivery,
  OutboxMessage,
  PendingDelivery,
  ReplayPlan,
  ReplayResult,
  ReplaySelection,
} from '../webhooks/store/repository.js';
import type { EmbeddedUpkeep } from './embedded-upkeep.js';
import {
  type AttemptRow,
  type AttemptToRecord,
  attemptColumns,
  count,
  type KeptRow,
  type MessageToRecord,
  messageColumns,
  type PendingRow,
  toKept,
  toLogEntry,
  toPending,
} from './rows.js';
import { type DatabaseKind, inTransaction, type RunRows } from './sql-database.js';
import type { Statements } from './statements.js';

/** What the outbox runs on, from its repository. @internal */
export interface PostgresOutboxSettings {
  readonly database: DatabaseKind;
  readonly sql: Statements;
  /** Runs a statement (prepared where the repository prepares them). */
  readonly rows: RunRows;
  readonly batches: GroupBatching;
  /** Statistics kept current on an embedded database; none on a pg Pool. */
  readonly upkeep: EmbeddedUpkeep | undefined;
}

/** The outbox's statements and their batches. @internal */
export class PostgresOutbox {
  readonly #database: DatabaseKind;
  readonly #sql: Statements;
  readonly #rows: RunRows;
  readonly #upkeep: EmbeddedUpkeep | undefined;
  // Publishes and attempts in flight at once share a statement each (see GroupCommit).
  readonly #messages: GroupCommit<MessageToRecord, KeptMessage | undefined>;
  readonly #attempts: GroupCommit<AttemptToRecord, AttemptRecord>;

  constructor(settings: PostgresOutboxSettings) {
    const { batches } = settings;
    this.#database = settings.database;
    this.#sql = settings.sql;
    this.#rows = settings.rows;
    this.#upkeep = settings.upkeep;
    this.#messages = new GroupCommit({
      ...batches,
      write: (batch) => this.#recordMessages(batch),
      // A statement inserts a message once, and takes an idempotency key once: the same id, or
      // the same key, again goes in the next batch.
      keyOf: ({ message, key }) => {
        const id = JSON.stringify([message.accountCode, message.id]);
        return key === undefined ? id : [id, JSON.stringify([message.accountCode, null, key.key])];
      },
      // Recording a message again changes nothing: after a failed batch, each goes alone, so that
      // a message the server refuses fails its own publish only.
      retryAlone: true,
    });
    this.#attempts = new GroupCommit({
      ...batches,
      write: (batch) => this.#recordAttempts(batch),
    });
  }

  recordAttempt(
    accountCode: string,
    attempt: DeliveryAttempt,
    options: { readonly leaseUntil?: number } = {},
  ): Promise<AttemptRecord> {
    return this.#attempts.add({ accountCode, attempt, leaseUntil: options.leaseUntil ?? null });
  }

  /** A batch of attempts, recorded one after the other in one call (`record_attempts`). */
  async #recordAttempts(batch: readonly AttemptToRecord[]): Promise<AttemptRecord[]> {
    const rows = await this.#rows<{
      n: string | number;
      sequence: string | number;
      failing_since_ms: number | null;
      failed_messages: number | null;
      ended_since_ms: number | null;
      ended_messages: number | null;
    }>(this.#sql.recordAttempts, attemptColumns(batch));
    // Each attempt's entry in the log, and its delivery moved.
    this.#upkeep?.wrote(2 * batch.length);
    const byPosition = new Map(rows.map((row) => [Number(row.n), row]));
    return batch.map(({ attempt }, i) => {
      const row = byPosition.get(i + 1);
      if (row === undefined)
        throw new Error(`record_attempts answered no row for attempt ${i + 1}`);
      const failingSince = row.failing_since_ms;
      const endedSince = row.ended_since_ms;
      return {
        entry: { ...attempt, sequence: Number(row.sequence) },
        health:
          failingSince === null
            ? { failedMessages: 0 }
            : { failingSince, failedMessages: Number(row.failed_messages ?? 0) },
        ...(endedSince === null
          ? {}
          : {
              ended: { failingSince: endedSince, failedMessages: Number(row.ended_messages ?? 0) },
            }),
      };
    });
  }

  async attempts(accountCode: string, query: AttemptQuery): Promise<readonly DeliveryLogEntry[]> {
    const { beforeSequence, subscriptionId, outcomes, since, until } = query;
    const before =
      beforeSequence === undefined ? 2 ** 62 : Math.max(0, Math.min(beforeSequence, 2 ** 62));
    const rows = await this.#rows<AttemptRow>(this.#sql.attempts, [
      accountCode,
      Math.floor(before) || 0,
      subscriptionId ?? null,
      outcomes === undefined ? null : [...outcomes],
      since ?? null,
      until ?? null,
      count(query.limit),
    ]);
    return rows.map(toLogEntry);
  }

  async deleteAttemptsBefore(at: number, limit: number): Promise<number> {
    const [row] = await this.#rows<{ deleted: number }>(this.#sql.deleteAttemptsBefore, [
      at,
      count(limit),
    ]);
    return this.#deleted(row);
  }

  recordMessage(
    message: OutboxMessage,
    deliveries: readonly OutboxDelivery[],
    options: { readonly leaseUntil: number; readonly key?: MessageKey | undefined },
  ): Promise<KeptMessage | undefined> {
    const { leaseUntil, key } = options;
    return this.#messages.add(
      key === undefined
        ? { message, deliveries, leaseUntil }
        : { message, deliveries, leaseUntil, key },
    );
  }

  /**
   * A batch of messages and their deliveries, in one statement; one with a keyed message among
   * them in the statement that takes keys too (a batch without keeps its plain statement).
   */
  async #recordMessages(batch: readonly MessageToRecord[]): Promise<(KeptMessage | undefined)[]> {
    const answers = new Array<KeptMessage | undefined>(batch.length).fill(undefined);
    // Each message and its deliveries.
    const written = batch.reduce((sum, item) => sum + 1 + item.deliveries.length, 0);
    if (!batch.some((item) => item.key !== undefined)) {
      await this.#rows(this.#sql.recordMessages, messageColumns(batch));
      this.#upkeep?.wrote(written);
      return answers;
    }
    const rows = await this.#rows<KeptRow>(
      this.#sql.recordKeyedMessages,
      messageColumns(batch, true),
    );
    this.#upkeep?.wrote(written);
    for (const row of rows) answers[Number(row.n) - 1] = toKept(row);
    batch.forEach((item, i) => {
      if (item.key !== undefined && answers[i] === undefined) {
        throw new Error(`recordKeyedMessages answered no row for keyed message ${i + 1}`);
      }
    });
    return answers;
  }

  async claimDeliveries(claim: DeliveryClaim): Promise<readonly PendingDelivery[]> {
    const limit = count(claim.limit);
    if (limit === 0 || Number.isNaN(claim.dueBy)) return [];
    const rows = await this.#rows<PendingRow>(
      claim.released === true ? this.#sql.claimReleasedDeliveries : this.#sql.claimDeliveries,
      [claim.dueBy, claim.leaseUntil, limit],
    );
    return rows.map(toPending);
  }

  async releaseLeases(dueBy: number): Promise<number> {
    if (Number.isNaN(dueBy)) return 0;
    const [row] = await this.#rows<{ released: number }>(this.#sql.releaseLeases, [dueBy]);
    return Number(row?.released ?? 0);
  }

  async releaseDeliveries(deliveries: readonly DeliveryKey[], leaseUntil: number): Promise<void> {
    if (deliveries.length === 0) return;
    await this.#rows(this.#sql.releaseDeliveries, [
      deliveries.map((d) => d.accountCode),
      deliveries.map((d) => d.messageId),
      deliveries.map((d) => d.subscriptionId),
      leaseUntil,
    ]);
  }

  async replay(
    accountCode: string,
    selection: ReplaySelection,
    plan: ReplayPlan,
  ): Promise<ReplayResult> {
    const pace = [plan.at, count(plan.inline), plan.leaseUntil, plan.paceMs];
    const [lock, text, params] =
      'messageId' in selection
        ? [
            this.#sql.replayPacesOfMessage,
            this.#sql.replayMessage,
            [accountCode, selection.messageId, ...pace],
          ]
        : [
            this.#sql.replayPacesOfSubscription,
            this.#sql.replaySubscription,
            [accountCode, selection.subscriptionId, ...pace, selection.since],
          ];
    // Two statements in one transaction: the subscriptions' pacing rows, locked in one order,
    // then their deliveries (see statements.ts).
    const rows = await inTransaction(this.#database, async (tx) => {
      const held = await this.#rows<{ subscription_id: string }>(lock, params.slice(0, 2), tx);
      return this.#rows<PendingRow & { found: boolean; total: number; paced_until: number | null }>(
        text,
        [...params, held.map((row) => row.subscription_id)],
        tx,
      );
    });
    const pacedUntil = rows[0]?.paced_until ?? null;
    return {
      found: rows[0]?.found === true,
      total: Number(rows[0]?.total ?? 0),
      due: rows.filter((row) => row.message_id !== null).map(toPending),
      ...(pacedUntil === null ? {} : { pacedUntil: Number(pacedUntil) }),
    };
  }

  async deliveryStatus(
    accountCode: string,
    messageId: string,
    subscriptionId: string,
  ): Promise<DeliveryStatus | undefined> {
    const [row] = await this.#rows<{ status: DeliveryStatus }>(this.#sql.deliveryStatus, [
      accountCode,
      messageId,
      subscriptionId,
    ]);
    return row?.status;
  }

  async deleteMessagesBefore(at: number, limit: number): Promise<number> {
    const [row] = await this.#rows<{ deleted: number }>(this.#sql.deleteMessagesBefore, [
      at,
      count(limit),
    ]);
    return this.#deleted(row);
  }

  async deleteExpiredKeys(at: number, limit: number): Promise<number> {
    if (Number.isNaN(at)) return 0;
    const [row] = await this.#rows<{ deleted: number }>(this.#sql.deleteExpiredKeys, [
      at,
      count(limit),
    ]);
    return this.#deleted(row);
  }

  /** How many rows a retention statement deleted, noted as written to the outbox's tables. */
  #deleted(row: { deleted: number } | undefined): number {
    const deleted = Number(row?.deleted ?? 0);
    this.#upkeep?.wrote(deleted);
    return deleted;
  }

  /** Let an analysis of the tables under way end. */
  async close(): Promise<void> {
    await this.#upkeep?.close();
  }
}
