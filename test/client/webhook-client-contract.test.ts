/**
 * The webhook client's types against the service's OpenAPI document: the types openapi-typescript
 * generates from `webhookServiceOpenApi` now, and type-level equalities of each client method's
 * request body, query, answer and problem with the document's, compiled with the repository's
 * tsconfig. The client cannot import the service (test/layout.test.ts), so its types are written
 * apart; this test fails as soon as the two say different things of the wire.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { createWebhookClient } from '../../src/client/index.js';
import { createLimiter, FakeClock, webhookServiceOpenApi, window } from '../../src/index.js';
import { START } from '../support/webhook-service.js';

const root = resolve(import.meta.dirname, '../..');
const scratch = mkdtempSync(join(tmpdir(), 'webhook-contract-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// A base path and a limiter: the document with every response it can list (429 and
// rate_limit_unavailable included). No catalog: the client takes any event pattern.
const limiter = createLimiter({ policies: [window(3, '60s')], clock: new FakeClock(START) });
const document = webhookServiceOpenApi({ basePath: '/webhooks', limiter });

/** Each client method and the operation of the document it calls. */
const OPERATIONS = {
  'subscriptions.create': 'create',
  'subscriptions.list': 'list',
  'subscriptions.get': 'read',
  'subscriptions.update': 'change',
  'subscriptions.delete': 'delete',
  'subscriptions.rotateSecret': 'rotate',
  'subscriptions.replay': 'replaySubscription',
  'subscriptions.attempts': 'attempts',
  'messages.replay': 'replayMessage',
  auditLogs: 'auditLogs',
} as const;

/** The operations the client has no method for: the document itself. */
const NOT_IN_CLIENT = ['openApi'];

// The assertions, compiled beside the generated `openapi.ts`. `Same` is exact equality of the
// wire shapes: `readonly` and `readonly` arrays (the client's) are no difference on the wire, nor
// an optional member typed `never` (how the client's unions say "not in this member").
const ASSERTIONS = `
import type { components, operations } from './openapi.js';
import type {
  WebhookApiErrorDetails,
  WebhookApiIssue,
  WebhookAttemptOutcome,
  WebhookCallOptions,
  WebhookClient,
  WebhookListing,
} from '${join(root, 'src/client/index.js')}';

type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;

type Wire<T> = T extends readonly (infer I)[]
  ? Wire<I>[]
  : T extends object
    ? { -readonly [K in keyof T as [Exclude<T[K], undefined>] extends [never] ? never : K]: Wire<T[K]> }
    : T;
type Same<Client, Document> = Equal<Wire<Client>, Wire<Document>>;

type Subscriptions = WebhookClient['subscriptions'];
type Answer<F> = F extends (...args: never[]) => infer R
  ? R extends WebhookListing<unknown, infer P>
    ? P
    : Awaited<R>
  : never;
type Item<F> = F extends (...args: never[]) => WebhookListing<infer T, unknown> ? T : never;
type Json<O extends keyof operations, S extends keyof operations[O]['responses']> =
  operations[O]['responses'][S] extends { content: { 'application/json': infer J } } ? J : never;
type Body<O extends keyof operations> =
  NonNullable<operations[O]['requestBody']> extends { content: { 'application/json': infer J } }
    ? J
    : never;
type Query<O extends keyof operations> = NonNullable<operations[O]['parameters']['query']>;

// Request bodies: as the client sends them. replay's since may be a Date, sent as its ISO string.
type SentAs<T> = T extends Date ? string : T;
type Sent<T> = { [K in keyof T]: SentAs<T[K]> };
export type CreateBody = Assert<Same<Parameters<Subscriptions['create']>[0], Body<'create'>>>;
export type UpdateBody = Assert<Same<Parameters<Subscriptions['update']>[1], Body<'change'>>>;
export type ReplayBody = Assert<
  Same<Sent<Parameters<Subscriptions['replay']>[1]>, Body<'replaySubscription'>>
>;
// The calls without a body take none in the document either.
export type RotateNoBody = Assert<Equal<operations['rotate']['requestBody'], undefined>>;
export type MessageReplayNoBody = Assert<Equal<operations['replayMessage']['requestBody'], undefined>>;

// Answers.
export type CreateAnswer = Assert<Same<Answer<Subscriptions['create']>, Json<'create', 201>>>;
export type ListPage = Assert<Same<Answer<Subscriptions['list']>, Json<'list', 200>>>;
export type ListItem = Assert<Same<Item<Subscriptions['list']>, Json<'list', 200>['items'][number]>>;
export type GetAnswer = Assert<Same<Answer<Subscriptions['get']>, Json<'read', 200>>>;
export type UpdateAnswer = Assert<Same<Answer<Subscriptions['update']>, Json<'change', 200>>>;
export type DeleteAnswer = Assert<Equal<Answer<Subscriptions['delete']>, void>>;
export type DeleteNoContent = Assert<Equal<operations['delete']['responses'][204]['content'], undefined>>;
export type RotateAnswer = Assert<Same<Answer<Subscriptions['rotateSecret']>, Json<'rotate', 200>>>;
export type ReplayAnswer = Assert<
  Same<Answer<Subscriptions['replay']>, Json<'replaySubscription', 202>>
>;
export type AttemptsPage = Assert<Same<Answer<Subscriptions['attempts']>, Json<'attempts', 200>>>;
export type AttemptsItem = Assert<
  Same<Item<Subscriptions['attempts']>, Json<'attempts', 200>['items'][number]>
>;
export type MessageReplayAnswer = Assert<
  Same<Answer<WebhookClient['messages']['replay']>, Json<'replayMessage', 202>>
>;
export type AuditLogsPage = Assert<Same<Answer<WebhookClient['auditLogs']>, Json<'auditLogs', 200>>>;
export type AuditLogsItem = Assert<
  Same<Item<WebhookClient['auditLogs']>, Json<'auditLogs', 200>['items'][number]>
>;

// Path parameters: the ids the client puts in the path.
type Id = components['parameters']['id'];
export type Ids = Assert<
  Equal<
    | Parameters<Subscriptions['get']>[0]
    | Parameters<Subscriptions['update']>[0]
    | Parameters<Subscriptions['delete']>[0]
    | Parameters<Subscriptions['rotateSecret']>[0]
    | Parameters<Subscriptions['replay']>[0]
    | Parameters<Subscriptions['attempts']>[0]
    | Parameters<WebhookClient['messages']['replay']>[0],
    Id
  >
>;

// Queries: the client's options as the page iterators send them. startPage is the first
// pageNumber, startCursor the first cursor; an outcome list goes joined by commas (the document's
// pattern, checked at run time), a Date as its ISO string; the call options are no parameter.
type Renamed = { startPage: 'pageNumber'; startCursor: 'cursor' };
type QueryValue<T> = T extends Date ? string : T extends string | readonly string[] ? string : T;
type QuerySent<T> = {
  [K in keyof T as K extends keyof WebhookCallOptions
    ? never
    : K extends keyof Renamed
      ? Renamed[K]
      : K]: QueryValue<T[K]>;
};
type ListOptions = NonNullable<Parameters<Subscriptions['list']>[0]>;
type AttemptsOptions = NonNullable<Parameters<Subscriptions['attempts']>[1]>;
type AuditLogsOptions = NonNullable<Parameters<WebhookClient['auditLogs']>[0]>;
export type ListQuery = Assert<Same<QuerySent<ListOptions>, Query<'list'>>>;
export type AttemptsQuery = Assert<Same<QuerySent<AttemptsOptions>, Query<'attempts'>>>;
export type AuditLogsQuery = Assert<Same<QuerySent<AuditLogsOptions>, Query<'auditLogs'>>>;
type OutcomeFilter = NonNullable<AuditLogsOptions['outcome'] | AttemptsOptions['outcome']>;
export type OutcomeValues = Assert<
  Equal<OutcomeFilter, WebhookAttemptOutcome | readonly WebhookAttemptOutcome[]>
>;
export type Outcomes = Assert<
  Equal<WebhookAttemptOutcome, components['schemas']['DeliveryAttempt']['outcome']>
>;

// Problems: every problem any operation answers, and the shared answers. The client reads some of
// their members (those of WebhookApiErrorDetails but the request's method and url and the whole
// body it keeps), and of each issue its code, path and message: each must be a member of the
// document's problems, of a type the client's takes. A subset, not an equality: the client keeps
// the whole body as its problem. An issue without a path is left out and one without a message read as
// '' (src/client/webhook-exchange.ts), so the document may leave those two out.
type Problems<R> = R extends { content: { 'application/problem+json': infer P } } ? P : never;
type Problem =
  | { [O in keyof operations]: Problems<operations[O]['responses'][keyof operations[O]['responses']]> }[keyof operations]
  | Problems<components['responses'][keyof components['responses']]>;
type KeysOf<U> = U extends unknown ? keyof U : never;
type ReadOf<U, K extends PropertyKey> = U extends unknown
  ? K extends keyof U
    ? Exclude<U[K], undefined>
    : never
  : never;
type ProblemRead = Omit<WebhookApiErrorDetails, 'method' | 'url' | 'problem' | 'errors'> & {
  code: string;
  errors?: readonly unknown[];
};
export type ProblemMembers = Assert<Equal<Exclude<keyof ProblemRead, KeysOf<Problem>>, never>>;
export type ProblemTypes = Assert<
  Equal<
    { [K in keyof ProblemRead]-?: [ReadOf<Problem, K>] extends [Exclude<ProblemRead[K], undefined>] ? true : K }[keyof ProblemRead],
    true
  >
>;
type Issue = ReadOf<Problem, 'errors'>[number];
export type IssueMembers = Assert<Equal<Exclude<keyof WebhookApiIssue, KeysOf<Issue>>, never>>;
export type IssueTypes = Assert<
  Equal<
    { [K in keyof WebhookApiIssue]-?: [ReadOf<Issue, K>] extends [WebhookApiIssue[K]] ? true : K }[keyof WebhookApiIssue],
    true
  >
>;
`;

/** The generated types and the assertions, compiled; the diagnostics of both, as text. */
async function contractDiagnostics(): Promise<string[]> {
  const generated = astToString(await openapiTS(JSON.stringify(document)));
  writeFileSync(join(scratch, 'openapi.ts'), generated);
  writeFileSync(join(scratch, 'assertions.ts'), ASSERTIONS);
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const checked = [join(scratch, 'assertions.ts'), join(scratch, 'openapi.ts')];
  const program = ts.createProgram(checked, { ...options, noEmit: true });
  const diagnostics = [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...checked.flatMap((file) => {
      const source = program.getSourceFile(file);
      return source === undefined
        ? []
        : [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    }),
  ];
  return diagnostics.map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file === undefined || d.start === undefined) return `TS${d.code}: ${message}`;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    const text = d.file.text.split('\n')[line]?.trim();
    return `${d.file.fileName.slice(scratch.length + 1)}:${line + 1} ${text}\n  TS${d.code}: ${message}`;
  });
}

/** What the run-time checks read of the document. */
interface DocumentJson {
  readonly paths: Record<string, Record<string, { operationId?: string; parameters?: Ref[] }>>;
  readonly components: {
    readonly parameters: Record<string, { name: string; schema: { pattern?: string } }>;
    readonly schemas: { DeliveryAttempt: { properties: { outcome: { enum: string[] } } } };
  };
}
type Ref = { readonly $ref: string };
const doc = document as unknown as DocumentJson;

/** Each operation of the document: its id, method, path pattern and query parameters. */
const listed = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item).flatMap(([method, { operationId, parameters = [] }]) =>
    method === 'parameters' || operationId === undefined
      ? []
      : [
          {
            operationId,
            method: method.toUpperCase(),
            path: new RegExp(`^/webhooks${path.replace('{id}', '[^/]+')}$`),
            query: parameters.map(
              ({ $ref }) => doc.components.parameters[$ref.split('/').at(-1) ?? '']?.name,
            ),
          },
        ],
  ),
);

/** The outcome filter's pattern, and the outcomes an attempt can have. */
const outcomePattern = new RegExp(doc.components.parameters.outcome?.schema.pattern ?? '^$');
const outcomes = doc.components.schemas.DeliveryAttempt.properties.outcome.enum;

describe('the webhook client against the OpenAPI document', () => {
  it("types each method's bodies, queries, answers and problems as the document does", async () => {
    const diagnostics = await contractDiagnostics();
    expect(diagnostics, diagnostics.join('\n')).toEqual([]);
  });

  it("has a method for every operation of the document, and each calls its operation's method and path with its parameters", async () => {
    const calls: { method: string; url: URL }[] = [];
    const client = createWebhookClient({
      baseUrl: 'https://api.example.com/webhooks',
      fetch: async (input, init) => {
        const method = init?.method ?? 'GET';
        calls.push({ method, url: new URL(String(input)) });
        if (method === 'DELETE') return new Response(null, { status: 204 });
        // An empty page ends every listing at its first request.
        return Response.json({ items: [], endOfData: true, nextCursor: null });
      },
    });
    const query = {
      outcome: ['failed', 'retry'],
      since: new Date(0),
      until: '2026-01-01T00:00:00Z',
      limit: 5,
      startCursor: 'c',
    } as const;
    const firstPage = (listing: { pages(): AsyncIterable<unknown> }) =>
      listing.pages()[Symbol.asyncIterator]().next();
    const made: Record<keyof typeof OPERATIONS, () => Promise<unknown>> = {
      'subscriptions.create': () =>
        client.subscriptions.create({ endpointUrl: 'https://a.example', events: ['a/*'] }),
      'subscriptions.list': () =>
        firstPage(client.subscriptions.list({ pageSize: 5, startPage: 2 })),
      'subscriptions.get': () => client.subscriptions.get('s/1'),
      'subscriptions.update': () => client.subscriptions.update('s1', { description: null }),
      'subscriptions.delete': () => client.subscriptions.delete('s1'),
      'subscriptions.rotateSecret': () => client.subscriptions.rotateSecret('s1'),
      'subscriptions.replay': () => client.subscriptions.replay('s1', { since: new Date(0) }),
      'subscriptions.attempts': () => firstPage(client.subscriptions.attempts('s1', query)),
      'messages.replay': () => client.messages.replay('m1'),
      auditLogs: () => firstPage(client.auditLogs(query)),
    };
    expect([...Object.values(OPERATIONS), ...NOT_IN_CLIENT].sort()).toEqual(
      listed.map(({ operationId }) => operationId).sort(),
    );

    for (const [name, operationId] of Object.entries(OPERATIONS)) {
      calls.length = 0;
      await made[name as keyof typeof OPERATIONS]();
      expect(calls, name).toHaveLength(1);
      const [{ method, url }] = calls as [{ method: string; url: URL }];
      const called = listed.filter((op) => op.method === method && op.path.test(url.pathname));
      expect(
        called.map((op) => op.operationId),
        `${name}: ${method} ${url.pathname}`,
      ).toEqual([operationId]);
      const unlisted = [...url.searchParams.keys()].filter(
        (key) => !called[0]?.query.includes(key),
      );
      expect(unlisted, name).toEqual([]);
      const outcome = url.searchParams.get('outcome');
      if (outcome !== null) expect(outcome).toMatch(outcomePattern);
    }
  });

  it("writes the outcome filter in the document's pattern: the attempts' outcomes, joined by commas", () => {
    expect(outcomePattern.test(outcomes.join(','))).toBe(true);
    for (const outcome of outcomes) expect(outcomePattern.test(outcome)).toBe(true);
    expect(outcomePattern.test('delivered,nothing')).toBe(false);
  });
});
