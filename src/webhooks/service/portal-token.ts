/**
 * Portal tokens: short-lived bearer tokens that let one account's browser use the webhook
 * service's API, signed by the service's `portalKey` (HMAC-SHA256 over a compact JSON payload,
 * base64url) and never stored: the token carries its account, its expiry and whether it is
 * read-only. Form: `portal.<payload>.<mac>` (see docs/webhook-service.md, "Portal tokens").
 * @module
 */
import type { Clock } from '../../clock.js';
import { utf8 } from '../../internal/base64.js';
import { LONE_SURROGATE } from '../../internal/lone-surrogate.js';
import { aBoolean, INVALID, readOptions, refused, wholeNumber } from '../../internal/options.js';
import { constantTimeEqual, hmacSha256 } from '../../internal/sha256.js';
import { decodeBase64Url, encodeBase64Url } from '../../pagination/base64url.js';

/** What {@link WebhookService.portalToken} issues a token for. */
export interface PortalTokenRequest {
  /** The account the token acts as: non-empty, well-formed Unicode, no NUL, at most 256 characters. */
  readonly accountCode: string;
  /** How long the token is accepted, in seconds, 1 to 604800 (7 days). @defaultValue 3600 */
  readonly ttlSeconds?: number | undefined;
  /** A read-only token reads; every change it asks for is answered 403. @defaultValue false */
  readonly readOnly?: boolean | undefined;
}

/** A portal token, and the link that hands it to the portal page. */
export interface PortalToken {
  /** The bearer token: `Authorization: Bearer <token>`. */
  readonly token: string;
  /** `{basePath}/portal#token=<token>`: the token in the fragment, which no request carries. */
  readonly url: string;
  /** When the token stops being accepted, in ms (the service's clock): refused from then on. */
  readonly expiresAt: number;
  /** Whether the token is read-only. */
  readonly readOnly: boolean;
}

/** A verified token's claims. @internal */
export interface PortalClaims {
  readonly accountCode: string;
  readonly readOnly: boolean;
  readonly expiresAt: number;
}

/** A bearer token verified: its claims, or why it is refused. @internal */
export type PortalVerification =
  | { readonly ok: true; readonly claims: PortalClaims }
  | { readonly ok: false; readonly reason: 'invalid' | 'expired' };

/** What a portal token starts with: a bearer token without it is the platform's, not the portal's. @internal */
export const PORTAL_TOKEN_PREFIX = 'portal.';

/** The longest ttl: a week. */
export const MAX_PORTAL_TTL_SECONDS = 7 * 24 * 60 * 60;
const DEFAULT_TTL_SECONDS = 3600;
const MAX_ACCOUNT_LENGTH = 256;
// Longer than any token the service issues (a 256-character account escaped as JSON).
const MAX_TOKEN_LENGTH = 4096;
const MAC_BYTES = 32;
// The MAC covers this context too: a cursor signed with the same key is no portal token.
const SIGNATURE_CONTEXT = 'api-conventions.portal-token.v1\0';

const REQUEST_RULES = {
  accountCode: {
    expected: `the non-empty code of the account the token acts as (at most ${MAX_ACCOUNT_LENGTH} characters, well-formed Unicode, no NUL character)`,
    read: (value: unknown) =>
      typeof value === 'string' &&
      value !== '' &&
      value.length <= MAX_ACCOUNT_LENGTH &&
      !value.includes('\0') &&
      !LONE_SURROGATE.test(value)
        ? value
        : INVALID,
  },
  ttlSeconds: wholeNumber(1, MAX_PORTAL_TTL_SECONDS),
  readOnly: aBoolean,
};

/**
 * Issues and verifies portal tokens with one key, on one clock.
 * @internal
 */
export class PortalTokens {
  readonly #key: Uint8Array;
  readonly #clock: Clock;

  constructor(key: string | Uint8Array, clock: Clock) {
    this.#key = typeof key === 'string' ? utf8(key) : Uint8Array.from(key);
    this.#clock = clock;
  }

  /**
   * Sign a token for a request read by the one options reader.
   * @throws ConfigurationError `invalid_option` for a request that is no
   *   `{ accountCode, ttlSeconds?, readOnly? }` or a clock that gives no finite time
   */
  issue(request: PortalTokenRequest, basePath: string): PortalToken {
    const read = readOptions(request, 'portalToken', REQUEST_RULES, {
      defaults: { ttlSeconds: DEFAULT_TTL_SECONDS, readOnly: false },
      required: true,
      example: "{ accountCode: 'ACME', ttlSeconds: 3600, readOnly: true }",
    });
    if (read.accountCode === undefined) {
      throw refused('portalToken accountCode', REQUEST_RULES.accountCode.expected, undefined);
    }
    const now = this.#clock.now();
    if (!Number.isFinite(now)) throw refused('the webhook service clock.now()', 'finite ms', now);
    const expiresAt = now + read.ttlSeconds * 1000;
    // Short names: the token travels in a URL fragment and a header.
    const payload = utf8(JSON.stringify({ a: read.accountCode, e: expiresAt, r: read.readOnly }));
    const token = `${PORTAL_TOKEN_PREFIX}${encodeBase64Url(payload)}.${encodeBase64Url(this.#mac(payload))}`;
    return {
      token,
      url: `${basePath}/portal#token=${token}`,
      expiresAt,
      readOnly: read.readOnly,
    };
  }

  /** Verify a token: its form, its MAC (compared in constant time), then its expiry. Never throws. */
  verify(token: string): PortalVerification {
    if (token.length > MAX_TOKEN_LENGTH || !token.startsWith(PORTAL_TOKEN_PREFIX))
      return INVALID_TOKEN;
    const parts = token.slice(PORTAL_TOKEN_PREFIX.length).split('.');
    if (parts.length !== 2) return INVALID_TOKEN;
    const payload = decodeBase64Url(parts[0] as string);
    const mac = decodeBase64Url(parts[1] as string);
    if (payload === undefined || mac === undefined || mac.length !== MAC_BYTES)
      return INVALID_TOKEN;
    if (!constantTimeEqual(mac, this.#mac(payload))) return INVALID_TOKEN;
    const claims = claimsOf(payload);
    if (claims === undefined) return INVALID_TOKEN;
    // Accepted strictly before its expiry: at expiresAt it is refused.
    if (this.#clock.now() >= claims.expiresAt) return { ok: false, reason: 'expired' };
    return { ok: true, claims };
  }

  #mac(payload: Uint8Array): Uint8Array {
    return hmacSha256(this.#key, SIGNATURE_CONTEXT, payload);
  }
}

const INVALID_TOKEN: PortalVerification = { ok: false, reason: 'invalid' };

// The claims of a payload this service signed; anything else reads as no claims.
function claimsOf(payload: Uint8Array): PortalClaims | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { a, e, r } = parsed as { a?: unknown; e?: unknown; r?: unknown };
  if (typeof a !== 'string' || a === '' || typeof e !== 'number' || typeof r !== 'boolean') {
    return undefined;
  }
  return { accountCode: a, expiresAt: e, readOnly: r };
}
