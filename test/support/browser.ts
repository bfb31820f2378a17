/**
 * Chromium for the portal's browser tests: Debian's `chromium` (or `CHROMIUM_PATH`) driven by
 * playwright-core, which downloads no browser. `.ci/run` installs the package where it is missing.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

const EXECUTABLE = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Launch headless Chromium; a missing browser fails with the command that installs it. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(EXECUTABLE)) {
    throw new Error(
      `No Chromium at ${EXECUTABLE}: install it (apt-get install -y chromium) or set CHROMIUM_PATH.`,
    );
  }
  return chromium.launch({
    executablePath: EXECUTABLE,
    // As root the sandbox cannot start; the rest keeps Chromium off a network the machine lacks.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
