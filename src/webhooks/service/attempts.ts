/**
 * The webhook service's listings of delivery attempts: `GET /v1/audit-logs` (every attempt of the
 * account) and `GET /v1/subscriptions/{id}/attempts`, newest first, paged by cursor, filtered by
 * outcome and time.
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import { problemResponse } from '../../http/problem-details.js';
import { encodeBase64Url } from '../../internal/base64.js';
import { sha256 } from '../../internal/sha256.js';
import { cursorNavigation } from '../../pagination/links.js';
import type { AttemptOutcome } from '../delivery/attempt.js';
import type { AttemptQuery } from '../store/repository.js';
import type { OperationRequest, ServiceContext } from './context.js';
import { serviceProblem, subscriptionNotFound } from './problems.js';

/** The outcomes an `outcome` filter may name: every outcome, each listed from the type. @internal */
export const ATTEMPT_OUTCOMES = Object.keys({
  delivered: true,
  retry: true,
  failed: true,
  disabled: true,
  lost: true,
} satisfies Record<AttemptOutcome, true>) as AttemptOutcome[];
const OUTCOMES: readonly AttemptOutcome[] = ATTEMPT_OUTCOMES;

/** An RFC 3339 date-time, as `since` and `until` take it. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** The time of an RFC 3339 date-time with a time zone, in ms; NaN for any other text. @internal */
export function parseDateTime(text: string): number {
  if (!DATE_TIME.test(text)) return Number.NaN;
  // Date.parse rolls a day past the month's end or hour 24 over (2026-02-30 is 2 March): refuse.
  const [year, month, day] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  // The calendar repeats every 400 years; Date.UTC reads years below 100 as 19xx.
  const daysInMonth = new Date(Date.UTC(2000 + (year % 400), month, 0)).getUTCDate();
  if (day > daysInMonth || Number(text.slice(11, 13)) > 23) return Number.NaN;
  return Date.parse(text);
}

/** The filters of a listing, as the repository reads them. */
type Filters = Omit<AttemptQuery, 'limit' | 'beforeSequence'>;

/** `GET /v1/audit-logs`: the account's attempts. @internal */
export function auditLogs(context: ServiceContext, input: OperationRequest) {
  return listAttempts(context, input, undefined);
}

/** `GET /v1/subscriptions/{id}/attempts`: one subscription's attempts (404 for an id not held). @internal */
export async function subscriptionAttempts(
  context: ServiceContext,
  input: OperationRequest,
): Promise<ResponseParts> {
  const held = await context.repository.get(input.accountCode, input.id);
  if (held === undefined) return subscriptionNotFound(input.id);
  return listAttempts(context, input, input.id);
}

async function listAttempts(
  context: ServiceContext,
  input: OperationRequest,
  subscriptionId: string | undefined,
): Promise<ResponseParts> {
  const { url } = input;
  const query = context.cursors(url.searchParams);
  if (!query.ok) return problemResponse(query.problem);
  const filters = readFilters(url.searchParams);
  if (!('ok' in filters)) return filters;
  const { limit, state } = query.value;
  // The query binds the cursor to the filters; the scope binds it to this listing's path, and the
  // account digest to the account it was issued to.
  const scope = subscriptionId ?? '';
  const account = accountDigest(input.accountCode);
  if (state !== undefined && state.account !== account) {
    return serviceProblem(400, 'cursor_account_mismatch', 'Cursor belongs to another account', {
      detail:
        'cursor was issued to another account; page with the cursors this account was given, or omit it to start a new listing.',
      extensions: { parameter: 'cursor' },
    });
  }
  if (state !== undefined && state.scope !== scope) {
    return serviceProblem(400, 'invalid_query', 'Invalid query', {
      detail:
        'cursor was issued for another listing; send it to the path that gave it, or omit it to start a new listing.',
      extensions: { parameter: 'cursor' },
    });
  }
  const before =
    state !== undefined && Number.isSafeInteger(state.before) ? state.before : undefined;
  // One more than asked tells whether a page follows.
  const found = await context.repository.attempts(input.accountCode, {
    ...filters.value,
    ...(subscriptionId === undefined ? {} : { subscriptionId }),
    ...(before === undefined ? {} : { beforeSequence: before }),
    limit: limit + 1,
  });
  const items = found.slice(0, limit);
  const last = items.at(-1);
  const more = found.length > limit && last !== undefined;
  const nav = cursorNavigation({
    url,
    limit,
    ...(more
      ? {
          nextCursor: context.codec.encode(
            { before: last.sequence, scope, account },
            { query: url.searchParams },
          ),
        }
      : {}),
  });
  return {
    status: 200,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      ...(nav.linkHeader === '' ? {} : { link: nav.linkHeader }),
    },
    body: JSON.stringify({
      items,
      limit,
      nextCursor: nav.nextCursor ?? null,
      endOfData: nav.endOfData,
      links: nav.links,
    }),
  };
}

// The cursor's state is signed, not encrypted: it names its account by a digest, not in clear.
function accountDigest(accountCode: string): string {
  return encodeBase64Url(sha256(accountCode)).slice(0, 22);
}

/** The `outcome`, `since` and `until` filters, or the 400 that names the bad one. */
function readFilters(
  params: URLSearchParams,
): { readonly ok: true; readonly value: Filters } | ResponseParts {
  const value: { outcomes?: AttemptOutcome[]; since?: number; until?: number } = {};
  const outcome = single(params, 'outcome', 'outcome=failed,retry');
  if (typeof outcome !== 'string' && outcome !== undefined) return outcome;
  if (outcome !== undefined) {
    const names = outcome.split(',');
    const unknown = names.find((name) => !(OUTCOMES as readonly string[]).includes(name));
    if (unknown !== undefined) {
      return invalidFilter(
        'outcome',
        `outcome must be one or more of ${OUTCOMES.join(', ')}, separated by commas (outcome=failed,retry); ${JSON.stringify(unknown.slice(0, 40))} is none of them.`,
      );
    }
    value.outcomes = [...new Set(names as AttemptOutcome[])];
  }
  for (const name of ['since', 'until'] as const) {
    const text = single(params, name, `${name}=2026-01-01T00:00:00Z`);
    if (typeof text !== 'string' && text !== undefined) return text;
    if (text === undefined) continue;
    const ms = parseDateTime(text);
    if (Number.isNaN(ms)) {
      return invalidFilter(
        name,
        `${name} must be an RFC 3339 date-time with a time zone, like ${name}=2026-01-01T00:00:00Z; got ${JSON.stringify(text.slice(0, 40))}.`,
      );
    }
    value[name] = ms;
  }
  if (value.since !== undefined && value.until !== undefined && value.until < value.since) {
    return invalidFilter('until', 'until must not be before since; swap them, or leave one out.');
  }
  return { ok: true, value };
}

/** The parameter's one value, `undefined` when absent, or the 400 for a repeated or empty one. */
function single(
  params: URLSearchParams,
  name: string,
  example: string,
): string | undefined | ResponseParts {
  const values = params.getAll(name);
  if (values.length === 0) return undefined;
  if (values.length > 1) {
    return invalidFilter(name, `${name} may be given once; send one, like ${example}.`);
  }
  const [text] = values as [string];
  return text === ''
    ? invalidFilter(name, `${name} is empty; give a value, like ${example}, or leave it out.`)
    : text;
}

function invalidFilter(parameter: string, detail: string): ResponseParts {
  return serviceProblem(400, 'invalid_query', 'Invalid query', {
    detail,
    extensions: { parameter },
  });
}
