/**
 * The portal session: the token handed over in the link's fragment (`#token=…`), which no request
 * line carries, kept for this tab only (`sessionStorage`) and sent as `Authorization: Bearer` on
 * the API. Its claims (account, expiry, read-only) are read from the token to shape the page; the
 * service verifies them on every request.
 * @module
 */

const STORAGE_KEY = 'api-conventions.portal-token';
const TOKEN_PREFIX = 'portal.';

/** What the page knows of its session. */
export interface Session {
  readonly token: string;
  readonly accountCode: string;
  /** When the service stops accepting the token, in ms (the service's clock). */
  readonly expiresAt: number;
  readonly readOnly: boolean;
}

/**
 * The session of this tab: the token of the link's fragment (then removed from the address bar and
 * the history), or the one this tab kept. `undefined` when there is none or it is not readable.
 */
export function openSession(): Session | undefined {
  const fragment = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fragment !== null) {
    // Out of the address bar and the history: a copied or bookmarked address holds no token.
    history.replaceState(null, '', `${location.pathname}${location.search}#/`);
    const session = sessionOf(fragment);
    if (session !== undefined) sessionStorage.setItem(STORAGE_KEY, fragment);
    return session;
  }
  const kept = sessionStorage.getItem(STORAGE_KEY);
  return kept === null ? undefined : sessionOf(kept);
}

/** Forget the token of this tab (an expired or refused one). */
export function closeSession(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

function sessionOf(token: string): Session | undefined {
  if (!token.startsWith(TOKEN_PREFIX)) return undefined;
  const payload = token.slice(TOKEN_PREFIX.length).split('.')[0] ?? '';
  let claims: unknown;
  try {
    const base64 = payload.replace(/-/g, '+').replace(/_/g, '/');
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    claims = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const { a, e, r } = claims as { a?: unknown; e?: unknown; r?: unknown };
  if (typeof a !== 'string' || typeof e !== 'number' || typeof r !== 'boolean') return undefined;
  return { token, accountCode: a, expiresAt: e, readOnly: r };
}
