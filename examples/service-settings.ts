/**
 * The demo's settings from its environment, each read once and checked before anything starts; a
 * setting that is wrong, or names a server that cannot be reached, is told in one line that names
 * the variable, its value (a password or key never) and what to change.
 */
import type { DemoOptions } from './service.js';
import { parseSecretKeys } from './service-storage.js';

/** The variables the demo reads, with what each is for. */
export const DEMO_VARIABLES = [
  'PORT',
  'DATA_DIR',
  'DATABASE_URL',
  'WEBHOOK_SECRET_KEYS',
  'REDIS_URL',
  'WEBHOOK_ALLOW',
  'ADMIN_KEY',
  'CURSOR_KEY',
] as const;

/** A demo setting. */
export type DemoVariable = (typeof DEMO_VARIABLES)[number];

/** The settings read, or the line that says which one is wrong. */
export type DemoSettings =
  | { readonly ok: true; readonly options: DemoOptions }
  | { readonly ok: false; readonly line: string };

/** A start failure caused by one setting: the variable and what to change. */
export class DemoSettingError extends Error {
  /**
   * @param variable - the environment variable at fault
   * @param message - what is wrong with its value and what to change, in one sentence
   */
  constructor(
    readonly variable: DemoVariable,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DemoSettingError';
  }
}

/** The variable's value, unset when empty. */
const read = (env: NodeJS.ProcessEnv, name: DemoVariable): string | undefined => {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
};

/** A URL as it may be printed: its password left out. */
export function shownUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password === '') return text;
    url.password = '****';
    return url.href;
  } catch {
    return text;
  }
}

/**
 * Read and check every setting of the demo once.
 * @param env - the environment, `process.env` in the demo
 */
export function readDemoSettings(env: NodeJS.ProcessEnv): DemoSettings {
  try {
    return { ok: true, options: readAll(env) };
  } catch (error) {
    if (error instanceof DemoSettingError) return { ok: false, line: startFailure(error) };
    throw error;
  }
}

function readAll(env: NodeJS.ProcessEnv): DemoOptions {
  const options: DemoOptions = {};
  const port = read(env, 'PORT');
  if (port !== undefined) {
    // Strictly digits: Number('') is 0, Number('0x10') is 16 and Number(' 8') is 8.
    if (!/^[0-9]+$/.test(port) || Number(port) > 65_535) {
      throw new DemoSettingError(
        'PORT',
        `PORT=${JSON.stringify(port)} is not a port; set it to a whole number from 0 to 65535 (0: any free port), such as PORT=3001, or unset it for 3000.`,
      );
    }
    options.port = Number(port);
  }
  const dataDir = read(env, 'DATA_DIR');
  if (dataDir !== undefined) options.dataDir = dataDir;
  const databaseUrl = read(env, 'DATABASE_URL');
  if (databaseUrl !== undefined) {
    if (!hasScheme(databaseUrl, ['postgres:', 'postgresql:'])) {
      throw new DemoSettingError(
        'DATABASE_URL',
        `DATABASE_URL=${JSON.stringify(shownUrl(databaseUrl))} is not a PostgreSQL URL; set it to postgres://user:password@host:5432/database, or unset it to keep the data under .data/.`,
      );
    }
    options.databaseUrl = databaseUrl;
  }
  const keys = read(env, 'WEBHOOK_SECRET_KEYS');
  if (keys !== undefined) {
    try {
      options.secretKeys = parseSecretKeys(keys);
    } catch (error) {
      // The keys are secrets: the message says what is wrong, never the value.
      throw new DemoSettingError(
        'WEBHOOK_SECRET_KEYS',
        `${(error instanceof Error ? error.message : String(error)).replace(/\.$/, '')}.`,
      );
    }
  }
  const redisUrl = read(env, 'REDIS_URL');
  if (redisUrl !== undefined) {
    if (!hasScheme(redisUrl, ['redis:', 'rediss:'])) {
      throw new DemoSettingError(
        'REDIS_URL',
        `REDIS_URL=${JSON.stringify(shownUrl(redisUrl))} is not a Redis URL; set it to redis://host:6379, or unset it to keep the limits and the delivery queue in memory.`,
      );
    }
    options.redisUrl = redisUrl;
  }
  // Set but empty is an allow-list of none, as documented: no address that is not public.
  const allow = env.WEBHOOK_ALLOW;
  if (allow !== undefined) options.allow = allow.split(',').filter((a) => a !== '');
  const adminKey = read(env, 'ADMIN_KEY');
  if (adminKey !== undefined) options.adminKey = adminKey;
  const cursorKey = read(env, 'CURSOR_KEY');
  if (cursorKey !== undefined) {
    if (Buffer.byteLength(cursorKey) < 32) {
      throw new DemoSettingError(
        'CURSOR_KEY',
        `CURSOR_KEY has ${Buffer.byteLength(cursorKey)} bytes; set it to at least 32, such as CURSOR_KEY=$(openssl rand -base64 32), or unset it for a random key.`,
      );
    }
    options.cursorKey = cursorKey;
  }
  return options;
}

function hasScheme(text: string, schemes: readonly string[]): boolean {
  try {
    return schemes.includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** The one line a failed start prints. */
export function startFailure(error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error)).replace(/\.$/, '');
  const hint =
    (error as { code?: unknown } | null)?.code === 'EADDRINUSE'
      ? ' Set PORT to a free port, such as PORT=3001 npm run demo.'
      : '';
  // A setting's message opens with the variable and its value.
  return `The demo service could not start: ${message}.${hint}`;
}

/**
 * A failure to reach the server a URL setting names, as the setting's error.
 * @param variable - `DATABASE_URL` or `REDIS_URL`
 * @param url - its value
 * @param instead - what else to do, after "check that the server runs there and the URL, or"
 */
export function unreachable(
  variable: 'DATABASE_URL' | 'REDIS_URL',
  url: string,
  instead: string,
): (error: unknown) => never {
  return (error) => {
    const why = error instanceof Error ? error.message.replace(/\.$/, '') : String(error);
    throw new DemoSettingError(
      variable,
      `${variable}=${shownUrl(url)} could not be used (${why}); check that the server runs there and the URL, or ${instead}.`,
      { cause: error },
    );
  };
}
