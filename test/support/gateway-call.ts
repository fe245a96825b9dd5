/**
 * One request through the gateway of a `corral serve` under test, with the endpoint's Host header (fetch would not
 * let us set it) and a key: its status, headers, body and how long it took.
 */
import { request } from 'node:http';
import type { ServeProcess } from './process.js';

export interface GatewayAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** From sending the request to the end of its body. */
  ms: number;
}

export function callGateway(
  server: Pick<ServeProcess, 'gatewayUrl'>,
  key: string,
  appName: string,
  path: string,
  extra: Record<string, string> = {},
): Promise<GatewayAnswer> {
  const url = new URL(server.gatewayUrl);
  const started = Date.now();
  const headers = { host: `${appName}.localhost:${url.port}`, authorization: `Bearer ${key}`, ...extra };
  return new Promise((resolve) => {
    const req = request({ host: url.hostname, port: url.port, path, headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, ms: Date.now() - started }),
      );
    });
    req.on('error', (error) => resolve({ status: 0, headers: {}, body: error.message, ms: 0 }));
    req.end();
  });
}
