#!/usr/bin/env bash
# Builds Corral's own image (the repository's Dockerfile) where no container registry is reachable: its base,
# `corral-local/node:20-bookworm-slim`, is made here first when missing: Debian bookworm from `debootstrap
# --variant=minbase` (Debian's mirror is reachable), this machine's `node`, its headers and npm (with npm's CA bundle
# where this machine's npm names one), and a `node` user with uid 1000, as the official node image has. Then `docker build --build-arg NODE_IMAGE=that -t TAG .`.
#
# Usage: scripts/build-corral-image.sh [tag]        (default corral:dev)
# Needs: root, Docker, debootstrap (Debian: apt-get install debootstrap), Node 20.19+ with npm on PATH.
# The opt-in real-cluster suite (test/e2e/kube-cluster.test.ts) uses it; a user with a registry runs `docker build`.
set -euo pipefail

tag="${1:-corral:dev}"
base="${NODE_IMAGE:-corral-local/node:20-bookworm-slim}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf 'build-corral-image: %s\n' "$*" >&2; }
die() {
  printf 'build-corral-image: error: %s\n' "$*" >&2
  exit 1
}

command -v docker >/dev/null || die "the docker CLI is not installed"
if ! docker image inspect "$base" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || die "no debootstrap to make $base (Debian: apt-get install debootstrap)"
  node_bin="$(readlink -f "$(command -v node)")" || die "node is not on PATH"
  npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
  [[ -f "$npm_dir/package.json" ]] || die "cannot find npm's directory from $(command -v npm)"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  log "making $base: debootstrap bookworm (minbase), then $node_bin $("$node_bin" --version) and npm"
  debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    die "debootstrap failed: $(tail -3 "$work/debootstrap.log")"
  cp "$node_bin" "$work/rootfs/usr/local/bin/node"
  mkdir -p "$work/rootfs/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$work/rootfs/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
  chroot "$work/rootfs" sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
  # Node's headers, as the official image has them, so that node-gyp builds SQLite's module without downloading
  # them from nodejs.org; and this machine's trust: where its npm reaches the registry through a TLS proxy with its
  # own CA (npm's cafile), the build's npm trusts the same bundle.
  mkdir -p "$work/rootfs/usr/local/include" "$work/rootfs/usr/local/etc"
  headers="$(dirname "$(dirname "$node_bin")")/include/node"
  [[ -f "$headers/node.h" ]] || die "no Node headers at $headers (node-gyp would download them)"
  cp -a "$headers" "$work/rootfs/usr/local/include/node"
  printf 'nodedir=/usr/local\n' >"$work/rootfs/usr/local/etc/npmrc"
  cafile="$(npm config get cafile 2>/dev/null || true)"
  if [[ -n "$cafile" && "$cafile" != null && -f "$cafile" ]]; then
    mkdir -p "$work/rootfs/etc/ssl/certs" # minbase has no ca-certificates, so no such directory
    cp "$cafile" "$work/rootfs/etc/ssl/certs/corral-build-ca.crt"
    printf 'cafile=/etc/ssl/certs/corral-build-ca.crt\n' >>"$work/rootfs/usr/local/etc/npmrc"
  fi
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
  tar -C "$work/rootfs" -c . | docker import --change 'CMD ["node"]' - "$base" >/dev/null
  log "made $base"
fi

log "docker build -t $tag (NODE_IMAGE=$base)"
docker build --build-arg NODE_IMAGE="$base" -t "$tag" "$here/.."
