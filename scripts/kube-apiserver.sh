#!/usr/bin/env bash
# Starts a real Kubernetes API server for the opt-in contract suite (docs/kubernetes.md, "Against a real API
# server"): etcd on 127.0.0.1 and kube-apiserver (TLS with a self-signed certificate, a static bearer token bound to
# system:masters, RBAC and the default admission plugins), then writes a kubeconfig and creates the test namespace
# with its default ServiceAccount (no controller-manager runs to make it). There is no scheduler, kubelet or metrics
# server: the suite's test kubelet plays the first two.
#
# Usage: scripts/kube-apiserver.sh start [dir]   (default dir /tmp/corral-kube; prints the kubeconfig's path)
#        scripts/kube-apiserver.sh stop [dir]
# Needs: KUBE_APISERVER (default /work/k8s-bin/kube-apiserver, built from Kubernetes 1.28 with
#   GOFLAGS=-mod=vendor go build -tags providerless,selinux,notest ./cmd/kube-apiserver), etcd and kubectl on PATH
#   (KUBECTL to name another), openssl. Ports: ETCD_PORT (default 23790), APISERVER_PORT (default 26443);
#   APISERVER_ADDRESS (default 127.0.0.1) is where it listens and what it advertises (scripts/kube-cluster.sh gives
#   it one its pods can reach).
# CI does not use this: it runs the suite on the in-process stand-in (test/support/kube-stand-in.ts).
set -euo pipefail

action="${1:-start}"
dir="${2:-/tmp/corral-kube}"
apiserver="${KUBE_APISERVER:-/work/k8s-bin/kube-apiserver}"
kubectl="${KUBECTL:-kubectl}"
etcd_port="${ETCD_PORT:-23790}"
api_port="${APISERVER_PORT:-26443}"
api_address="${APISERVER_ADDRESS:-127.0.0.1}"
namespace="${CORRAL_TEST_NAMESPACE:-corral-test}"

log() { printf 'kube-apiserver.sh: %s\n' "$*" >&2; }
die() {
  printf 'kube-apiserver.sh: error: %s\n' "$*" >&2
  exit 1
}

stop() {
  for name in kube-apiserver etcd; do
    if [[ -f "$dir/$name.pid" ]]; then
      kill "$(cat "$dir/$name.pid")" 2>/dev/null || true
      rm -f "$dir/$name.pid"
    fi
  done
}

if [[ "$action" == stop ]]; then
  stop
  exit 0
fi
[[ "$action" == start ]] || die "usage: $0 start|stop [dir]"
[[ -x "$apiserver" ]] || die "no kube-apiserver at $apiserver (set KUBE_APISERVER)"
command -v etcd >/dev/null || die "no etcd on PATH (Debian: apt-get install etcd-server)"
command -v "$kubectl" >/dev/null || die "no kubectl (set KUBECTL)"

mkdir -p "$dir/etcd" "$dir/certs"
stop
if [[ ! -f "$dir/token" ]]; then openssl rand -hex 24 >"$dir/token"; fi
token="$(cat "$dir/token")"
printf '%s,corral-test-admin,corral-test-admin,system:masters\n' "$token" >"$dir/tokens.csv"
if [[ ! -f "$dir/sa.key" ]]; then openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null; fi

log "starting etcd on 127.0.0.1:$etcd_port"
etcd --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" >"$dir/etcd.log" 2>&1 &
echo $! >"$dir/etcd.pid"

log "starting kube-apiserver on https://$api_address:$api_port"
"$apiserver" \
  --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address "$api_address" --advertise-address "$api_address" --secure-port "$api_port" \
  --allow-privileged=true --kubelet-preferred-address-types InternalIP \
  --cert-dir "$dir/certs" \
  --token-auth-file "$dir/tokens.csv" \
  --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$dir/sa.key" --service-account-signing-key-file "$dir/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16 \
  >"$dir/kube-apiserver.log" 2>&1 &
echo $! >"$dir/kube-apiserver.pid"

cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: corral-test
    cluster:
      server: https://$api_address:$api_port
      insecure-skip-tls-verify: true
users:
  - name: corral-test-admin
    user:
      token: $token
contexts:
  - name: corral-test
    context: { cluster: corral-test, user: corral-test-admin, namespace: $namespace }
current-context: corral-test
EOF

for _ in $(seq 1 120); do
  if "$kubectl" --kubeconfig "$dir/kubeconfig" get --raw /readyz >/dev/null 2>&1; then break; fi
  kill -0 "$(cat "$dir/kube-apiserver.pid")" 2>/dev/null || die "kube-apiserver exited: see $dir/kube-apiserver.log"
  sleep 1
done
"$kubectl" --kubeconfig "$dir/kubeconfig" get --raw /readyz >/dev/null || die "not ready after 120 s: see $dir/kube-apiserver.log"
"$kubectl" --kubeconfig "$dir/kubeconfig" create namespace "$namespace" --dry-run=client -o yaml |
  "$kubectl" --kubeconfig "$dir/kubeconfig" apply -f - >/dev/null
"$kubectl" --kubeconfig "$dir/kubeconfig" -n "$namespace" create serviceaccount default --dry-run=client -o yaml |
  "$kubectl" --kubeconfig "$dir/kubeconfig" apply -f - >/dev/null
log "ready; namespace $namespace"
echo "$dir/kubeconfig"
