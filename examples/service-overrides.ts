/**
 * The admin API's overrides of a client's limits, `/admin/overrides/{clientId}`: PUT sets one from
 * a JSON body (a multiplier of the default limits or another preset, for every account or one,
 * with an expiry), GET reads the client's, DELETE removes one. Bodies and queries are read
 * strictly: every mistake is a 400 that names what to change, and the source's own checks (the
 * library's typed errors) become 400s with their code and message.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Clock,
  isConfigurationError,
  isInvalidRequestError,
  type LimitOverride,
  type OverrideEntry,
  type OverrideTarget,
  type ResponseParts,
} from '../src/index.js';
import { RedisStoreError } from '../src/redis/index.js';
import { jsonParts as json, notAllowed, problem, readJson } from './service-http.js';

/**
 * What the admin API needs of an overrides source. `MemoryOverrides` answers at once; a source
 * shared through Redis answers in promises: both are awaited.
 */
export interface AdminOverrideSource {
  /** Set the override of a client or of one account; the override as held. */
  set(target: OverrideTarget, override: LimitOverride): OverrideEntry | Promise<OverrideEntry>;
  /** Remove one; whether there was one. */
  delete(target: OverrideTarget): boolean | Promise<boolean>;
  /** Every override held (expired ones may be among them); without it GET is not served. */
  list?(): readonly OverrideEntry[] | Promise<readonly OverrideEntry[]>;
}

/** The path of a client's overrides: the client id, percent-encoded. */
export const OVERRIDES_PATH = /^\/admin\/overrides\/([^/]*)$/;

/** The longest override a PUT may set: ten years. */
export const MAX_TTL_SECONDS = 10 * 365 * 86_400;

/** The longest client id and account code, as the limiter and the source take them. */
const MAX_ID_LENGTH = 256;

/** The fields of a PUT body. */
const BODY_FIELDS: readonly string[] = [
  'multiplier',
  'preset',
  'accountCode',
  'expiresAt',
  'ttlSeconds',
];

const BODY_EXAMPLE =
  '{"multiplier": 2} or {"preset": "live", "accountCode": "DEV-ACME", "ttlSeconds": 3600}';

/** The library's configuration codes an override's body can cause; any other is the service's bug. */
const OVERRIDE_CODES: ReadonlySet<string> = new Set(['invalid_override', 'unknown_preset']);

/** An RFC 3339 date-time with a time zone. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

type Read<T> = { ok: true; value: T } | { ok: false; reply: ResponseParts };

const refuse = (code: string, detail: string): Read<never> => ({
  ok: false,
  reply: problem(400, code, 'Invalid override', detail),
});

/** How the override routes run. */
export interface OverrideRoutesOptions {
  /** Where overrides are held: the limiter's `overrides`. */
  source: AdminOverrideSource;
  /** The service's clock: `ttlSeconds` counts from it, and GET leaves out what has expired. */
  clock: Clock;
}

/** One request to `/admin/overrides/{clientId}`, its admin key already checked. */
export interface OverrideCall {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** GET (HEAD too), PUT or DELETE; anything else is a 405. */
  method: string;
  /** The client id as the path has it, percent-encoded. */
  rawClientId: string;
}

/** The override routes over one source. */
export function overrideRoutes(options: OverrideRoutesOptions) {
  const { source, clock } = options;
  const methods = source.list === undefined ? ['PUT', 'DELETE'] : ['GET', 'PUT', 'DELETE'];

  const put = async (call: OverrideCall, clientId: string): Promise<ResponseParts> => {
    const body = await readJson(call.req, call.res);
    if (!body.ok) return body.reply;
    const read = overrideOfBody(body.value, clock.now());
    if (!read.ok) return read.reply;
    const { accountCode, override } = read.value;
    return json(200, entryBody(await source.set({ clientId, accountCode }, override)));
  };

  const remove = async (clientId: string, accountCode: string | undefined) => {
    const removed = await source.delete({ clientId, accountCode });
    return json(200, { clientId, ...(accountCode === undefined ? {} : { accountCode }), removed });
  };

  const get = async (clientId: string, accountCode: string | undefined) => {
    const ids = checkedIds(clientId, accountCode);
    if (!ids.ok) return ids.reply;
    const now = clock.now();
    const held = (await source.list!()).filter(
      (e) =>
        e.clientId === clientId &&
        (accountCode === undefined || e.accountCode === accountCode) &&
        (e.expiresAt === undefined || e.expiresAt > now),
    );
    return json(200, {
      clientId,
      ...(accountCode === undefined ? {} : { accountCode }),
      overrides: held.map(entryBody),
    });
  };

  return {
    /** Answer one request to a client's overrides. */
    async serve(call: OverrideCall): Promise<ResponseParts> {
      const { method, url } = call;
      if (!methods.includes(method)) return notAllowed(url.pathname, methods, method);
      const clientId = decoded(call.rawClientId);
      if (!clientId.ok) return clientId.reply;
      const query = accountCodeOf(url, method);
      if (!query.ok) return query.reply;
      try {
        if (method === 'PUT') return await put(call, clientId.value);
        if (method === 'DELETE') return await remove(clientId.value, query.value);
        return await get(clientId.value, query.value);
      } catch (error) {
        if (isInvalidRequestError(error)) {
          return problem(400, error.code, 'Invalid override', error.message);
        }
        if (isConfigurationError(error) && OVERRIDE_CODES.has(error.code)) {
          return problem(400, error.code, 'Invalid override', error.message);
        }
        if (error instanceof RedisStoreError) {
          return problem(503, 'store_unavailable', 'Overrides store unavailable', error.message);
        }
        throw error;
      }
    },
  };
}

/** The client id of the path, percent-decoded (its length is the source's to check). */
function decoded(raw: string): Read<string> {
  try {
    return { ok: true, value: decodeURIComponent(raw) };
  } catch {
    return {
      ok: false,
      reply: problem(
        400,
        'invalid_path_encoding',
        'Invalid path',
        'Percent-encode the client id as UTF-8 (%XX escapes of whole characters), as in /admin/overrides/demo-dev-app.',
      ),
    };
  }
}

/**
 * The ids of a GET, checked as the source checks a PUT's and a DELETE's: 1 to 256 characters (the
 * limiter's `maxIdLength`, which the demo leaves at 256).
 */
function checkedIds(clientId: string, accountCode: string | undefined): Read<undefined> {
  for (const [name, code, value] of [
    ['clientId', 'invalid_client_id', clientId],
    ['accountCode', 'invalid_account_code', accountCode],
  ] as const) {
    if (value !== undefined && (value.length === 0 || value.length > MAX_ID_LENGTH)) {
      return refuse(
        code,
        `An override's ${name} must be 1 to ${MAX_ID_LENGTH} characters (percent-encoded), as requests carry it, got ${value.length}.`,
      );
    }
  }
  return { ok: true, value: undefined };
}

/** GET and DELETE take `accountCode` once; PUT takes it in the body and no query at all. */
function accountCodeOf(url: URL, method: string): Read<string | undefined> {
  const query = (detail: string): Read<never> => ({
    ok: false,
    reply: problem(400, 'unknown_parameter', 'Invalid query', detail),
  });
  for (const name of new Set(url.searchParams.keys())) {
    if (method === 'PUT') {
      return query(
        `PUT takes no query parameters, got ${JSON.stringify(name.slice(0, 64))}; give accountCode, and everything else, in the JSON body.`,
      );
    }
    if (name !== 'accountCode') {
      return query(
        `Unknown query parameter ${JSON.stringify(name.slice(0, 64))}; this route takes accountCode (one account's override; absent: the client's).`,
      );
    }
  }
  const values = url.searchParams.getAll('accountCode');
  if (values.length > 1) {
    return {
      ok: false,
      reply: problem(400, 'repeated_parameter', 'Invalid query', 'Send accountCode at most once.'),
    };
  }
  return { ok: true, value: values[0] };
}

/**
 * A PUT body as the source's target and override: the multiplier or preset handed on as given
 * (the source checks them), the expiry read here from an RFC 3339 date-time or a number of
 * seconds from now.
 */
export function overrideOfBody(
  body: unknown,
  now: number,
): Read<{ accountCode: string | undefined; override: LimitOverride }> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return {
      ok: false,
      reply: problem(
        400,
        'invalid_body',
        'Invalid override',
        `Send a JSON object such as ${BODY_EXAMPLE}, got ${kindOf(body)}.`,
      ),
    };
  }
  const fields = body as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!BODY_FIELDS.includes(key)) {
      return {
        ok: false,
        reply: problem(
          400,
          'unknown_field',
          'Invalid override',
          `Unknown field ${JSON.stringify(key.slice(0, 64))}: an override takes multiplier or preset, optionally accountCode (one account; absent: every account of the client), and expiresAt (an RFC 3339 date-time) or ttlSeconds (whole seconds from now), not both.`,
        ),
      };
    }
  }
  const expiry = expiryOf(fields, now);
  if (!expiry.ok) return expiry;
  // Handed on as given: the source refuses a multiplier or preset of the wrong type or range,
  // neither or both, and a preset it does not have, with its own codes and messages.
  const override = {
    preset: fields.preset,
    multiplier: fields.multiplier,
    ...(expiry.value === undefined ? {} : { expiresAt: expiry.value }),
  } as LimitOverride;
  return { ok: true, value: { accountCode: fields.accountCode as string | undefined, override } };
}

/** The expiry of a body (ms), undefined for none. */
function expiryOf(fields: Record<string, unknown>, now: number): Read<number | undefined> {
  const { expiresAt, ttlSeconds } = fields;
  if (expiresAt !== undefined && ttlSeconds !== undefined) {
    return refuse(
      'invalid_override',
      'Give expiresAt (an RFC 3339 date-time) or ttlSeconds (whole seconds from now), not both.',
    );
  }
  if (ttlSeconds !== undefined) {
    if (!Number.isSafeInteger(ttlSeconds) || (ttlSeconds as number) < 1) {
      return refuse(
        'invalid_override',
        `ttlSeconds must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS} (ten years), got ${shown(ttlSeconds)}.`,
      );
    }
    if ((ttlSeconds as number) > MAX_TTL_SECONDS) {
      return refuse(
        'invalid_override',
        `ttlSeconds must be at most ${MAX_TTL_SECONDS} (ten years), got ${ttlSeconds}; leave it out for an override until removed.`,
      );
    }
    return { ok: true, value: now + (ttlSeconds as number) * 1000 };
  }
  if (expiresAt === undefined) return { ok: true, value: undefined };
  const ms = typeof expiresAt === 'string' ? parseDateTime(expiresAt) : Number.NaN;
  if (Number.isNaN(ms)) {
    return refuse(
      'invalid_override',
      `expiresAt must be an RFC 3339 date-time with a time zone, such as "2030-01-01T00:00:00Z", got ${shown(expiresAt)}.`,
    );
  }
  if (ms <= now) {
    return refuse(
      'invalid_override',
      `expiresAt ${expiresAt} has passed (it is now ${new Date(now).toISOString()}); give a later time, or leave it out for an override until removed.`,
    );
  }
  return { ok: true, value: ms };
}

/** The time of an RFC 3339 date-time, in ms; NaN for any other text or a day the month lacks. */
function parseDateTime(text: string): number {
  const parts = DATE_TIME.exec(text);
  if (parts === null) return Number.NaN;
  const [year, month, day, hour] = parts.slice(1, 5).map(Number) as [
    number,
    number,
    number,
    number,
  ];
  // Date.parse rolls 30 February over into March and hour 24 into the next day: refuse them. The
  // calendar repeats every 400 years; Date.UTC reads years below 100 as 19xx.
  const daysInMonth = new Date(Date.UTC(2000 + (year % 400), month, 0)).getUTCDate();
  if (day > daysInMonth || hour > 23) return Number.NaN;
  return Date.parse(text);
}

/** An override as the API shows it: the expiry as an RFC 3339 date-time. */
function entryBody(entry: OverrideEntry) {
  const { clientId, accountCode, preset, multiplier, expiresAt } = entry;
  return {
    clientId,
    ...(accountCode === undefined ? {} : { accountCode }),
    ...(preset === undefined ? { multiplier } : { preset }),
    ...(expiresAt === undefined ? {} : { expiresAt: new Date(expiresAt).toISOString() }),
  };
}

/** A JSON value as a message shows it, shortened. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}

function kindOf(value: unknown): string {
  if (value === undefined) return 'an empty body';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
