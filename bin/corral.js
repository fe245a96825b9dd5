#!/usr/bin/env node
// Runs the compiled CLI; `npm install` builds dist/ through the prepare script.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/index.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('corral: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
const { runCli } = await import(entry.href);
await runCli(process.argv);
