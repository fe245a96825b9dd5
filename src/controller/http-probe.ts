/** The health probe `corral serve` uses: an HTTP GET of the worker's health path. Tests inject their own. */
import { request } from 'node:http';
import type { HealthProbe } from './health-prober.js';

/** GET the health path; a 2xx or 3xx answer within the timeout passes. */
export const httpProbe: HealthProbe = (address, path, timeoutMs) =>
  new Promise((resolve) => {
    const req = request(
      { host: address.host, port: address.port, path, method: 'GET', timeout: timeoutMs, agent: false },
      (res) => {
        res.resume();
        resolve((res.statusCode ?? 500) < 400);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
