import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CorralApiError, CorralClient, CorralConnectionError } from './index.js';

/** CorralClient.streamWorkerLog against a real HTTP server that streams with delays. */

interface Recorded {
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const LOG_PATH = '/gpu-instance/openapi/v1/endpoint/worker/log';
const KEY = 'sk_test_0123456789';

let server: Server;
let baseUrl: string;
let requests: Recorded[] = [];
let handler: Handler;
/** Resolves when the server sees the current test's connection close. */
let closed: Promise<void>;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    requests.push({ path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

let markClosed: () => void = () => undefined;
beforeEach(() => {
  requests = [];
  closed = new Promise<void>((resolve) => {
    markClosed = resolve;
  });
});

/** Installs a handler that writes the text headers, runs `body` and reports the connection's close. */
function streaming(body: (res: ServerResponse) => void | Promise<void>): void {
  handler = (_req, res) => {
    res.on('close', () => markClosed());
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    void body(res);
  };
}

/** Writes one line every `ms` until the client goes away. */
function endless(ms: number): void {
  streaming((res) => {
    let n = 0;
    const timer = setInterval(() => res.write(`line ${n++}\n`), ms);
    res.on('close', () => clearInterval(timer));
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function client(timeoutMs?: number): CorralClient {
  return new CorralClient({ baseUrl, apiKey: KEY, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
}

async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

describe('CorralClient.streamWorkerLog', () => {
  it('yields each line as it arrives, before the answer ends', async () => {
    let ended = false;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    streaming(async (res) => {
      res.write('first\n');
      await released;
      res.write('second\r\nthi');
      await sleep(20);
      res.write('rd\n\nlast without newline');
      await sleep(20);
      ended = true;
      res.end();
    });
    const seen: { line: string; ended: boolean }[] = [];
    for await (const line of client().streamWorkerLog('ep 1', 'w-1')) {
      seen.push({ line, ended });
      // The server holds the rest back until the client has the first line.
      if (seen.length === 1) release();
    }
    expect(seen).toEqual([
      { line: 'first', ended: false },
      { line: 'second', ended: false },
      { line: 'third', ended: false },
      { line: '', ended: false },
      { line: 'last without newline', ended: true },
    ]);
    expect(requests).toHaveLength(1);
    expect(requests[0]?.path).toBe(LOG_PATH);
    expect(requests[0]?.query).toEqual({ id: 'ep 1', worker: 'w-1' });
    expect(requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(requests[0]?.headers.accept).toBe('text/plain');
  });

  it('sends the request only when iteration starts', async () => {
    streaming((res) => {
      res.end('x\n');
    });
    const lines = client().streamWorkerLog('ep1', 'w1');
    await sleep(20);
    expect(requests).toHaveLength(0);
    await expect(collect(lines)).resolves.toEqual(['x']);
  });

  it('decodes UTF-8 split across chunks', async () => {
    const bytes = Buffer.from('héllo wörld ✓\nsecond ✓\n', 'utf8');
    streaming(async (res) => {
      for (const byte of bytes) {
        res.write(Buffer.from([byte]));
        await sleep(1);
      }
      res.end();
    });
    await expect(collect(client().streamWorkerLog('ep1', 'w1'))).resolves.toEqual([
      'héllo wörld ✓',
      'second ✓',
    ]);
  });

  it('passes follow and tail, and ends cleanly when the signal aborts mid-stream', async () => {
    streaming((res) => {
      res.write('a\nb\nc\n'); // then stays open, like a followed log with nothing new
    });
    const controller = new AbortController();
    const lines: string[] = [];
    for await (const line of client().streamWorkerLog('ep1', 'w1', {
      follow: true,
      tail: 5,
      signal: controller.signal,
    })) {
      lines.push(line);
      if (lines.length === 3) setTimeout(() => controller.abort(), 30);
    }
    expect(lines).toEqual(['a', 'b', 'c']);
    expect(requests[0]?.query).toEqual({ id: 'ep1', worker: 'w1', follow: '1', tail: '5' });
    await closed; // the server sees the connection go away
  });

  it('ends cleanly when aborted from inside the loop while lines keep coming', async () => {
    endless(5);
    const controller = new AbortController();
    const lines: string[] = [];
    for await (const line of client().streamWorkerLog('ep1', 'w1', {
      follow: true,
      signal: controller.signal,
    })) {
      lines.push(line);
      if (lines.length === 2) controller.abort();
    }
    expect(lines).toEqual(['line 0', 'line 1']);
    await closed;
  });

  it('ends cleanly when aborted before the answer starts, and sends nothing when already aborted', async () => {
    handler = (_req, res) => {
      res.on('close', () => markClosed()); // never answers
    };
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expect(
      collect(client().streamWorkerLog('ep1', 'w1', { signal: controller.signal })),
    ).resolves.toEqual([]);
    await closed;
    requests = [];
    await expect(
      collect(client().streamWorkerLog('ep1', 'w1', { signal: AbortSignal.abort() })),
    ).resolves.toEqual([]);
    expect(requests).toHaveLength(0);
  });

  it('closes the connection when the loop is left early', async () => {
    endless(5);
    const lines: string[] = [];
    for await (const line of client().streamWorkerLog('ep1', 'w1', { follow: true })) {
      lines.push(line);
      if (lines.length === 2) break;
    }
    expect(lines).toEqual(['line 0', 'line 1']);
    await closed;
  });

  it('throws CorralApiError for an error status', async () => {
    handler = (_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          code: 404,
          reason: 'WORKER_NOT_FOUND',
          message: 'endpoint ep1 has no worker "w9"',
          metadata: { workerId: 'w9' },
        }),
      );
    };
    const error = await collect(client().streamWorkerLog('ep1', 'w9')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorralApiError);
    expect(error).toMatchObject({
      status: 404,
      reason: 'WORKER_NOT_FOUND',
      message: 'endpoint ep1 has no worker "w9"',
      metadata: { workerId: 'w9' },
    });
  });

  it('applies the timeout to the start of the answer only', async () => {
    streaming(async (res) => {
      for (const line of ['1', '2', '3', '4']) {
        await sleep(400);
        res.write(`${line}\n`);
      }
      res.end();
    });
    // 1.6 s of stream under a 1 s timeout: the timeout must not cut it. (A 100 ms timeout was missed by the start of
    // the answer itself on a loaded CI machine.)
    await expect(collect(client(1_000).streamWorkerLog('ep1', 'w1', { follow: true }))).resolves.toEqual([
      '1',
      '2',
      '3',
      '4',
    ]);

    handler = (_req, res) => {
      res.on('close', () => markClosed()); // never answers
    };
    const error = await collect(client(1_000).streamWorkerLog('ep1', 'w1')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorralConnectionError);
    expect((error as CorralConnectionError).timedOut).toBe(true);
    expect((error as Error).message).toContain(baseUrl);
  });

  it('throws CorralConnectionError when the stream breaks off', async () => {
    streaming(async (res) => {
      res.write('partial\n');
      await sleep(20);
      res.socket?.destroy();
    });
    const lines: string[] = [];
    const error = await (async () => {
      for await (const line of client().streamWorkerLog('ep1', 'w1', { follow: true })) lines.push(line);
    })().catch((e: unknown) => e);
    expect(lines).toEqual(['partial']);
    expect(error).toBeInstanceOf(CorralConnectionError);
    expect((error as Error).message).toContain('broke off');
  });

  it('throws CorralConnectionError when nothing listens', async () => {
    const dead = createServer();
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((resolve) => dead.close(() => resolve()));
    const error = await collect(
      new CorralClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: KEY }).streamWorkerLog('ep1', 'w1'),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorralConnectionError);
    expect((error as Error).message).toContain('ECONNREFUSED');
  });
});
