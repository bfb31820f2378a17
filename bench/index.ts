/**
 * `npm run bench`: runs every `bench/*.bench.ts` suite in turn (or the ones named on the command
 * line) and prints the collected figures as one JSON object on the last line.
 */
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';

interface Suite {
  run(): Promise<Record<string, unknown>>;
}

const dir = import.meta.dirname;
const wanted = new Set(process.argv.slice(2));
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.size === 0 || wanted.has(basename(f, '.bench.ts')))
  .sort();

const results: Record<string, unknown> = {};
for (const file of files) {
  const name = basename(file, '.bench.ts');
  console.error(`\n== ${name} ==`);
  const suite = (await import(pathToFileURL(join(dir, file)).href)) as Suite;
  results[name] = await suite.run();
}
console.log(JSON.stringify(results));
