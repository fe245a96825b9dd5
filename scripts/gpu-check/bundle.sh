#!/bin/bash
# Makes .gpu-check/: Corral as one file with its one native module, Node (xz), check.sh and worker.py, so that a GPU
# machine with nothing installed but python3 (and nvidia-smi) can run `bash .gpu-check/check.sh OUTDIR`.
# What the check showed on an H200 is in docs/workers.md ("Seen on a real GPU").
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.gpu-check
rm -rf "$out" && mkdir -p "$out/node_modules"
# Node's createRequire, __filename and __dirname, which the bundled CommonJS dependencies expect.
banner="import { createRequire as __cr } from 'module'; import { fileURLToPath as __fu } from 'url'; import { dirname as __dn } from 'path'; const require = __cr(import.meta.url); const __filename = __fu(import.meta.url); const __dirname = __dn(__filename);"
echo "import { runCli } from './src/cli/index.ts'; await runCli(process.argv);" |
  npx esbuild --bundle --sourcefile=entry.mjs --platform=node --format=esm --target=node20 \
    --external:better-sqlite3 --external:cpu-features --external:'*.node' --banner:js="$banner" \
    --log-level=error --outfile="$out/corral.mjs"
for pkg in better-sqlite3 bindings file-uri-to-path; do cp -r "node_modules/$pkg" "$out/node_modules/"; done
rm -rf "$out/node_modules/better-sqlite3/deps" "$out/node_modules/better-sqlite3/src" \
  "$out"/node_modules/better-sqlite3/build/Release/{obj,obj.target,.deps} "$out/node_modules/better-sqlite3/build/deps"
echo "gpu-check: compressing $(command -v node) (a minute or two)"
xz -T0 -6 -c "$(readlink -f "$(command -v node)")" > "$out/node.xz"
cp scripts/gpu-check/check.sh scripts/gpu-check/worker.py "$out/"
du -sh "$out"
