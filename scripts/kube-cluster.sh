#!/usr/bin/env bash
# Starts a real Kubernetes cluster on this one machine, from binaries the developer built (docs/kubernetes.md, "A
# real cluster on one machine"), for the opt-in real-cluster suite: etcd and kube-apiserver (scripts/kube-apiserver.sh),
# kube-controller-manager, kube-scheduler, one kube-proxy (iptables), and N nodes, each a kubelet on a containerd of its
# own (its own socket, root, CNI bridge and pod subnet 10.244.{i}.0/24, and cgroup root /corral-node-{i}, so that no
# node sees or cleans up another's pods). Cluster DNS is dnsmasq (Debian's) answering {svc}.{ns}.svc[.cluster.local]
# from the Services, behind the kube-dns Service at 10.96.0.10, as CoreDNS is on a real cluster.
#
# Addresses live on a bridge of their own (corralk8s0, 10.250.0.0/24): the API server 10.250.0.10, DNS 10.250.0.53,
# node i 10.250.0.{i}. No bridge here is named crl*: Corral's Docker runtime filters what those send to this machine.
# A registry (Debian's docker-registry) on 127.0.0.1:5050 (REGISTRY_PORT) that every node's containerd pulls from
# over plain HTTP. Nothing listens outside this machine. Each node advertises nvidia.com/gpu (GPUS_PER_NODE, default 2) patched into
# its status, with NVIDIA's product label, as a GPU node's device plugin and feature
# discovery would; no device is handed to a pod.
#
# Usage: scripts/kube-cluster.sh start [nodes] [dir]   (default 1 node, dir /var/lib/corral-cluster; prints the
#                                                        admin kubeconfig's path)
#        scripts/kube-cluster.sh images IMAGE...        (copies images from Docker into every node's containerd)
#        scripts/kube-cluster.sh stop [dir]             (stops everything, deletes the pods' cgroups and rules)
# Needs: root; K8S_BIN (default /work/k8s-bin) holding kube-apiserver, kube-controller-manager, kube-scheduler,
#   kubelet and kube-proxy built from Kubernetes 1.28; etcd, containerd, ctr, kubectl, dnsmasq, iptables, gcc (the
#   pause image is compiled from the source's build/pause/linux/pause.c, K8S_SRC, default /work/k8s-src), Docker
#   (to build that image and hand images to the nodes); CNI plugins in /usr/lib/cni (containernetworking-plugins).
set -euo pipefail

action="${1:-start}"
bin="${K8S_BIN:-/work/k8s-bin}"
src="${K8S_SRC:-/work/k8s-src}"
gpus_per_node="${GPUS_PER_NODE:-2}"
gpu_product="${GPU_PRODUCT:-NVIDIA-H100-80GB-HBM3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bridge=corralk8s0
api_ip=10.250.0.10
dns_ip=10.250.0.53
api_port=26443
pause_image=registry.k8s.io/pause:3.9
# A registry the nodes pull from (plain HTTP, on this machine's loopback, which every node's containerd shares):
# images pushed to it as 127.0.0.1:$registry_port/NAME:TAG are pulled by the kubelets as on a real cluster.
registry_port="${REGISTRY_PORT:-5050}"

log() { printf 'kube-cluster.sh: %s\n' "$*" >&2; }
die() {
  printf 'kube-cluster.sh: error: %s\n' "$*" >&2
  exit 1
}

node_dirs() { find "$1" -maxdepth 1 -name 'node-*' -type d 2>/dev/null | sort; }

stop_pid() {
  local file="$1"
  [[ -f "$file" ]] || return 0
  local pid
  pid="$(cat "$file")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$file"
}

# Every container of a node dies with its cgroups: a stopped kubelet leaves its pods running in containerd.
kill_node_pods() {
  local cg="$1"
  if [[ -d "/sys/fs/cgroup/freezer/$cg" ]]; then
    find "/sys/fs/cgroup/freezer/$cg" -name freezer.state -exec sh -c 'echo THAWED >"$1"' _ {} \; 2>/dev/null || true
  fi
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -d "$hierarchy$cg" ]] || continue
    find "$hierarchy$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  done
  sleep 0.5
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -d "$hierarchy$cg" ]] || continue
    find "$hierarchy$cg" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

stop_cluster() {
  local dir="$1"
  stop_pid "$dir/dns-refresh.pid"
  stop_pid "$dir/dnsmasq.pid"
  stop_pid "$dir/registry.pid"
  stop_pid "$dir/kube-proxy.pid"
  for node in $(node_dirs "$dir"); do
    stop_pid "$node/kubelet.pid"
    stop_pid "$node/containerd.pid"
    kill_node_pods "/corral-node-${node##*-}"
    umount $(awk -v d="$node/" '$2 ~ "^"d {print $2}' /proc/mounts | sort -r) 2>/dev/null || true
  done
  stop_pid "$dir/kube-scheduler.pid"
  stop_pid "$dir/kube-controller-manager.pid"
  "$here/kube-apiserver.sh" stop "$dir" >/dev/null 2>&1 || true
  iptables -D FORWARD -s 10.244.0.0/16 -j ACCEPT 2>/dev/null || true
  iptables -D FORWARD -d 10.244.0.0/16 -j ACCEPT 2>/dev/null || true
  iptables -t nat -D POSTROUTING -s 10.244.0.0/16 ! -d 10.244.0.0/16 -j MASQUERADE 2>/dev/null || true
}

wait_for() {
  local what="$1" tries="$2"
  shift 2
  for _ in $(seq 1 "$tries"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  die "$what not ready after $tries s"
}

if [[ "$action" == stop ]]; then
  stop_cluster "${2:-/var/lib/corral-cluster}"
  exit 0
fi

if [[ "$action" == images ]]; then
  dir="${CLUSTER_DIR:-/var/lib/corral-cluster}"
  shift
  (($# > 0)) || die "usage: $0 images IMAGE..."
  for node in $(node_dirs "$dir"); do
    for image in "$@"; do
      log "${node##*/}: $image"
      docker save "$image" | ctr -a "$node/containerd.sock" -n k8s.io images import - >/dev/null
    done
  done
  exit 0
fi

[[ "$action" == start ]] || die "usage: $0 start [nodes] [dir] | images IMAGE... | stop [dir]"
nodes="${2:-1}"
dir="${3:-/var/lib/corral-cluster}"
[[ "$nodes" =~ ^[1-9]$ ]] || die "nodes must be 1-9, got $nodes"
[[ $EUID -eq 0 ]] || die "needs root (kubelet, containerd, iptables)"
for tool in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
  [[ -x "$bin/$tool" ]] || die "no $tool in $bin (set K8S_BIN; docs/kubernetes.md says how to build it)"
done
for tool in etcd containerd ctr kubectl dnsmasq iptables gcc docker docker-registry curl; do
  command -v "$tool" >/dev/null || die "$tool is not on PATH"
done
[[ -x /usr/lib/cni/bridge ]] || die "no CNI plugins in /usr/lib/cni (Debian: apt-get install containernetworking-plugins)"

stop_cluster "$dir"
mkdir -p "$dir"
kubectl=(kubectl --kubeconfig "$dir/kubeconfig")

ip link show "$bridge" >/dev/null 2>&1 || ip link add "$bridge" type bridge
ip link set "$bridge" up
addresses="$(ip -4 -o addr show dev "$bridge")"
for address in "$api_ip" "$dns_ip" $(seq -f '10.250.0.%g' 1 "$nodes"); do
  [[ "$addresses" == *"inet $address/"* ]] || ip addr add "$address/24" dev "$bridge"
done
# Docker's FORWARD policy is DROP: pods reach each other, the host's addresses and beyond.
iptables -I FORWARD -s 10.244.0.0/16 -j ACCEPT
iptables -I FORWARD -d 10.244.0.0/16 -j ACCEPT
iptables -t nat -A POSTROUTING -s 10.244.0.0/16 ! -d 10.244.0.0/16 -j MASQUERADE
sysctl -qw net.ipv4.ip_forward=1
modprobe br_netfilter 2>/dev/null || true

APISERVER_ADDRESS="$api_ip" APISERVER_PORT="$api_port" KUBE_APISERVER="$bin/kube-apiserver" \
  "$here/kube-apiserver.sh" start "$dir" >/dev/null

log "starting a registry on 127.0.0.1:$registry_port (docker-registry)"
mkdir -p "$dir/registry"
cat >"$dir/registry.yml" <<EOF
version: 0.1
log: { level: info, accesslog: { disabled: false } }
storage: { filesystem: { rootdirectory: $dir/registry }, delete: { enabled: true } }
http: { addr: "127.0.0.1:$registry_port" }
EOF
docker-registry serve "$dir/registry.yml" >"$dir/registry.log" 2>&1 &
echo $! >"$dir/registry.pid"
wait_for "the registry" 30 curl -fsS -o /dev/null "http://127.0.0.1:$registry_port/v2/"

log "starting kube-controller-manager and kube-scheduler"
"$bin/kube-controller-manager" --kubeconfig "$dir/kubeconfig" --authentication-kubeconfig "$dir/kubeconfig" \
  --authorization-kubeconfig "$dir/kubeconfig" --leader-elect=false --bind-address 127.0.0.1 \
  --service-account-private-key-file "$dir/sa.key" --root-ca-file "$dir/certs/apiserver.crt" \
  --use-service-account-credentials=false --controllers '*,-nodeipam' \
  --node-monitor-grace-period 20s >"$dir/kube-controller-manager.log" 2>&1 &
echo $! >"$dir/kube-controller-manager.pid"
"$bin/kube-scheduler" --kubeconfig "$dir/kubeconfig" --authentication-kubeconfig "$dir/kubeconfig" \
  --authorization-kubeconfig "$dir/kubeconfig" --leader-elect=false --bind-address 127.0.0.1 \
  >"$dir/kube-scheduler.log" 2>&1 &
echo $! >"$dir/kube-scheduler.pid"

# The pause image every pod's sandbox runs, compiled from the source: no registry is reachable.
if ! docker image inspect "$pause_image" >/dev/null 2>&1; then
  log "building $pause_image from $src/build/pause/linux/pause.c"
  [[ -f "$src/build/pause/linux/pause.c" ]] || die "no $src/build/pause/linux/pause.c (set K8S_SRC)"
  work="$(mktemp -d)"
  gcc -Os -static -DVERSION=3.9 -o "$work/pause" "$src/build/pause/linux/pause.c"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$work/Dockerfile"
  docker build -q -t "$pause_image" "$work" >/dev/null
  rm -rf "$work"
fi

for i in $(seq 1 "$nodes"); do
  node="$dir/node-$i"
  mkdir -p "$node/cni" "$node/kubelet" "$node/containerd-root" "$node/containerd-state" "$node/cni-ipam"
  cg="corral-node-$i"
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -L "${hierarchy%/}" ]] && continue
    mkdir -p "$hierarchy$cg"
  done
  cat >"$node/containerd.toml" <<EOF
version = 2
root = "$node/containerd-root"
state = "$node/containerd-state"
[grpc]
  address = "$node/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  # Where this machine may not lower an OOM score (itself a container), the kubelet's -998 for sandboxes fails.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$node/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.1:$registry_port"]
    endpoint = ["http://127.0.0.1:$registry_port"]
EOF
  cat >"$node/cni/10-corral.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "corral-node-$i",
  "plugins": [
    {
      "type": "bridge", "bridge": "corralk8snode$i", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$node/cni-ipam", "ranges": [[{ "subnet": "10.244.$i.0/24" }]],
                "routes": [{ "dst": "0.0.0.0/0" }] }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } },
    { "type": "loopback" }
  ]
}
EOF
  log "node-$i: containerd"
  containerd --config "$node/containerd.toml" >"$node/containerd.log" 2>&1 &
  echo $! >"$node/containerd.pid"
  wait_for "node-$i's containerd" 30 ctr -a "$node/containerd.sock" version
  docker save "$pause_image" | ctr -a "$node/containerd.sock" -n k8s.io images import - >/dev/null

  cat >"$node/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 10.250.0.$i
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: $((10300 + i))
readOnlyPort: 0
authentication:
  anonymous: { enabled: true }
  webhook: { enabled: false }
authorization: { mode: AlwaysAllow }
cgroupDriver: cgroupfs
cgroupRoot: /$cg
failSwapOn: false
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
containerRuntimeEndpoint: unix://$node/containerd.sock
podCIDR: 10.244.$i.0/24
serializeImagePulls: false
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
evictionHard: { memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%" }
EOF
  log "node-$i: kubelet"
  "$bin/kubelet" --config "$node/kubelet.yaml" --kubeconfig "$dir/kubeconfig" --hostname-override "node-$i" \
    --node-ip "10.250.0.$i" --root-dir "$node/kubelet" --cert-dir "$node/kubelet/pki" \
    --node-labels "nvidia.com/gpu.product=$gpu_product,nvidia.com/gpu.count=$gpus_per_node" \
    >"$node/kubelet.log" 2>&1 &
  echo $! >"$node/kubelet.pid"
done

for i in $(seq 1 "$nodes"); do
  wait_for "node-$i" 60 "${kubectl[@]}" get node "node-$i"
  # A GPU node's device plugin advertises its GPUs; here the status says so (the kubelet keeps what it was told).
  "${kubectl[@]}" patch node "node-$i" --subresource=status --type=merge \
    -p "{\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"$gpus_per_node\"},\"allocatable\":{\"nvidia.com/gpu\":\"$gpus_per_node\"}}}" >/dev/null
done

log "starting kube-proxy"
"$bin/kube-proxy" --kubeconfig "$dir/kubeconfig" --hostname-override node-1 --proxy-mode iptables \
  --cluster-cidr 10.244.0.0/16 --conntrack-max-per-core 0 --bind-address 10.250.0.1 \
  --healthz-bind-address 127.0.0.1:10356 --metrics-bind-address 127.0.0.1:10349 >"$dir/kube-proxy.log" 2>&1 &
echo $! >"$dir/kube-proxy.pid"

log "starting cluster DNS on $dns_ip (dnsmasq) behind kube-system/kube-dns 10.96.0.10"
upstream="$(awk '/^nameserver/ {print $2; exit}' /etc/resolv.conf)"
mkdir -p "$dir/dns"
: >"$dir/dns/hosts"
dnsmasq --keep-in-foreground --listen-address "$dns_ip" --bind-interfaces --port 53 --no-hosts --no-resolv \
  --addn-hosts "$dir/dns/hosts" --local=/cluster.local/ --server "${upstream:-1.1.1.1}" --pid-file= \
  >"$dir/dnsmasq.log" 2>&1 &
echo $! >"$dir/dnsmasq.pid"
(
  while true; do
    "${kubectl[@]}" get services -A -o jsonpath='{range .items[*]}{.spec.clusterIP} {.metadata.name}.{.metadata.namespace}.svc.cluster.local {.metadata.name}.{.metadata.namespace}.svc{"\n"}{end}' 2>/dev/null |
      grep -v '^None ' >"$dir/dns/hosts.next" || true
    if ! cmp -s "$dir/dns/hosts.next" "$dir/dns/hosts"; then
      mv "$dir/dns/hosts.next" "$dir/dns/hosts"
      kill -HUP "$(cat "$dir/dnsmasq.pid")" 2>/dev/null || true
    fi
    sleep 2
  done
) >/dev/null 2>&1 &
echo $! >"$dir/dns-refresh.pid"
"${kubectl[@]}" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: { name: kube-dns, namespace: kube-system }
spec:
  clusterIP: 10.96.0.10
  ports:
    - { name: dns, port: 53, protocol: UDP, targetPort: 53 }
    - { name: dns-tcp, port: 53, protocol: TCP, targetPort: 53 }
---
apiVersion: v1
kind: Endpoints
metadata: { name: kube-dns, namespace: kube-system }
subsets:
  - addresses: [{ ip: $dns_ip }]
    ports:
      - { name: dns, port: 53, protocol: UDP }
      - { name: dns-tcp, port: 53, protocol: TCP }
EOF

for i in $(seq 1 "$nodes"); do
  wait_for "node-$i Ready" 90 sh -c "${kubectl[*]} get node node-$i -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
done
wait_for "the default ServiceAccount" 60 "${kubectl[@]}" -n default get serviceaccount default
log "ready: $nodes node(s)"
echo "$dir/kubeconfig"
