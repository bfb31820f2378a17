/**
 * A process that locks a data folder (lockDataFolder) and holds it until its stdin ends, run with
 * tsx by data-folder-holders.ts. It prints one JSON line: `{ "held": true }` or the refusal's code,
 * pid and message.
 */
import { lockDataFolder } from '../../src/postgres/index.js';

const folder = process.argv[2] as string;
try {
  const lock = await lockDataFolder(folder);
  process.stdout.write(`${JSON.stringify({ held: true, pid: process.pid })}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => {
    lock.release().then(() => process.exit(0));
  });
} catch (error) {
  const { code, pid, message } = error as { code?: string; pid?: number; message?: string };
  process.stdout.write(`${JSON.stringify({ held: false, code, pid, message })}\n`);
  process.exit(3);
}
