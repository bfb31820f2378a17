/**
 * The embedded default where users run it: the webhook service on PGlite (PostgreSQL in
 * WebAssembly), in memory and on a data folder, run with the built package in Node, Bun and Deno
 * (test/runtimes/embedded.test.ts). It imports nothing itself: the runner hands it the modules.
 * Each case throws on the first thing that is not as expected.
 */
import type * as Pglite from '@electric-sql/pglite';
import type * as Root from '../../src/index.js';
import type * as Postgres from '../../src/postgres/index.js';
import { type CaseResult, check, runCases, same } from './suite.js';

/** The modules the suite runs against. */
export interface EmbeddedModules {
  readonly root: typeof Root;
  readonly postgres: typeof Postgres;
  readonly pglite: typeof Pglite;
}

/** The marker before the results on a runner's output. */
export const EMBEDDED_RESULTS_MARKER = 'EMBEDDED-SUITE-RESULTS ';

/** A request to the service as the account ACME. */
function caller(service: Root.WebhookService) {
  return (method: string, path: string, body?: unknown) =>
    service.fetch(
      new Request(`https://api.example${path}`, {
        method,
        headers: { 'x-account': 'ACME', 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
}

/** What a delivery sent, as the transport saw it. */
interface Sent {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The service on `repository`, its deliveries handed to `sent` and answered 204. */
function serviceOn(
  root: typeof Root,
  repository: Root.SubscriptionRepository,
  sent: (request: Sent) => void,
): Root.WebhookService {
  return root.createWebhookService({
    repository,
    identify: (request) => ({
      clientId: 'app',
      accountCode: request.headers.get('x-account') ?? '',
    }),
    onWarning: () => {},
    delivery: {
      transport: async (request) => {
        sent({ url: request.url, headers: { ...request.headers }, body: request.body });
        return { status: 204, headers: {} };
      },
    },
  });
}

type Case = readonly [name: string, run: (m: EmbeddedModules, folder: string) => Promise<void>];

const CASES: readonly Case[] = [
  [
    'PGlite in memory: the schema migrated, a subscription created, an event published, delivered signed and its attempt recorded',
    async ({ root, postgres, pglite }) => {
      const database = new pglite.PGlite();
      const repository = await postgres.PostgresSubscriptionRepository.open({ database });
      check(repository.migration.version > 0, 'no schema version');
      same(repository.migration.applied.length, repository.migration.version, 'every migration');
      let delivered: (request: Sent) => void = () => {};
      const arrived = new Promise<Sent>((resolve) => {
        delivered = resolve;
      });
      const service = serviceOn(root, repository, (request) => delivered(request));
      const call = caller(service);
      try {
        await service.start();
        const created = await call('POST', '/v1/subscriptions', {
          endpointUrl: 'https://hooks.example.com/in',
          events: ['reservation/*'],
        });
        same(created.status, 201, 'created');
        const { id, secret } = (await created.json()) as { id: string; secret: string };
        const published = await service.publish({
          accountCode: 'ACME',
          kind: 'reservation/created',
          data: { reservationId: 'R1' },
        });
        same(published.deliveries, [id], 'the subscription owed a delivery');
        const request = await arrived;
        same(request.url, 'https://hooks.example.com/in', 'the endpoint');
        same(request.headers['webhook-id'], published.id, 'the message id');
        const verdict = await root.verifyWebhookAsync(request.body, request.headers, {
          secrets: secret,
        });
        check(verdict.ok, `the signature: ${JSON.stringify(verdict)}`);
        check(request.body.includes('"reservationId":"R1"'), 'the data in the body');
      } finally {
        // Waits for the delivery in flight, its attempt recorded.
        await service.close();
      }
      const listed = await repository.attempts('ACME', { limit: 10 });
      same(
        listed.map((entry) => [entry.outcome, entry.status]),
        [['delivered', 204]],
        'the attempts on record',
      );
      await repository.close?.();
      await database.close();
    },
  ],
  [
    'PGlite on a data folder: a subscription kept across a close and a reopen',
    async ({ root, postgres, pglite }, folder) => {
      const first = new pglite.PGlite(folder);
      const repository = await postgres.PostgresSubscriptionRepository.open({ database: first });
      const service = serviceOn(root, repository, () => {});
      let id: string;
      try {
        const created = await caller(service)('POST', '/v1/subscriptions', {
          endpointUrl: 'https://hooks.example.com/kept',
          events: ['folio/*'],
        });
        same(created.status, 201, 'created');
        id = ((await created.json()) as { id: string }).id;
      } finally {
        await service.close();
        await repository.close?.();
        await first.close();
      }
      const again = new pglite.PGlite(folder);
      const reopened = await postgres.PostgresSubscriptionRepository.open({ database: again });
      try {
        same(reopened.migration.applied, [], 'no migration the second time');
        const kept = await reopened.get('ACME', id);
        same(kept?.endpointUrl, 'https://hooks.example.com/kept', 'the subscription reopened');
      } finally {
        await reopened.close?.();
        await again.close();
      }
    },
  ],
];

/** The names of the cases, in their order. */
export const EMBEDDED_CASES: readonly string[] = CASES.map(([name]) => name);

/**
 * Run every case, each to its end or its first failure.
 * @param folder - an empty folder for the data folder's case
 */
export function runEmbeddedSuite(modules: EmbeddedModules, folder: string): Promise<CaseResult[]> {
  return runCases(CASES, modules, folder);
}
