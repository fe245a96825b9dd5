#!/bin/bash
# Makes .gpu-check/: Corral as one file with its native modules, the CUDA checkpoint helper (cuda-helper.js, with
# koffi's prebuilt linux-x64 binary), Node (xz) and the check scripts, so that a GPU machine with nothing installed but
# python3 (and nvidia-smi) can run `bash .gpu-check/check.sh OUTDIR`, `probe-checkpoint.sh OUTDIR`, `check-wake.sh OUTDIR` or `check-adopt.sh OUTDIR`.
# What the check showed on an H200 is in docs/workers.md ("Seen on a real GPU").
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.gpu-check
rm -rf "$out" && mkdir -p "$out/node_modules"
# Node's createRequire, __filename and __dirname, which the bundled CommonJS dependencies expect.
banner="import { createRequire as __cr } from 'module'; import { fileURLToPath as __fu } from 'url'; import { dirname as __dn } from 'path'; const require = __cr(import.meta.url); const __filename = __fu(import.meta.url); const __dirname = __dn(__filename);"
echo "import { runCli } from './src/cli/index.ts'; await runCli(process.argv);" |
  npx esbuild --bundle --sourcefile=entry.mjs --platform=node --format=esm --target=node20 \
    --external:better-sqlite3 --external:cpu-features --external:koffi --external:'*.node' --banner:js="$banner" \
    --log-level=error --outfile="$out/corral.mjs"
# The helper that calls the driver, beside corral.mjs where run-helper.ts looks for it; ESM, as package.json says.
npx esbuild src/gpu/checkpoint/cuda-helper.ts --bundle --platform=node --format=esm --target=node20 --external:koffi \
  --log-level=error --outfile="$out/cuda-helper.js"
echo '{ "type": "module" }' > "$out/package.json"
# koffi's JavaScript and its prebuilt binary for glibc linux-x64 only (no sources, no other platforms).
mkdir -p "$out/node_modules/koffi" "$out/node_modules/@koromix/koffi-linux-x64"
cp node_modules/koffi/{package.json,index.js,index.cjs,indirect.js,indirect.cjs,LICENSE.txt} "$out/node_modules/koffi/"
mkdir -p "$out/node_modules/koffi/src/koffi/src"
cp node_modules/koffi/src/koffi/*.{js,cjs} "$out/node_modules/koffi/src/koffi/"
cp node_modules/koffi/src/koffi/src/*.{js,cjs} "$out/node_modules/koffi/src/koffi/src/"
cp -r node_modules/@koromix/koffi-linux-x64/{package.json,index.js,linux_x64} "$out/node_modules/@koromix/koffi-linux-x64/"
for pkg in better-sqlite3 bindings file-uri-to-path; do cp -r "node_modules/$pkg" "$out/node_modules/"; done
rm -rf "$out/node_modules/better-sqlite3/deps" "$out/node_modules/better-sqlite3/src" \
  "$out"/node_modules/better-sqlite3/build/Release/{obj,obj.target,.deps} "$out/node_modules/better-sqlite3/build/deps"
echo "gpu-check: compressing $(command -v node) (a minute or two)"
xz -T0 -6 -c "$(readlink -f "$(command -v node)")" > "$out/node.xz"
cp scripts/gpu-check/{check.sh,worker.py,probe-checkpoint.sh,probe_checkpoint.py,gpu_proc.py,check-wake.sh,check-adopt.sh} "$out/"
du -sh "$out"
