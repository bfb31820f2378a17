/**
 * No delivery is lost when the webhook service's process is killed: real processes
 * (test/support/webhook-instance.ts) with the memory queue on PGlite, killed with SIGKILL while
 * attempts are in the receiver's hands, more wait in the memory queue (some for a retry the
 * receiver asked for) and publishes are under way, then started again on the same data folder (one
 * process at a time opens it). Every message published reaches every subscription it matches at
 * least once, and none other, and is on record as delivered; every copy of a message carries the
 * webhook-id publish answered and the same body, signed with the secret shown at create. The
 * scenarios are in test/support/kill-scenario.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { HoldingReceiver } from '../../support/holding-receiver.js';
import { InstanceProcesses } from '../../support/instance-process.js';
import {
  KILL_TEST_TIMEOUT_MS,
  type KillSetup,
  killedOnce,
  killedSeveralTimes,
  startKillReceiver,
} from '../../support/kill-scenario.js';
import { pgliteFolder } from '../../support/pglite-template.js';

const SECRET_KEY = randomBytes(32).toString('base64');

const processes = new InstanceProcesses();
const folders: string[] = [];
const receivers: HoldingReceiver[] = [];
/** Each scenario's figures, printed at the end. */
const notes: string[] = [];

afterAll(async () => {
  // Each step runs whatever the one before did.
  try {
    await processes.stopAll();
  } finally {
    await Promise.all(receivers.map((r) => r.close()));
    await Promise.all(folders.map((f) => rm(f, { recursive: true, force: true })));
  }
  console.log(`kill (memory queue on PGlite): ${notes.join('\n')}`);
});

/**
 * One instance on a data folder of its own (copied from the run's PGlite template: a fresh one
 * takes seconds), and a receiver.
 * @param env - more settings of the instance
 */
async function onPGlite(env: Record<string, string> = {}): Promise<KillSetup> {
  const folder = await mkdtemp(join(tmpdir(), 'pglite-kill-'));
  folders.push(folder);
  await pgliteFolder(folder);
  const receiver = await startKillReceiver();
  receivers.push(receiver);
  return {
    start: (name) => processes.start(name, { ...env, DATA_DIR: folder, SECRET_KEY }),
    names: ['P'],
    receiver,
  };
}

/**
 * A retry waiting in the killed process's memory queue, not yet due when the next one starts, is
 * queued again by a sweep once its lease has passed: a second, not the default minute.
 */
const SHORT_LEASE = { REDELIVERY_INTERVAL_MS: '500', REDELIVERY_LEASE_MS: '1000' };

describe('memory queue on PGlite, the instance killed with SIGKILL mid-delivery', () => {
  it(
    'killed once: every message reaches every matched subscription, under one webhook-id',
    async () => {
      const { ledger, report } = await killedOnce(await onPGlite());
      notes.push(`killed once: ${report}`);
      expect(ledger.problems()).toEqual([]);
    },
    KILL_TEST_TIMEOUT_MS,
  );

  it(
    'killed three times at different points: every message reaches every matched subscription, under one webhook-id',
    async () => {
      const { ledger, report } = await killedSeveralTimes(await onPGlite(SHORT_LEASE));
      notes.push(`killed 3 times: ${report}`);
      expect(ledger.problems()).toEqual([]);
    },
    KILL_TEST_TIMEOUT_MS,
  );
});
