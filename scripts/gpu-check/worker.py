# A worker that reports what GPUs it was given and can see (used by the device check).
import http.server, json, os, subprocess, sys

def probe():
    report = {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CORRAL_WORKER_ID")}
    try:
        report["nvidia_smi_L"] = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:
        report["nvidia_smi_L"] = repr(e)
    try:
        import torch
        n = torch.cuda.device_count()
        report["torch_device_count"] = n
        report["torch_devices"] = [
            {"name": torch.cuda.get_device_name(i), "uuid": str(torch.cuda.get_device_properties(i).uuid)} for i in range(n)
        ]
    except Exception as e:
        report["torch_error"] = repr(e)
    return report

REPORT = json.dumps(probe()).encode()
print("worker report", REPORT.decode(), flush=True)

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPORT)))
        self.end_headers()
        self.wfile.write(REPORT)
    def log_message(self, *a):
        pass

http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
