#!/usr/bin/env node
// `npm test`: the vitest suite, and beside it the other checks at the lowest CPU priority, so that
// they take only the time the suite leaves idle (while its files wait on a process, a server or a
// socket) and do not slow it down. First the files that hold Redis to the store's 100 ms deadline
// (vitest.config.ts, project "redis deadlines") run with nothing beside them; then the rest of the
// suite, and beside it lint, then the type-check; and the package checks (which build dist), then
// the type-check of bench/ against that build. Their output is printed once the suite is done,
// each under its name, then every step's outcome and time; the run fails if any step fails.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

/**
 * The lowest priority: a check gets a core only when the suite leaves it idle; once the suite is
 * done, what remains of the checks has the machine to itself, at any priority.
 */
const LOWEST = 19;

/** `npm run <script> -- ...args`, with the npm that runs this script where there is one. */
function npmRun(script, options, args = []) {
  const npmArgs = ['run', script, ...(args.length > 0 ? ['--', ...args] : [])];
  const npm = process.env.npm_execpath;
  return npm === undefined
    ? spawn('npm', npmArgs, { ...options, shell: process.platform === 'win32' })
    : spawn(process.execPath, [npm, ...npmArgs], options);
}

/** Set the priority of `pid`; where that is not permitted, it keeps the one it has. */
function prioritise(pid, priority) {
  try {
    setPriority(pid, priority);
  } catch {
    // Not permitted here: the step runs at the priority it has, slower or faster, as correct.
  }
}

/**
 * Run one script at the lowest priority, its output (stdout and stderr, in
 * order) kept.
 * @returns its name, whether it passed, its output, its time in seconds and its exit code
 */
function background(script) {
  const began = performance.now();
  const child = npmRun(script, { stdio: ['ignore', 'pipe', 'pipe'] });
  // Before npm has loaded, long before it starts the script: what it starts inherits this.
  prioritise(child.pid, LOWEST);
  let output = '';
  const keep = (chunk) => {
    output += chunk;
  };
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  return new Promise((resolve) => {
    child.once('error', (error) => keep(`${error}\n`));
    child.once('close', (code, signal) => {
      const seconds = (performance.now() - began) / 1000;
      resolve({ script, ok: code === 0, output, seconds, code: code ?? signal });
    });
  });
}

/** vitest's project of the files that must run with nothing beside them (vitest.config.ts). */
const DEADLINES = 'redis deadlines';

/**
 * `vitest run` of the projects `filter` picks, in the foreground, at the normal priority, writing
 * to the terminal as it goes.
 */
function suite(name, filter) {
  const began = performance.now();
  const child = npmRun('test:unit', { stdio: 'inherit' }, ['--project', filter]);
  return new Promise((resolve) => {
    child.once('error', (error) => console.error(error));
    child.once('close', (code, signal) => {
      const seconds = (performance.now() - began) / 1000;
      resolve({ script: name, ok: code === 0, output: '', seconds, code: code ?? signal });
    });
  });
}

const deadlines = await suite('test:unit (deadlines)', DEADLINES);
const checks = [
  (async () => [await background('lint'), await background('typecheck')])(),
  (async () => {
    const pack = await background('check:package');
    // The type-check of bench/ reads the build the package checks made.
    return pack.ok ? [pack, await background('typecheck:bench')] : [pack];
  })(),
];
const unit = await suite('test:unit', `!${DEADLINES}`);
const steps = (await Promise.all(checks)).flat();

// npm's own header (`> api-conventions@... lint`) names each step.
for (const step of steps) console.log(step.output.trimEnd());
console.log('');
for (const step of [deadlines, unit, ...steps]) {
  const outcome = step.ok ? 'ok' : `failed (${step.code})`;
  console.log(`${step.script.padEnd(22)} ${outcome.padEnd(12)} ${step.seconds.toFixed(1)} s`);
}
const ran = new Set(steps.map((step) => step.script));
if (!ran.has('typecheck:bench')) {
  console.log(`${'typecheck:bench'.padEnd(22)} not run: it reads the build check:package makes`);
}
process.exitCode =
  deadlines.ok && unit.ok && steps.every((step) => step.ok) && ran.size === 4 ? 0 : 1;
