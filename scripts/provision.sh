#!/usr/bin/env bash
# Installs and starts what the integration suites need: PostgreSQL, a Docker engine, the registry and htpasswd
# of the private-image suite (Debian packages; the suite starts the registry itself), and Chromium for the
# dashboard's browser suite (Debian's chromium, driven by playwright-core, which downloads no browser itself).
# Idempotent: does nothing for what is already running.
# Usage: provision.sh [ENV_FILE]. The environment to export is written to ENV_FILE, or printed when none is given.
set -euo pipefail
env_file=${1:-}

# Everything but the environment goes to stderr (pg_ctlcluster says "Removed stale pid file." on stdout).
exec 3>&1 1>&2

log() { printf 'provision: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
# A daemon must hold none of this script's descriptors: a caller that reads our output through a pipe
# (`$(provision.sh)`, or CI's log) would otherwise wait for the daemon to exit, that is forever.
# in_new_session LOG --wait|--fork COMMAND...: COMMAND in its own session, its output appended to LOG.
in_new_session() {
  local log=$1
  shift
  as_root setsid "$@" </dev/null >>"$log" 2>&1 3>&-
}

need_packages=()
command -v pg_ctlcluster >/dev/null 2>&1 || need_packages+=(postgresql)
command -v dockerd >/dev/null 2>&1 || need_packages+=(docker.io)
# The private-image suite starts its own registry (htpasswd auth): Debian's docker-registry and htpasswd.
command -v docker-registry >/dev/null 2>&1 || need_packages+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need_packages+=(apache2-utils)
command -v chromium >/dev/null 2>&1 || need_packages+=(chromium)
# A network suite makes a bridge outside Docker to check that a subnet the host routes is passed over.
command -v ip >/dev/null 2>&1 || need_packages+=(iproute2)
if [ "${#need_packages[@]}" -gt 0 ]; then
  log "installing ${need_packages[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${need_packages[@]}" >/dev/null
fi

# PostgreSQL: first cluster found, started, with a corral role and database.
cluster=$(pg_lsclusters --no-header 2>/dev/null | head -n1 || true)
if [ -z "$cluster" ]; then
  version=$(ls /usr/lib/postgresql | sort -V | tail -n1)
  log "creating PostgreSQL $version cluster"
  as_root pg_createcluster "$version" main >/dev/null
  cluster=$(pg_lsclusters --no-header | head -n1)
fi
read -r pg_version pg_name pg_port pg_status _ <<<"$cluster"
if [ "$pg_status" != online ]; then
  log "starting PostgreSQL $pg_version/$pg_name"
  pg_start_log=$(mktemp)
  in_new_session "$pg_start_log" --wait pg_ctlcluster "$pg_version" "$pg_name" start ||
    { cat "$pg_start_log"; rm -f "$pg_start_log"; log "PostgreSQL did not start"; exit 1; }
  rm -f "$pg_start_log"
fi
for _ in $(seq 1 30); do
  as_root su postgres -c "psql -p $pg_port -qtAc 'select 1'" >/dev/null 2>&1 && break
  sleep 1
done
as_root su postgres -c "psql -p $pg_port -qtAc \"select 1 from pg_roles where rolname='corral'\"" | grep -q 1 ||
  as_root su postgres -c "psql -p $pg_port -qc \"create role corral login password 'corral' createdb\""
as_root su postgres -c "psql -p $pg_port -qtAc \"select 1 from pg_database where datname='corral_test'\"" | grep -q 1 ||
  as_root su postgres -c "psql -p $pg_port -qc 'create database corral_test owner corral'"

# Docker engine: started in the background when its socket does not answer.
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd"
  # A machine restored from a snapshot keeps the pid file of a dockerd that no longer runs; dockerd refuses
  # to start if that pid now belongs to another process.
  if ! pgrep -x dockerd >/dev/null 2>&1; then as_root rm -f /var/run/docker.pid; fi
  in_new_session /var/log/dockerd.log --fork dockerd
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  if ! docker info >/dev/null 2>&1; then
    log "dockerd did not answer in 60 s; the end of /var/log/dockerd.log:"
    tail -n 40 /var/log/dockerd.log >&2
    exit 1
  fi
fi

env_line="CORRAL_TEST_DATABASE_URL=postgres://corral:corral@127.0.0.1:${pg_port}/corral_test"
if [ -n "$env_file" ]; then printf '%s\n' "$env_line" >"$env_file"; else printf '%s\n' "$env_line" >&3; fi
