/**
 * Figures 1-4: one test worker as the upstream of every path (direct, the gateway child, nginx with one worker
 * process and with `auto`, the bare reference proxy), then throughput and latency through each.
 */
import { performance } from 'node:perf_hooks';
import { freePort } from '../support.js';
import type { Tools } from '../tools.js';
import { httpGet, pollHealthy } from './http.js';
import { latencyFigures } from './latency.js';
import { type NginxProcess, startNginx } from './nginx.js';
import type { Path } from './paths.js';
import { spawnWorker, stopChild } from './processes.js';
import { type ProxyProcess, startProxyChild } from './proxy-child.js';
import { APP_NAME, BARE_PATH, WORK_PATH } from './settings.js';
import { throughputFigures } from './throughput.js';

/** Starts every path, measures, and stops them all (also on failure). */
export async function proxyFigures(tools: Tools, dir: string, problems: string[], summary: string[][]) {
  const workerPort = await freePort();
  const worker = spawnWorker(workerPort);
  let gateway: ProxyProcess | undefined;
  let bare: ProxyProcess | undefined;
  const nginxes: NginxProcess[] = [];
  try {
    await pollHealthy(workerPort, performance.now(), 10, worker);
    gateway = await startProxyChild('gateway', workerPort);
    const gatewayChildPid = gateway.child.pid;
    const paths: Path[] = [
      { name: 'direct', port: workerPort, proxyPids: () => [] },
      {
        name: 'gateway',
        port: gateway.port,
        host: `${APP_NAME}.localhost`,
        proxyPids: () => (gatewayChildPid === undefined ? [] : [gatewayChildPid]),
      },
    ];
    if (tools.nginx) {
      try {
        const one = await startNginx(tools.nginx, workerPort, '1', dir);
        nginxes.push(one);
        paths.push({ name: 'nginx', port: one.port, proxyPids: () => one.pids() });
        const auto = await startNginx(tools.nginx, workerPort, 'auto', dir);
        nginxes.push(auto);
        paths.push({ name: 'nginx (workers auto)', port: auto.port, proxyPids: () => auto.pids() });
      } catch (error) {
        problems.push(`nginx: ${(error as Error).message}`);
      }
    }
    bare = await startProxyChild('bare', workerPort);
    const barePid = bare.child.pid;
    paths.push({
      name: BARE_PATH,
      port: bare.port,
      proxyPids: () => (barePid === undefined ? [] : [barePid]),
    });
    const check = await httpGet(gateway.port, WORK_PATH, { host: `${APP_NAME}.localhost` });
    if (check.status !== 200) throw new Error(`the gateway answered ${check.status}: ${check.body}`);

    await throughputFigures(tools.wrk, paths, worker.pid, problems, summary);
    await latencyFigures(
      paths.filter((p) => p.name !== 'nginx (workers auto)'),
      problems,
      summary,
    );
  } finally {
    for (const nginx of nginxes) await nginx.stop();
    await bare?.stop();
    await gateway?.stop();
    await stopChild(worker, 'SIGTERM', 2_000);
  }
}
