/** nginx proxying the bench worker, with its own config on a free 127.0.0.1 port: the throughput reference. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../support.js';
import { httpGet, waitFor } from './http.js';
import { childPids, stopChild, track } from './processes.js';

export interface NginxProcess {
  port: number;
  child: ChildProcess;
  /** Master and workers. */
  pids(): number[];
  stop(): Promise<void>;
}

export async function startNginx(
  binary: string,
  upstreamPort: number,
  workerProcesses: string,
  dir: string,
): Promise<NginxProcess> {
  const port = await freePort();
  const prefix = join(dir, `nginx-${workerProcesses}`);
  mkdirSync(join(prefix, 'tmp'), { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `# Written by bench/gateway/nginx.ts: nginx proxying the bench worker with upstream keep-alive.
worker_processes ${workerProcesses};
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path ${prefix}/tmp/body;
  proxy_temp_path ${prefix}/tmp/proxy;
  fastcgi_temp_path ${prefix}/tmp/fastcgi;
  uwsgi_temp_path ${prefix}/tmp/uwsgi;
  scgi_temp_path ${prefix}/tmp/scgi;
  upstream corral_bench_worker {
    server 127.0.0.1:${upstreamPort};
    keepalive 32;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://corral_bench_worker;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
    }
  }
}
`,
  );
  const child = track(
    spawn(binary, ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  try {
    await waitFor(
      `nginx (worker_processes ${workerProcesses}) to proxy`,
      async () => {
        if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}: ${stderr}`);
        const ok = await httpGet(port, '/health', { timeoutMs: 1_000 }).then(
          (a) => a.status === 200,
          () => false,
        );
        return ok ? true : undefined;
      },
      { intervalMs: 20, maxMs: 10_000 },
    );
  } catch (error) {
    const log = existsSync(join(prefix, 'error.log')) ? readFileSync(join(prefix, 'error.log'), 'utf8') : '';
    await stopChild(child, 'SIGQUIT');
    throw new Error(`${(error as Error).message}\n${stderr}${log}`);
  }
  return {
    port,
    child,
    pids: () => (child.pid === undefined ? [] : [child.pid, ...childPids(child.pid)]),
    stop: () => stopChild(child, 'SIGQUIT'),
  };
}
