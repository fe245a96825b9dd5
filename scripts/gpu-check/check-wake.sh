#!/bin/bash
# The instant-wake check (issue 24) on a real GPU, through `corral serve --runtime local --gpus auto`: endpoint A's
# worker (gpu_proc.py holding GB of seeded tensors) goes idle, is frozen, then suspended (the GPU's used memory back to
# nearly zero); endpoint B's worker uses the GPU meanwhile and is deleted; A's next request wakes it by restore, and
# its checksum must be the one it had. Writes everything to OUTDIR, with wake-summary.json. Run from .gpu-check/
# (scripts/gpu-check/bundle.sh) once the wake-tiers work is merged. Usage: check-wake.sh OUTDIR [GB]. About a minute.
# GPUS=sim-80g:1 runs it without a GPU (a dry run of the script itself: nothing is suspended there).
OUT=${1:-/tmp/dcout}; GB=${2:-4}; GPUS=${GPUS:-auto}; mkdir -p "$OUT"; cd "$(dirname "$0")"
exec > >(tee "$OUT/check-wake.log") 2>&1
set -x
date -u; nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,driver_version --format=csv || true
NODE=$(command -v node || true)
if [ -z "$NODE" ]; then python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open(\"node.xz\"), open(\"/tmp/node\",\"wb\"))" && chmod +x /tmp/node && NODE=/tmp/node; fi
"$NODE" cuda-helper.js driver-version
DATA=$(mktemp -d); printf "quotas: { minGpus: unlimited, maxGpus: unlimited }\n" > $DATA/corral.yaml; KEY=devcheck-admin-key-0123456789abcdef
CORRAL_DATA_DIR=$DATA CORRAL_API_KEY=$KEY CORRAL_LOG_FORMAT=json "$NODE" corral.mjs serve --runtime local --local-allow-root --gpus "$GPUS" --config $DATA/corral.yaml > "$OUT/serve.log" 2>&1 &
SERVE=$!
API=http://127.0.0.1:8080/gpu-instance/openapi/v1; H="Authorization: Bearer $KEY"
for i in $(seq 1 60); do curl -sf "$API/products" -H "$H" > /dev/null && break; sleep 0.5; done
grep -h "GPU checkpoint" "$OUT/serve.log"
create() { curl -s "$API/endpoint/create" -H "$H" -H 'Content-Type: application/json' -d "$1"; echo; }
spec() { echo "{\"endpoint\":{\"name\":\"$1\",\"image\":{\"image\":\"local\",\"command\":\"python3 $PWD/gpu_proc.py hold $2\"},\"ports\":[{\"port\":8000}],\"workerConfig\":{\"minNum\":0,\"maxNum\":1,\"gpuNum\":1,\"maxConcurrent\":4,\"freeTimeout\":5$3}}}"; }
app() { echo "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); e=d.get("endpoint",d); print(e.get("appName") or e.get("id"))'; }
states() { curl -s "$API/endpoint?id=$1" -H "$H" | python3 -c 'import json,sys; e=json.load(sys.stdin)["endpoint"]; s=[w.get("state","?") for w in e.get("workers",[])]; print(" ".join(x.get("state","?") if isinstance(x,dict) else str(x) for x in s))'; }
# One request: the body, then a line "HTTP <code> <seconds> <Server-Timing>".
ask() { curl -s -m 90 -D "$OUT/headers.$2" -w "\nHTTP %{http_code} %{time_total}\n" "http://127.0.0.1:8000/e/$1/check" -H "$H"; grep -i '^server-timing' "$OUT/headers.$2" || true; }
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; }
A=$(app "$(create "$(spec wake-a "$GB" ',"keepFrozen":5,"keepSuspended":600')")")
# First request: a cold start (the app imports torch and fills the GPU).
ask "$A" a-cold > "$OUT/a-cold.txt"; cat "$OUT/a-cold.txt"
echo "USED_MIB_A_RUNNING $(used)"
# Idle for freeTimeout (5 s): frozen, keeping its GPU; after keepFrozen (5 s): suspended, its GPU free.
# No worker at all: it was stopped, not frozen (the tiers are off); the loops then end at once.
for i in $(seq 1 60); do S=$(states "$A"); echo "A workers: $S"; [[ -z "$S" || "$S" == *frozen* || "$S" == *suspended* ]] && break; sleep 0.5; done
echo "USED_MIB_A_FROZEN $(used)"
for i in $(seq 1 80); do S=$(states "$A"); echo "A workers: $S"; [[ -z "$S" || "$S" == *suspended* ]] && break; sleep 0.5; done
echo "USED_MIB_A_SUSPENDED $(used)"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits
# B uses the GPU while A is suspended.
B=$(app "$(create "$(spec wake-b 8 '')")")
ask "$B" b-cold > "$OUT/b-cold.txt"; cat "$OUT/b-cold.txt"
echo "A workers while B runs: $(states "$A")"
echo "USED_MIB_B_RUNNING $(used)"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits
curl -s "$API/gpus" -H "$H"; echo
curl -s "$API/endpoint/delete" -H "$H" -H "Content-Type: application/json" -d "{\"id\":\"$B\"}"; echo
for i in $(seq 1 40); do [ "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)" = 0 ] && break; sleep 0.5; done
echo "USED_MIB_B_DELETED $(used)"; echo "A workers: $(states "$A")"
# A's next request wakes it by restore; the checksum must be the one of its first answer.
ask "$A" a-wake > "$OUT/a-wake.txt"; cat "$OUT/a-wake.txt"
ask "$A" a-warm > "$OUT/a-warm.txt"; cat "$OUT/a-warm.txt"
echo "USED_MIB_A_RESTORED $(used)"
curl -s "$API/endpoint/metrics?id=$A" -H "$H"; echo
grep -h '"gpu process\|suspend\|restor\|thaw\|froze' "$OUT/serve.log" | tail -20
python3 - "$OUT" <<'PY'
import json, re, sys
out = sys.argv[1]
def answer(name):
    text = open(f"{out}/{name}.txt").read()
    body = text.split("\nHTTP ")[0]
    code, seconds = re.search(r"HTTP (\d+) ([\d.]+)", text).groups()
    timing = re.search(r"(?im)^server-timing: *(.*)$", text)
    try: body = json.loads(body)
    except Exception: pass
    return {"status": int(code), "seconds": float(seconds), "server_timing": timing.group(1).strip() if timing else None, "body": body}
log = open(f"{out}/check-wake.log").read()
used = {k: v for k, v in re.findall(r"^(USED_MIB_\w+) (\d+)", log, re.M)}
runs = {n: answer(n) for n in ("a-cold", "b-cold", "a-wake", "a-warm")}
cold, wake = runs["a-cold"]["body"], runs["a-wake"]["body"]
summary = {"used_mib": used, "answers": runs,
           # The same process (not a new one: each fills its GPU memory with a seed of its own), its tensors unchanged.
           "same_process": isinstance(cold, dict) and isinstance(wake, dict) and cold.get("pid") == wake.get("pid"),
           "intact": isinstance(cold, dict) and isinstance(wake, dict) and cold.get("words") == wake.get("words") and cold.get("head_sha256") == wake.get("head_sha256")}
# The driver's own restore (the helper's timed cuCheckpointProcessRestore, from serve.log's last "gpu process resumed"
# line) next to the restore's dur in the wake's Server-Timing: their ratio is issue 24's target (within 1.2x).
driver_ms = None
for line in open(f"{out}/serve.log"):
    try: entry = json.loads(line)
    except Exception: continue
    if entry.get("msg") == "gpu process resumed":
        driver_ms = sum(s["ms"] for s in entry.get("steps", []) if s.get("call") == "cuCheckpointProcessRestore") or driver_ms
timing = re.search(r"restore;dur=([\d.]+)", runs["a-wake"]["server_timing"] or "")
restore_ms = float(timing.group(1)) if timing else None
summary["restore"] = {"driver_ms": driver_ms, "server_timing_ms": restore_ms,
                      "wake_ms": round(runs["a-wake"]["seconds"] * 1000),
                      "ratio": round(restore_ms / driver_ms, 3) if driver_ms and restore_ms else None,
                      "wake_ratio": round(runs["a-wake"]["seconds"] * 1000 / driver_ms, 3) if driver_ms else None}
print("RESTORE driver_ms=%s server_timing_restore_ms=%s ratio=%s (wake with first answer %s ms, ratio %s)" % (
    driver_ms, restore_ms, summary["restore"]["ratio"], summary["restore"]["wake_ms"], summary["restore"]["wake_ratio"]))
open(f"{out}/wake-summary.json", "w").write(json.dumps(summary) + "\n")
print("WAKE SUMMARY " + json.dumps(summary))
PY
# Local workers outlive corral serve by design (a restart adopts them): end them, so that a second run starts clean.
kill $SERVE; wait $SERVE; pkill -f "gpu_proc.py hold"; true
