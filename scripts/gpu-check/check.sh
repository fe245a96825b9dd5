#!/bin/bash
# The GPU check: Corral's inventory from the real nvidia-smi, and what a local-runtime worker given one GPU sees
# (CUDA_VISIBLE_DEVICES, nvidia-smi -L, PyTorch). Run from .gpu-check/ (scripts/gpu-check/bundle.sh). Usage: check.sh OUTDIR [GPUS]
OUT=${1:-/tmp/dcout}; GPUS=${2:-auto}; mkdir -p "$OUT"; cd "$(dirname "$0")"
exec > >(tee "$OUT/check.log") 2>&1
set -x
date -u; uname -a; nproc
nvidia-smi || true
nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version --format=csv || true
which node docker python3 nvidia-container-cli || true
NODE=$(command -v node || true)
if [ -z "$NODE" ]; then python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open(\"node.xz\"), open(\"/tmp/node\",\"wb\"))" && chmod +x /tmp/node && NODE=/tmp/node; fi
"$NODE" -v
DATA=$(mktemp -d); printf "quotas: { minGpus: unlimited, maxGpus: unlimited }\n" > $DATA/corral.yaml; KEY=devcheck-admin-key-0123456789abcdef
CORRAL_DATA_DIR=$DATA CORRAL_API_KEY=$KEY CORRAL_LOG_FORMAT=json "$NODE" corral.mjs serve --runtime local --local-allow-root --gpus "$GPUS" --config $DATA/corral.yaml > "$OUT/serve.log" 2>&1 &
SERVE=$!
API=http://127.0.0.1:8080/gpu-instance/openapi/v1; H="Authorization: Bearer $KEY"
for i in $(seq 1 60); do curl -sf "$API/products" -H "$H" > /dev/null && break; sleep 0.5; done
curl -s "$API/products" -H "$H"; echo
create() { curl -s "$API/endpoint/create" -H "$H" -H 'Content-Type: application/json' -d "$1"; echo; }
spec() { echo "{\"endpoint\":{\"name\":\"$1\",\"image\":{\"image\":\"local\",\"command\":\"python3 $PWD/worker.py\"},\"ports\":[{\"port\":8000}],\"workerConfig\":{\"minNum\":$3,\"maxNum\":1,\"gpuNum\":$2,\"maxConcurrent\":4}}}"; }
ONE=$(create "$(spec gpu-one 1 1)"); echo "$ONE"
WAIT=$(create "$(spec gpu-wait 1 0)"); echo "$WAIT"
TWO=$(create "$(spec gpu-two 2 0)"); echo "$TWO"
app() { echo "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); e=d.get("endpoint",d); print(e.get("appName") or e.get("id"))'; }
for name in "$(app "$ONE")"; do
  for i in $(seq 1 120); do
    R=$(curl -s -m 60 "http://127.0.0.1:8000/e/$name/" -H "$H"); echo "$R" | grep -q CUDA_VISIBLE && break; sleep 1
  done
  echo "ENDPOINT $name ANSWERED: $R"
done
sleep 2
echo "GPUS WHILE ONE IS HELD AND ONE WAITS:"; curl -s "$API/gpus" -H "$H"; echo
for e in "$WAIT" "$TWO"; do curl -s -m 8 -w " [%{http_code} in %{time_total}s]" "http://127.0.0.1:8000/e/$(app "$e")/" -H "$H"; echo; curl -s "$API/endpoint?id=$(app "$e")" -H "$H"; echo; done
curl -s "$API/endpoint/delete" -H "$H" -H "Content-Type: application/json" -d "{\"id\":\"$(app "$ONE")\"}"; echo
for i in $(seq 1 60); do R=$(curl -s -m 60 "http://127.0.0.1:8000/e/$(app "$WAIT")/" -H "$H"); echo "$R" | grep -q CUDA_VISIBLE && break; sleep 1; done; echo "AFTER DELETE, gpu-wait ANSWERED: $R"
curl -s "$API/endpoints" -H "$H"; echo
curl -s "$API/products" -H "$H"; echo
"$NODE" corral.mjs status --api-url http://127.0.0.1:8080 --api-key $KEY 2>&1 | head -20 || true
kill $SERVE; wait $SERVE; pkill -f worker.py; true
