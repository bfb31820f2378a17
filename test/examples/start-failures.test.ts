/**
 * `npm run demo` with a setting that is wrong, or that names a server nobody answers on: the
 * process exits non-zero, and stderr names the variable and its value and says what to change. Run
 * as real processes, as a reader starts the demo; the settings reader is checked on any input.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { readDemoSettings } from '../../examples/service-settings.js';

const root = resolve(import.meta.dirname, '../..');
const folders: string[] = [];
afterAll(() => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))));

/** Run the demo with these settings until it exits; a guard kills it should it start instead. */
async function runDemo(settings: Record<string, string>) {
  const folder = await mkdtemp(join(tmpdir(), 'demo-data-'));
  folders.push(folder);
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', DATA_DIR: folder, ...settings };
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'WEBHOOK_SECRET_KEYS', 'WEBHOOK_ALLOW']) {
    if (!(name in settings)) delete env[name];
  }
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'examples/service.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    // Started after all: stop it, and let the assertions say so.
    if (stdout.includes('Press Ctrl+C to stop.')) child.kill('SIGKILL');
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const guard = setTimeout(() => child.kill('SIGKILL'), 100_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(guard);
  return { code, stdout, stderr };
}

describe('the demo refuses to start on a bad setting, naming it', () => {
  it('PORT=abc: a port is a whole number from 0 to 65535', async () => {
    const run = await runDemo({ PORT: 'abc' });
    expect(run.code).toBe(1);
    expect(run.stdout).not.toContain('Press Ctrl+C');
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('PORT="abc"');
    expect(lines[0]).toContain('0 to 65535');
    expect(run.stderr).not.toContain('options.port');
  }, 120_000);

  it('DATABASE_URL of a server nobody answers on', async () => {
    const run = await runDemo({ DATABASE_URL: 'postgres://demo:hunter2@127.0.0.1:1/x' });
    expect(run.code).toBe(1);
    expect(run.stdout).not.toContain('Press Ctrl+C');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('DATABASE_URL=postgres://demo:****@127.0.0.1:1/x');
    expect(run.stderr).toContain('unset DATABASE_URL');
    // Never the password.
    expect(run.stderr).not.toContain('hunter2');
  }, 120_000);

  it('REDIS_URL of a server nobody answers on', async () => {
    const run = await runDemo({ REDIS_URL: 'redis://127.0.0.1:1' });
    expect(run.code).toBe(1);
    expect(run.stdout).not.toContain('Press Ctrl+C');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(
      'REDIS_URL=redis://127.0.0.1:1 could not be used (connect ECONNREFUSED',
    );
    expect(run.stderr).toContain('unset REDIS_URL');
  }, 120_000);
});

describe('readDemoSettings', () => {
  it('takes PORT exactly when it is a whole number from 0 to 65535, and names PORT otherwise', () => {
    const digits = fc.stringMatching(/^[0-9]{1,7}$/);
    const anything = fc.oneof(
      digits,
      fc.string(),
      fc.constantFrom(' 80', '0x10', '1e3', '-1', '3.0'),
    );
    fc.assert(
      fc.property(anything, (port) => {
        const read = readDemoSettings({ PORT: port });
        // From the words: a port is written in decimal digits alone, and is at most 65535.
        const isPort =
          port !== '' && [...port].every((c) => c >= '0' && c <= '9') && BigInt(port) <= 65_535n;
        if (port === '') expect(read).toEqual({ ok: true, options: {} });
        else if (isPort) expect(read).toEqual({ ok: true, options: { port: Number(port) } });
        else {
          expect(read.ok).toBe(false);
          if (!read.ok) expect(read.line).toContain(`PORT=${JSON.stringify(port)}`);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('names DATABASE_URL and REDIS_URL when they are no such URLs, without a password', () => {
    const database = readDemoSettings({ DATABASE_URL: 'mysql://u:secret@h/db' });
    expect(database.ok ? '' : database.line).toContain('DATABASE_URL="mysql://u:****@h/db"');
    expect(database.ok ? '' : database.line).not.toContain('secret');
    const redis = readDemoSettings({ REDIS_URL: '127.0.0.1:6379' });
    expect(redis.ok ? '' : redis.line).toContain('REDIS_URL="127.0.0.1:6379" is not a Redis URL');
  });
});
