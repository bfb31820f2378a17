/**
 * The operational events against an oracle written from their documentation, on a fake clock:
 * whatever the receivers answer, in whatever order the deliveries run (operational ones
 * included), the events published are exactly: `subscription-disabled` once per disable by the
 * service, `attempt-exhausted` once per delivery given up for its schedule, `attempt-failing`
 * exactly when a message's third failed attempt is recorded, `attempt-recovered` exactly at the
 * first success after a failing streak (an attempt sent and not delivered starts one); none about
 * the delivery of an operational event; each to the enabled subscriptions that name it, never to
 * the subscription it is about.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type DeliveryJob, retrySchedule } from '../../../src/index.js';
import { call, heldQueue, serviceSetup } from '../../support/webhook-service.js';

const SCHEDULE = retrySchedule({ maxAttempts: 4, initialDelayMs: 1_000, jitter: 0 });
const SUBSCRIPTIONS = [
  { host: 'a.example.com', events: ['reservation/*', 'operational/*'] },
  { host: 'b.example.com', events: ['reservation/*', 'operational/attempt-exhausted'] },
  { host: 'c.example.com', events: ['reservation/*', 'operational/*'], propertyIds: ['BER'] },
  {
    host: 'd.example.com',
    events: ['operational/attempt-failing', 'operational/attempt-recovered'],
  },
];

const stepArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ op: 'publish' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('run' as const),
      pick: fc.nat(30),
      status: fc.constantFrom(200, 200, 500, 500, 410),
    }),
  },
);

/** A subscription's pattern names the kind: the kind itself, or its topic's wildcard. */
const selects = (pattern: string, kind: string): boolean =>
  pattern === kind || (pattern.endsWith('/*') && kind.startsWith(pattern.slice(0, -1)));

interface Expected {
  readonly type: string;
  readonly data: unknown;
  readonly to: readonly string[];
}

describe('operational events: the oracle', () => {
  it('equal the events the documentation names, each once, never to the subscription concerned', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 60 }), async (steps) => {
        // Arrange
        const { held, make } = heldQueue();
        let status = 200;
        const made = serviceSetup({
          queue: make,
          disableAfterMs: Number.MAX_SAFE_INTEGER,
          delivery: { schedule: SCHEDULE, transport: async () => ({ status, headers: {} }) },
        });
        const ids: string[] = [];
        for (const { host, events, propertyIds } of SUBSCRIPTIONS) {
          const created = await call(made.service, 'POST', '/v1/subscriptions', {
            body: {
              endpointUrl: `https://${host}/in`,
              events,
              ...(propertyIds ? { propertyIds } : {}),
            },
          });
          ids.push(created.body.id);
        }
        const eventsOf = new Map(SUBSCRIPTIONS.map((s, i) => [ids[i]!, s.events]));
        const enabled = new Set(ids);
        // The oracle's state: each subscription's failing streak (its start, its messages).
        const streaks = new Map<string, { since: number; messages: Set<string> }>();
        const expected: Expected[] = [];
        const raise = (type: string, about: string, data: unknown) => {
          const to = [...enabled]
            .filter((id) => id !== about)
            .filter((id) => eventsOf.get(id)!.some((pattern) => selects(pattern, type)))
            .sort();
          if (to.length > 0) expected.push({ type, data, to });
        };
        const queued: DeliveryJob[] = [];
        const seen: DeliveryJob[] = [];
        const take = () => {
          const jobs = held.jobs.splice(0);
          queued.push(...jobs);
          seen.push(...jobs);
        };

        // Act
        try {
          for (const step of steps) {
            if (step.op === 'publish') {
              await made.service.publish({
                accountCode: 'ACME',
                kind: 'reservation/created',
                propertyId: 'BER',
              });
              take();
              continue;
            }
            if (queued.length === 0) continue;
            const [job] = queued.splice(step.pick % queued.length, 1);
            status = step.status;
            const operational = JSON.parse(job!.body).type.startsWith('operational/');
            const was = enabled.has(job!.subscriptionId);
            const result = await held.deliverer!.attempt(job!);
            if (!result.done) queued.push(result.job);
            take();
            // The oracle, from the report's facts alone.
            const report = result.report!;
            const about = report.subscriptionId;
            const sent = was; // a disabled subscription's job ends unsent (no secret)
            if (sent && report.outcome === 'disabled') {
              enabled.delete(about);
              raise('operational/subscription-disabled', about, {
                subscriptionId: about,
                reason: 'endpoint_gone',
              });
            }
            if (!operational && report.outcome !== 'delivered' && report.attempt === 3) {
              raise('operational/attempt-failing', about, {
                subscriptionId: about,
                messageId: report.id,
                attempts: 3,
              });
            }
            if (!operational && report.reason === 'attempts_exhausted') {
              raise('operational/attempt-exhausted', about, {
                subscriptionId: about,
                messageId: report.id,
                attempts: 4,
                reason: 'attempts_exhausted',
              });
            }
            if (sent && report.outcome === 'delivered') {
              const streak = streaks.get(about);
              streaks.delete(about);
              if (streak !== undefined && !operational) {
                raise('operational/attempt-recovered', about, {
                  subscriptionId: about,
                  messageId: report.id,
                  failingSince: new Date(streak.since).toISOString(),
                  failedMessages: streak.messages.size,
                });
              }
            } else if (sent) {
              const streak = streaks.get(about) ?? { since: report.at, messages: new Set() };
              streak.messages.add(report.id);
              streaks.set(about, streak);
            }
          }

          // Assert
          const published = new Map<string, { type: string; data: unknown; to: string[] }>();
          for (const job of seen) {
            const event = JSON.parse(job.body);
            if (!event.type.startsWith('operational/')) continue;
            const kept = published.get(event.id) ?? {
              type: event.type,
              data: event.data,
              to: [] as string[],
            };
            kept.to.push(job.subscriptionId);
            published.set(event.id, kept);
          }
          const actual = [...published.values()].map((e) => ({ ...e, to: [...e.to].sort() }));
          const order = (list: readonly Expected[]) =>
            [...list].map((e) => JSON.stringify(e)).sort();
          expect(order(actual)).toEqual(order(expected));
          expect(made.errors).toEqual([]);
        } finally {
          await made.service.close();
        }
      }),
      {
        numRuns: 100,
        examples: [
          // Two failing streaks of one subscription that start at one instant: two recoveries.
          [
            [
              { op: 'publish' },
              { op: 'run', pick: 0, status: 200 },
              { op: 'publish' },
              { op: 'run', pick: 0, status: 410 },
              { op: 'run', pick: 1, status: 200 },
              { op: 'run', pick: 4, status: 500 },
              { op: 'run', pick: 20, status: 200 },
              { op: 'run', pick: 0, status: 200 },
              { op: 'run', pick: 17, status: 500 },
              { op: 'run', pick: 0, status: 200 },
            ],
          ],
        ],
      },
    );
  });
});
