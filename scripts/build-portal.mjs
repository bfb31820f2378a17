// Builds the portal page (src/portal) into src/webhooks/service/portal-files.ts: the HTML, the
// stylesheet and the script bundled and minified with esbuild, as strings the service serves, so
// that the package serves the page with no file system and no build step of the user's.
// `node scripts/build-portal.mjs` writes it; test/portal/portal-files.test.ts fails when it is
// stale. Importing this file writes nothing.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = join(ROOT, 'src/portal');
export const PORTAL_FILES_PATH = join(ROOT, 'src/webhooks/service/portal-files.ts');

/** The text of src/webhooks/service/portal-files.ts as the sources make it now. */
export async function portalFilesModule() {
  const bundled = await build({
    entryPoints: [join(SOURCE, 'app.ts')],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome111', 'firefox113', 'safari16.4'],
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  const files = {
    html: readFileSync(join(SOURCE, 'portal.html'), 'utf8'),
    css: readFileSync(join(SOURCE, 'portal.css'), 'utf8'),
    js: bundled.outputFiles[0].text,
  };
  const entries = Object.entries(files).map(([name, text]) => {
    const etag = `"${createHash('sha256').update(text).digest('base64url').slice(0, 22)}"`;
    return `  ${name}: {\n    etag: ${JSON.stringify(etag)},\n    text: ${JSON.stringify(text)},\n  },`;
  });
  return [
    '/**',
    ' * The portal page, made from src/portal by `node scripts/build-portal.mjs`: do not edit by hand.',
    ' * @module',
    ' */',
    '',
    '/** The page, its stylesheet and its script, each with its entity tag. @internal */',
    'export const portalFiles = {',
    ...entries,
    '} as const;',
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(PORTAL_FILES_PATH, await portalFilesModule());
  console.log(`wrote ${PORTAL_FILES_PATH}`);
}
