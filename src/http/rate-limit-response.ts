/**
 * The specification's 429 "Rate limit exceeded", built from a refused decision, and the headers of
 * admitted responses. Pure: the time comes from the decision.
 * @module
 */
import { aFunction, anything, readOptions, refused } from '../internal/options.js';
import { readSafely } from '../internal/read-once.js';
import { compactStatuses } from '../limits/decision.js';
import type { AdmittedDecision, RefusedDecision } from '../limits/limiter.js';
import type { Policy } from '../limits/policy.js';
import { formatHttpDate } from './http-date.js';
import type { ResponseParts } from './problem-details.js';
import {
  fieldPolicies,
  fieldsRule,
  type RateLimitFieldPolicies,
  type RateLimitFields,
  readPolicy,
  readStatuses,
  writeCompactFields,
  writeFields,
} from './rate-limit-fields.js';
import {
  DEFAULT_TRACKING_ID_HEADER,
  headerName,
  resolveTrackingId,
  type TrackingIdSource,
} from './tracking-id.js';

/** Options of the 429 builder and of {@link admittedHeaders}. */
export interface RateLimitResponseOptions {
  /** The request's tracking id header value, used when well-formed. */
  trackingId?: string | null | undefined;
  /** Makes a tracking id when the request has none. @defaultValue {@link randomTrackingId} */
  trackingIds?: TrackingIdSource;
  /**
   * The tracking id header, read from the request and written on the response: a field name token
   * of at most 64 characters; names with a meaning of their own in HTTP are refused
   * (`invalid_header_name`, list in docs/http.md).
   * @defaultValue {@link DEFAULT_TRACKING_ID_HEADER}
   */
  trackingIdHeader?: string;
  /**
   * Add the draft-10 `RateLimit-Policy` and `RateLimit` fields: `true` names the policy closest
   * to being exhausted (the refusing one on a 429), `'all'` every policy that applied (see
   * docs/http.md).
   * @defaultValue false
   */
  rateLimitHeaders?: boolean | 'all';
}

// 15 digits, the most a Structured Field integer holds, so it can also be the RateLimit `t`.
const MAX_RETRY_AFTER = 999_999_999_999_999;

function wholeSeconds(value: number): number {
  if (!Number.isFinite(value)) return value > 0 ? MAX_RETRY_AFTER : 1;
  return Math.min(Math.max(1, Math.ceil(value)), MAX_RETRY_AFTER);
}

/**
 * The 429 response for a refused decision, as plain parts any framework can write. Any decision
 * whose `allowed` reads `false` gets its 429; unreadable members count as absent (docs/http.md).
 * @param decision - a refused decision from the limiter
 * @param options - tracking id, its header and source, RateLimit fields
 * @returns status 429, lower-case header names, and the text body
 * @throws ConfigurationError `invalid_option` when `decision` is not a refused decision or
 * `options` cannot be read; `invalid_header_name` or `invalid_tracking_id` for bad options
 * @example
 * ```ts
 * const decision = limiter.check(request);
 * if (!decision.allowed) {
 *   const { status, headers, body } = rateLimitResponseParts(decision, {
 *     trackingId: req.headers['service-tracking-id'],
 *   });
 *   res.writeHead(status, headers).end(body);
 * }
 * ```
 */
export function rateLimitResponseParts(
  decision: RefusedDecision,
  options: RateLimitResponseOptions = {},
): ResponseParts {
  checkDecision(decision, false, 'rateLimitResponseParts');
  const { header, trackingId, withFields } = resolved(options, 'rateLimitResponseParts');
  return refusalParts(readRefusal(decision), header, trackingId, withFields);
}

/**
 * The 429 parts, header name checked and tracking id resolved beforehand (as the middleware does).
 * @param header - the tracking id header, lower case
 */
export function refusalParts(
  decision: RefusedDecision,
  header: string,
  trackingId: string,
  withFields: RateLimitFieldPolicies | false,
): ResponseParts {
  const seconds = wholeSeconds(decision.retryAfterSeconds);
  const now = Number.isFinite(decision.now) ? decision.now : 0;
  const resumeAt = formatHttpDate(now + seconds * 1000);
  const headers: Record<string, string> = {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    'retry-after': String(seconds),
    [header]: trackingId,
  };
  if (withFields) {
    const refusal = { retryAfterSeconds: seconds, policy: decision.policy };
    addFields(headers, writeFields(decision.statuses, refusal, withFields));
  }
  return { status: 429, headers, body: refusalText(decision, seconds, resumeAt, trackingId) };
}

/**
 * The 429 response for a refused decision as a web `Response` (Fetch API runtimes, Hono).
 * @param decision - a refused decision from the limiter
 * @param options - as for {@link rateLimitResponseParts}
 * @throws ConfigurationError as {@link rateLimitResponseParts}
 */
export function rateLimitResponse(
  decision: RefusedDecision,
  options: RateLimitResponseOptions = {},
): Response {
  const parts = rateLimitResponseParts(decision, options);
  return new Response(parts.body, { status: parts.status, headers: parts.headers });
}

/**
 * The headers of an admitted response: the tracking id, and the RateLimit fields when enabled.
 * @param decision - an admitted decision
 * @param options - as for {@link rateLimitResponseParts}
 * @throws ConfigurationError as {@link rateLimitResponseParts}, for a decision not admitted
 */
export function admittedHeaders(
  decision: AdmittedDecision,
  options: RateLimitResponseOptions = {},
): Record<string, string> {
  checkDecision(decision, true, 'admittedHeaders');
  const { header, trackingId, withFields } = resolved(options, 'admittedHeaders');
  const statuses = withFields ? readStatuses(readSafely(decision, 'statuses'), new Map()) : [];
  // A copy: the caller may change what it is given.
  return { ...admittedParts({ ...ADMITTED, statuses }, header, trackingId, withFields) };
}

// The members of an admitted decision that admittedParts does not read.
const ADMITTED = { allowed: true, now: 0, release: () => undefined } as const;

// A plain copy, read once and safely, so the 429 is built from values that cannot throw. The
// refusing policy's copy is the one in the statuses, so the fields still know which refused.
function readRefusal(decision: RefusedDecision): RefusedDecision {
  const copies = new Map<unknown, Policy>();
  const statuses = readStatuses(readSafely(decision, 'statuses'), copies);
  const given = readSafely(decision, 'policy');
  const policy = copies.get(given) ?? readPolicy(given);
  const seconds = readSafely(decision, 'retryAfterSeconds');
  const now = readSafely(decision, 'now');
  const reason = readSafely(decision, 'reason');
  return {
    allowed: false,
    retryAfterSeconds: typeof seconds === 'number' ? seconds : Number.NaN,
    retryAt: 0,
    policy,
    reason: (typeof reason === 'string' ? reason : 'limit') as RefusedDecision['reason'],
    statuses,
    now: typeof now === 'number' ? now : 0,
  };
}

/**
 * The admitted headers, header name checked and tracking id resolved beforehand.
 * @param header - the tracking id header, lower case; `undefined` leaves the tracking id out
 */
export function admittedParts(
  decision: AdmittedDecision,
  header: string | undefined,
  trackingId: string,
  withFields: RateLimitFieldPolicies | false,
): Readonly<Record<string, string>> {
  const headers: Record<string, string> = header === undefined ? {} : { [header]: trackingId };
  if (!withFields) return headers;
  // A decision of this library's limiter: its fields from the store's compact statuses.
  const compact = compactStatuses(decision);
  const fields =
    compact === undefined
      ? writeFields(decision.statuses, undefined, withFields)
      : writeCompactFields(compact.policies, compact.values, withFields);
  // The two fields alone are the headers as they are (kept, and frozen, where they name one policy).
  if (header === undefined && fields.ratelimit !== '' && fields['ratelimit-policy'] !== '') {
    return fields;
  }
  addFields(headers, fields);
  return headers;
}

// An empty Structured Field list is left out of the message, never sent empty (RFC 9651, 3.1).
function addFields(headers: Record<string, string>, fields: RateLimitFields): void {
  if (fields['ratelimit-policy'] !== '') headers['ratelimit-policy'] = fields['ratelimit-policy'];
  if (fields.ratelimit !== '') headers.ratelimit = fields.ratelimit;
}

const optionRules = {
  trackingId: anything('a tracking id header value'),
  trackingIds: aFunction<TrackingIdSource>('returns a tracking id'),
  trackingIdHeader: headerName,
  rateLimitHeaders: fieldsRule,
};

const optionDefaults = {
  trackingIdHeader: DEFAULT_TRACKING_ID_HEADER.toLowerCase(),
  rateLimitHeaders: false,
} as const;

function resolved(
  options: RateLimitResponseOptions,
  caller: string,
): { header: string; trackingId: string; withFields: RateLimitFieldPolicies | false } {
  const read = readOptions(options, `${caller}()`, optionRules, {
    defaults: optionDefaults,
    example: '{ trackingId }',
  });
  return {
    header: read.trackingIdHeader,
    trackingId: resolveTrackingId(read.trackingId as string | null | undefined, read.trackingIds),
    withFields: fieldPolicies(read.rateLimitHeaders),
  };
}

// The public builders take decisions from anywhere: one of the wrong kind, or whose `allowed`
// cannot be read, is a typed error, not a TypeError from deep inside.
function checkDecision(decision: unknown, allowed: boolean, caller: string): void {
  if (
    typeof decision !== 'object' ||
    decision === null ||
    readSafely(decision, 'allowed') !== allowed
  ) {
    throw refused(
      `${caller}() decision`,
      `${allowed ? 'an admitted' : 'a refused'} decision from the limiter (allowed: ${allowed})`,
      decision,
    );
  }
}

function refusalText(
  decision: RefusedDecision,
  seconds: number,
  resumeAt: string,
  trackingId: string,
): string {
  const name = decision.policy?.name;
  let which: string;
  if (decision.reason === 'unavailable') {
    which =
      'No limit of yours was reached: the service cannot check its limits right now and refuses until it can.';
  } else if (decision.reason === 'capacity' || name === undefined) {
    which =
      'No limit of yours was reached: the service is tracking as many clients as it can and cannot start counting requests for this one right now.';
  } else if (decision.reason === 'blocked') {
    which = `Limit hit: ${name}. An earlier request was refused under it, and calls stay paused until the time announced then.`;
  } else {
    which = `Limit hit: ${name}.`;
  }
  return [
    'Too many requests.',
    which,
    `Calls may resume in ${seconds} ${seconds === 1 ? 'second' : 'seconds'}, at ${resumeAt} (Retry-After: ${seconds}).`,
    'A request sent before then is not processed and gets a new Retry-After.',
    `Tracking id: ${trackingId}`,
    '',
  ].join('\n');
}
