#!/usr/bin/env bash
# Builds the Corral test worker image locally, with no registry and no network:
#   FROM scratch + this machine's `node` binary + the shared libraries it links (ldd, loader included)
#   + test/fixtures/worker/worker.mjs, run as `/node /worker.mjs` (ENTRYPOINT ["/node"], CMD ["/worker.mjs"]:
#   a worker command replaces only the script, e.g. ["-e", "process.exit(3)"])
#   + test/fixtures/worker/runpod-worker.mjs, the RunPod protocol test worker: the command ["/runpod-worker.mjs"].
# Usage: scripts/build-test-image.sh [tag]        (default corral-test-worker:latest)
# Idempotent: skips the build when the tag exists with the same content hash label (node path + version +
# worker.mjs + this script). Concurrent runs (parallel test processes) are serialised with flock.
set -euo pipefail

tag="${1:-corral-test-worker:latest}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
worker="$here/../test/fixtures/worker/worker.mjs"
runpod_worker="$here/../test/fixtures/worker/runpod-worker.mjs"
hash_label="corral.dev/test-image-hash"

log() { printf 'build-test-image: %s\n' "$*" >&2; }
die() {
  printf 'build-test-image: error: %s\n' "$*" >&2
  exit 1
}

command -v docker >/dev/null 2>&1 || die "the docker CLI is not installed (Debian: apt-get install docker.io)"
if ! docker_err="$(docker info 2>&1 >/dev/null)"; then
  die "docker is not reachable (is dockerd running, and may this user use its socket?): ${docker_err##*$'\n'}"
fi
[ -f "$worker" ] || die "worker program not found at $worker"
[ -f "$runpod_worker" ] || die "RunPod protocol worker not found at $runpod_worker"

node_cmd="$(command -v node)" || die "node is not on PATH"
node_bin="$(readlink -f "$node_cmd")"
node_version="$("$node_bin" --version)"
worker_sha="$(cat "$worker" "$runpod_worker" | sha256sum | cut -d' ' -f1)"
script_sha="$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)"
content_hash="$(printf '%s\n' "$node_bin" "$node_version" "$worker_sha" "$script_sha" | sha256sum | cut -d' ' -f1)"

current_hash() {
  docker image inspect --format "{{ index .Config.Labels \"$hash_label\" }}" "$tag" 2>/dev/null || true
}

# One build at a time on this machine; whoever waited re-checks the hash and usually finds the image built.
lock="${TMPDIR:-/tmp}/corral-build-test-image.lock"
if command -v flock >/dev/null 2>&1 && { exec 9>>"$lock"; } 2>/dev/null; then
  flock 9
fi

existing="$(current_hash)"
if [ "$existing" = "$content_hash" ]; then
  log "$tag is up to date (node $node_version, hash ${content_hash:0:12})"
  printf '%s\n' "$tag"
  exit 0
fi
old_id="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
if [ -n "$existing" ] || [ -n "$old_id" ]; then
  log "$tag is stale (hash ${existing:0:12} != ${content_hash:0:12}), rebuilding"
fi

start=$(date +%s%N)
ctx="$(mktemp -d "${TMPDIR:-/tmp}/corral-test-image.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/tmp"
chmod 1777 "$ctx/rootfs/tmp"

log "collecting $node_bin ($node_version) and its shared libraries"
cp "$node_bin" "$ctx/node"
cp "$worker" "$ctx/worker.mjs"
cp "$runpod_worker" "$ctx/runpod-worker.mjs"

# ldd lines: "libx.so.1 => /path/libx.so.1 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)", "linux-vdso.so.1 (0x...)".
# Each library goes to the path ldd names (the loader at its absolute path, which the binary's PT_INTERP names),
# copied through symlinks so the image holds real files.
ldd_out="$(ldd "$node_bin")" || die "ldd failed on $node_bin"
if grep -q 'not a dynamic executable\|statically linked' <<<"$ldd_out"; then
  libs=()
else
  mapfile -t libs < <(awk '
    $2 == "=>" && $3 ~ /^\// { print $3; next }
    $1 ~ /^\// { print $1 }
  ' <<<"$ldd_out")
  if grep -q 'not found' <<<"$ldd_out"; then
    die "node links libraries that cannot be found: $(grep 'not found' <<<"$ldd_out" | tr -s ' \t' ' ')"
  fi
fi
lib_dirs=()
for lib in "${libs[@]}"; do
  dest="$ctx/rootfs$lib"
  mkdir -p "$(dirname "$dest")"
  cp -L "$lib" "$dest"
  dir="$(dirname "$lib")"
  case " ${lib_dirs[*]-} " in *" $dir "*) ;; *) lib_dirs+=("$dir") ;; esac
done
log "copied ${#libs[@]} libraries: ${libs[*]-}"
ld_path="$(
  IFS=:
  echo "${lib_dirs[*]-}"
)"

cat >"$ctx/Dockerfile" <<EOF
FROM scratch
COPY rootfs/ /
COPY node /node
COPY worker.mjs /worker.mjs
COPY runpod-worker.mjs /runpod-worker.mjs
ENV LD_LIBRARY_PATH=$ld_path PORT=8000
EXPOSE 8000
LABEL corral.dev/test-image="1" $hash_label="$content_hash" corral.dev/test-image-node="$node_version"
ENTRYPOINT ["/node"]
CMD ["/worker.mjs"]
EOF

# Without the buildx plugin, a recent docker CLI refuses BuildKit; the legacy builder needs no network for this.
if ! docker buildx version >/dev/null 2>&1; then
  export DOCKER_BUILDKIT=0
fi
log "docker build -t $tag ($(du -sh "$ctx" | cut -f1) context)"
if ! build_out="$(docker build --quiet --tag "$tag" "$ctx" 2>&1)"; then
  printf '%s\n' "$build_out" >&2
  die "docker build failed"
fi

new_id="$(docker image inspect --format '{{.Id}}' "$tag")"
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  # The previous build is now untagged: drop it unless a container still uses it.
  docker image rm "$old_id" >/dev/null 2>&1 || true
fi
size="$(docker image inspect --format '{{.Size}}' "$tag")"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
log "built $tag (${new_id:7:12}, $((size / 1024 / 1024)) MiB) in ${elapsed_ms} ms"
printf '%s\n' "$tag"
