#!/usr/bin/env bash
# Opt-in: builds a RunPod worker image from the UNMODIFIED runpod-python source, for Corral's real-SDK tests
# (test/e2e/runpod-sdk.test.ts, docs/jobs.md), with no registry and no PyPI:
#   FROM scratch + this machine's Debian python3.11 and python3-* packages (apt-get installs the missing ones when
#   run as root) + the shared libraries they link + runpod-python's `runpod/` package as it is + the pure-Python
#   dependencies Debian lacks (aiohttp-retry and tqdm-loggable: give their source trees) + a newer aiohttp than
#   Debian 12's 3.8 (give its source tree, e.g. v3.9.5; pure Python, AIOHTTP_NO_EXTENSIONS=1, its dependencies from
#   Debian) ahead of Debian's on the path + the handler of test/fixtures/runpod-worker/ (its test_input.json too),
#   run as `python3 -u /handler.py`.
# Usage: scripts/build-runpod-image.sh RUNPOD_PYTHON_DIR AIOHTTP_RETRY_DIR TQDM_LOGGABLE_DIR AIOHTTP_DIR [tag]
#   (default tag corral-runpod-worker:latest). Each *_DIR is a source tree (a git checkout, or a `git archive` of
#   one) holding the package directory: runpod/, aiohttp_retry/, tqdm_loggable/, aiohttp/.
set -euo pipefail

log() { printf 'build-runpod-image: %s\n' "$*" >&2; }
die() {
  printf 'build-runpod-image: error: %s\n' "$*" >&2
  exit 1
}

[ $# -ge 4 ] || die "usage: $0 RUNPOD_PYTHON_DIR AIOHTTP_RETRY_DIR TQDM_LOGGABLE_DIR AIOHTTP_DIR [tag]"
runpod_dir="$(readlink -f "$1")"
retry_dir="$(readlink -f "$2")"
tqdm_dir="$(readlink -f "$3")"
aiohttp_dir="$(readlink -f "$4")"
tag="${5:-corral-runpod-worker:latest}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fixture="$here/../test/fixtures/runpod-worker"
python=/usr/bin/python3.11

[ -d "$runpod_dir/runpod/serverless" ] || die "$runpod_dir holds no runpod/serverless (a runpod-python checkout?)"
[ -f "$retry_dir/aiohttp_retry/__init__.py" ] || die "$retry_dir holds no aiohttp_retry/ package"
[ -f "$tqdm_dir/tqdm_loggable/__init__.py" ] || die "$tqdm_dir holds no tqdm_loggable/ package"
[ -f "$aiohttp_dir/aiohttp/__init__.py" ] || die "$aiohttp_dir holds no aiohttp/ package"
command -v docker >/dev/null 2>&1 || die "the docker CLI is not installed"
docker info >/dev/null 2>&1 || die "docker is not reachable"
[ -x "$python" ] || die "$python is missing (Debian: apt-get install python3.11)"

# runpod-python's requirements.txt, as Debian packages; aiohttp-retry, tqdm-loggable and inquirerpy (the CLI's
# project commands only, never imported by a worker) are not in Debian.
packages=(python3-aiohttp python3-backoff python3-boto3 python3-click python3-colorama python3-cryptography
  python3-fastapi python3-uvicorn python3-paramiko python3-prettytable python3-psutil python3-cpuinfo
  python3-requests python3-tomli python3-tomlkit python3-tqdm python3-urllib3 python3-watchdog python3-pydantic)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing Debian packages; run: apt-get install --no-install-recommends ${missing[*]}"
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
fi

ctx="$(mktemp -d "${TMPDIR:-/tmp}/corral-runpod-image.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/tmp" "$root/usr/bin" "$root/usr/lib" "$root/opt/runpod" "$root/opt/deps" "$root/opt/aiohttp" "$root/etc"
chmod 1777 "$root/tmp"

log "collecting $python, its standard library and Debian's python3 packages"
cp "$python" "$root/usr/bin/python3.11"
ln -s python3.11 "$root/usr/bin/python3"
cp -a /usr/lib/python3.11 "$root/usr/lib/"
mkdir -p "$root/usr/lib/python3"
cp -a /usr/lib/python3/dist-packages "$root/usr/lib/python3/"
# Certificates (boto3 and requests load them at import) and the name service files a resolver reads.
[ -d /etc/ssl ] && cp -aL /etc/ssl "$root/etc/"
[ -d /usr/share/ca-certificates ] && mkdir -p "$root/usr/share" && cp -a /usr/share/ca-certificates "$root/usr/share/"
# OpenSSL's configuration and its providers (cryptography loads the legacy one), each a library of its own.
[ -d /usr/lib/ssl ] && cp -a /usr/lib/ssl "$root/usr/lib/"
for dir in /usr/lib/x86_64-linux-gnu/ossl-modules /usr/lib/x86_64-linux-gnu/engines-3; do
  [ -d "$dir" ] && mkdir -p "$root$(dirname "$dir")" && cp -aL "$dir" "$root$(dirname "$dir")/"
done
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$root/etc/passwd"

log "collecting the shared libraries they link"
mapfile -t objects < <(
  printf '%s\n' "$python"
  find "$root/usr/lib/python3.11" "$root/usr/lib/python3/dist-packages" "$root/usr/lib/x86_64-linux-gnu" -name '*.so*' -type f
)
mapfile -t libs < <(for o in "${objects[@]}"; do ldd "$o" 2>/dev/null || true; done | awk '
  $2 == "=>" && $3 ~ /^\// { print $3; next }
  $1 ~ /^\// { print $1 }' | sort -u)
for lib in "${libs[@]}"; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

log "adding runpod-python from $runpod_dir (unmodified) and the missing dependencies"
cp -a "$runpod_dir/runpod" "$root/opt/runpod/"
cp -a "$retry_dir/aiohttp_retry" "$root/opt/deps/"
cp -a "$tqdm_dir/tqdm_loggable" "$root/opt/deps/"
# aiohttp's package directory as it is in its source tree: its Cython modules (.pyx) are not built, so it runs its
# pure-Python parser and helpers (AIOHTTP_NO_EXTENSIONS=1 says so rather than trying the missing extensions).
cp -a "$aiohttp_dir/aiohttp" "$root/opt/aiohttp/"
# The SDK reads its version with importlib.metadata ("unknown" without it): a minimal dist-info says which source
# it is, from git or RUNPOD_VERSION (e.g. 1.12.0).
version="${RUNPOD_VERSION:-$(git -C "$runpod_dir" describe --tags 2>/dev/null || echo unknown)}"
version="${version#v}"
if [ "$version" != unknown ]; then
  mkdir -p "$root/opt/runpod/runpod-$version.dist-info"
  printf 'Metadata-Version: 2.1\nName: runpod\nVersion: %s\n' "$version" >"$root/opt/runpod/runpod-$version.dist-info/METADATA"
fi
cp "$fixture/handler.py" "$fixture/test_input.json" "$ctx/"

cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
COPY handler.py test_input.json /
ENV PYTHONPATH=/opt/aiohttp:/opt/runpod:/opt/deps AIOHTTP_NO_EXTENSIONS=1 PYTHONDONTWRITEBYTECODE=1 HOME=/tmp
WORKDIR /
ENTRYPOINT ["/usr/bin/python3", "-u", "/handler.py"]
DOCKERFILE

# Debian 12's python3-aiohttp (3.8) predates ClientTimeout(ceil_threshold=) (aio-libs/aiohttp#6316), which
# runpod-python 1.12.0's worker loop passes, hence the given tree ahead of it on the path. The label says which
# aiohttp the image holds, as the image imports it (test/e2e/runpod-sdk.test.ts reads it).
aiohttp_version="$(cd / && PYTHONPATH="$aiohttp_dir" AIOHTTP_NO_EXTENSIONS=1 "$python" -c 'import aiohttp; print(aiohttp.__version__)')"
log "building $tag (runpod-python $version, aiohttp $aiohttp_version)"
docker build -q -t "$tag" --label "corral.dev/runpod-python=$version" --label "corral.dev/aiohttp=$aiohttp_version" \
  "$ctx" >&2
printf '%s\n' "$tag"
