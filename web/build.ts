/**
 * Builds the dashboard (web/src) into dist/web with esbuild: one minified script, one stylesheet and index.html,
 * everything bundled (no CDN, no network at run time). Prints each file's gzipped size and fails above the budget.
 * Run by `npm run build` (and so by `npm install`, through `prepare`).
 */
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'dist', 'web');
/** Issue 14's budget for everything the browser downloads, gzipped. */
const BUDGET_BYTES = 300 * 1024;

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
await build({
  entryPoints: { app: join(ROOT, 'web', 'src', 'main.tsx') },
  outdir: OUT,
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: join(ROOT, 'web', 'tsconfig.json'),
  legalComments: 'none',
  logLevel: 'warning',
});
copyFileSync(join(ROOT, 'web', 'index.html'), join(OUT, 'index.html'));

let total = 0;
const lines: string[] = [];
for (const name of ['index.html', 'app.js', 'app.css']) {
  const gzipped = gzipSync(readFileSync(join(OUT, name)), { level: 9 }).length;
  total += gzipped;
  lines.push(`  ${name.padEnd(10)} ${(gzipped / 1024).toFixed(1).padStart(6)} KB gzipped`);
}
process.stdout.write(
  `dashboard bundle (dist/web):\n${lines.join('\n')}\n  total      ${(total / 1024).toFixed(1).padStart(6)} KB gzipped (budget ${BUDGET_BYTES / 1024} KB)\n`,
);
if (total > BUDGET_BYTES) {
  process.stderr.write(`the dashboard bundle is over its budget: ${total} > ${BUDGET_BYTES} bytes gzipped\n`);
  process.exit(1);
}
