#!/usr/bin/env node
// Runs the compiled CLI; `npm install` builds dist/ through the prepare script.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('corral: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
const { main } = await import(entry.href);
await main(process.argv);
