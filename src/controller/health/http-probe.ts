/** The health probe `corral serve` uses: an HTTP GET of the worker's health path. Tests inject their own. */
import { request } from 'node:http';
import type { HealthProbe } from './health-prober.js';
import type { ProbeResult } from './probe-result.js';

/** GET the health path: its status, no answer within the timeout, or the connection's error. Never rejects. */
export const httpProbe: HealthProbe = (address, path, timeoutMs) =>
  new Promise<ProbeResult>((resolve) => {
    let settled = false;
    const settle = (result: ProbeResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    const req = request(
      { host: address.host, port: address.port, path, method: 'GET', timeout: timeoutMs, agent: false },
      (res) => {
        res.resume();
        settle({ kind: 'answered', status: res.statusCode ?? 0 });
      },
    );
    req.on('timeout', () => {
      settle({ kind: 'timeout' });
      req.destroy();
    });
    req.on('error', (error: NodeJS.ErrnoException) =>
      settle({ kind: 'error', code: error.code ?? '', message: error.message }),
    );
    req.end();
  });
