# A process that uses the GPU, for the checkpoint checks (probe_checkpoint.py, check-wake.sh).
#   gpu_proc.py hold GB [PORT]  fills GB of GPU memory with random tensors (a seed of its own, so that a new process
#                               has other values) and serves GET /check (their exact checksum, the pid, how long it
#                               took) on PORT ($PORT, or any free port: printed on stdout)
#   gpu_proc.py hog FRACTION    allocates FRACTION of the GPU's free memory, writes it, prints what it got, exits
#   Without torch (a dry run of the checks on a machine without a GPU, GPUS=sim-80g:1), `hold` keeps 64 MiB of random
#   host memory instead and answers the same fields.
import hashlib, http.server, json, os, sys, time

try:
    import torch
except ImportError:
    torch = None

CHUNK = 1 << 30  # bytes per tensor


def checksum(chunks):
    """Exact and order-free: the sum of every 32-bit word as an int64 per chunk, and a hash of each chunk's first MiB."""
    start = time.monotonic()
    words = [int(c.view(torch.int32).sum(dtype=torch.int64).item()) for c in chunks]
    heads = hashlib.sha256(b"".join(c[: 1 << 18].cpu().numpy().tobytes() for c in chunks)).hexdigest()
    return {"words": sum(words) & ((1 << 63) - 1), "head_sha256": heads, "pid": os.getpid(), "ms": round((time.monotonic() - start) * 1000, 2)}


def dry_chunks():
    data = os.urandom(64 << 20)
    def check(_):
        start = time.monotonic()
        words = int.from_bytes(hashlib.sha256(data).digest()[:7], "big")
        return {"words": words, "head_sha256": hashlib.sha256(data[: 1 << 20]).hexdigest(), "pid": os.getpid(), "ms": round((time.monotonic() - start) * 1000, 2)}
    return check


def hold(gb, port):
    global checksum
    if torch is None:
        checksum = dry_chunks()
    start = time.monotonic()
    seed = int.from_bytes(os.urandom(4), "big")
    n = max(1, int(gb * (1 << 30) // CHUNK))
    chunks = []
    if torch is not None:
        torch.manual_seed(seed)
        chunks = [torch.randn(CHUNK // 4, device="cuda") for _ in range(n)]
        torch.cuda.synchronize()
    first = checksum(chunks)
    ready = {"pid": os.getpid(), "seed": seed, "gb": n, "checksum": first, "init_s": round(time.monotonic() - start, 2)}

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(checksum(chunks) if self.path.startswith("/check") else ready).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    ready["port"] = server.server_address[1]
    print("READY " + json.dumps(ready), flush=True)
    server.serve_forever()


def hog(fraction):
    free, total = torch.cuda.mem_get_info()
    start = time.monotonic()
    size = int(free * fraction)
    block = torch.empty(size, dtype=torch.uint8, device="cuda")
    block.fill_(7)
    torch.cuda.synchronize()
    got = {"free_before": free, "total": total, "allocated": size, "alloc_s": round(time.monotonic() - start, 2)}
    del block
    torch.cuda.empty_cache()
    print("HOG " + json.dumps(got), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(float(sys.argv[2]), int(sys.argv[3] if len(sys.argv) > 3 else os.environ.get("PORT", "0")))
    else:
        hog(float(sys.argv[2]))
