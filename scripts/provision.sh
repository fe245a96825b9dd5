#!/usr/bin/env bash
# Installs and starts what the integration suites need: PostgreSQL and a Docker engine (Debian packages).
# Idempotent: does nothing for what is already running. Prints the environment to export on its last lines.
set -euo pipefail

# Only the environment lines may reach stdout (callers export them): everything else goes to stderr,
# including what the tools started here print (pg_ctlcluster says "Removed stale pid file." on stdout).
exec 3>&1 1>&2

log() { printf 'provision: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

need_packages=()
command -v pg_ctlcluster >/dev/null 2>&1 || need_packages+=(postgresql)
command -v dockerd >/dev/null 2>&1 || need_packages+=(docker.io)
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
  as_root pg_ctlcluster "$pg_version" "$pg_name" start
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
  as_root sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not start; see /var/log/dockerd.log"; exit 1; }
fi

echo >&3 "CORRAL_TEST_DATABASE_URL=postgres://corral:corral@127.0.0.1:${pg_port}/corral_test"
