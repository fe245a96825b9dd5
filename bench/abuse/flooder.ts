/**
 * Owner A's flood, in a child process of its own (forked by suite.ts, never imported by it) so that building and
 * sending it costs the measuring process nothing: the same create body sent again and again on
 * FLOOD_CONNECTIONS keep-alive connections, each request written whole before its answer is read, until told to
 * stop. It reports when the first answer came, then the count of answers by status.
 */
import { Agent, request } from 'node:http';
import { maximalBody, oversizedBody } from './bodies.js';
import { FLOOD_CONNECTIONS } from './settings.js';

export interface FloodReport {
  sent: number;
  byStatus: Record<string, number>;
  /** Requests that got no answer (reset, broken pipe). */
  errors: number;
  firstError?: string;
  seconds: number;
}

const PREFIX = '/gpu-instance/openapi/v1';

function send(agent: Agent, port: number, token: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `${PREFIX}/endpoint/create`,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': body.length,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', reject);
    req.end(body);
  });
}

export async function flooderChild(): Promise<void> {
  const port = Number(process.env.CORRAL_BENCH_FLOOD_PORT);
  const token = process.env.CORRAL_BENCH_FLOOD_TOKEN ?? '';
  const body = process.env.CORRAL_BENCH_FLOOD_KIND === 'maximal' ? maximalBody() : oversizedBody();
  const agent = new Agent({ keepAlive: true, maxSockets: FLOOD_CONNECTIONS });
  let stopping = false;
  process.on('message', (message) => {
    if (message === 'stop') stopping = true;
  });
  const report: FloodReport = { sent: 0, byStatus: {}, errors: 0, seconds: 0 };
  const started = performance.now();
  let announced = false;
  const loop = async () => {
    while (!stopping) {
      report.sent += 1;
      try {
        const status = await send(agent, port, token, body);
        report.byStatus[status] = (report.byStatus[status] ?? 0) + 1;
      } catch (error) {
        report.errors += 1;
        report.firstError ??= (error as Error).message;
      }
      if (!announced) {
        announced = true;
        process.send?.({ ready: true, bodyBytes: body.length });
      }
    }
  };
  await Promise.all(Array.from({ length: FLOOD_CONNECTIONS }, loop));
  report.seconds = (performance.now() - started) / 1000;
  agent.destroy();
  process.send?.({ report }, () => process.exit(0));
}
