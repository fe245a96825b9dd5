import { once } from 'node:events';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { writeMany } from '../../test/support/endless-answer.js';
import { JobError } from '../errors/jobs-catalogue.js';
import { httpSend } from './job-send.js';

// Real loopback servers on port 0 stand for the gateway; no time passes in these tests: each awaits the event that
// makes its state true (an answer, a connection closing).

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

async function serve(handler: RequestListener): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    handler(req, res);
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

const send = (url: string, answerLimitBytes = 1024 * 1024) =>
  httpSend(`${url}/e/app/run`, {
    headers: { 'content-type': 'application/json' },
    body: '{"x":1}',
    signal: new AbortController().signal,
    answerLimitBytes,
  });

describe("an http job's request to the gateway, on real sockets", () => {
  it("answers the endpoint's 2xx body and posts the job's input", async () => {
    let received = '';
    const gateway = await serve((req, res) => {
      req.setEncoding('utf8');
      req.on('data', (text: string) => {
        received += text;
      });
      req.on('end', () => res.end('{"ok":true}'));
    });
    expect(await send(gateway.url)).toEqual({ status: 200, body: '{"ok":true}' });
    expect(received).toBe('{"x":1}');
  });

  it('follows no redirect: the 3xx is the answer and its Location is never fetched', async () => {
    const elsewhere = await serve((_req, res) => res.end('{"healthz":"ok"}'));
    const gateway = await serve((_req, res) => {
      res.writeHead(302, { location: `${elsewhere.url}/healthz` });
      res.end('see there');
    });
    expect(await send(gateway.url)).toEqual({ status: 302, body: '' });
    expect(gateway.requests()).toBe(1);
    expect(elsewhere.requests()).toBe(0);
  });

  it('refuses a 2xx answer past the limit naming it, and closes the connection without reading the rest', async () => {
    let writing: Promise<{ written: number; ended: boolean }> | undefined;
    const total = 64 * 1024 * 1024;
    const gateway = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      writing = writeMany(res, total, 'x');
    });
    const refused = await send(gateway.url, 1024 * 1024).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(JobError);
    expect((refused as JobError).message).toBe(
      "the endpoint's answer is larger than 1048576 bytes, the limit",
    );
    const server = await writing;
    expect(server?.ended).toBe(false);
    // What the kernel's buffers took beyond the limit, never the 64 MiB.
    expect(server?.written).toBeLessThan(total / 4);
  });

  it('refuses at once an answer whose declared length is past the limit', async () => {
    let writing: Promise<{ written: number; ended: boolean }> | undefined;
    const total = 64 * 1024 * 1024;
    const gateway = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': String(total) });
      writing = writeMany(res, total, 'x');
    });
    const refused = await send(gateway.url, 1024 * 1024).catch((error: unknown) => error);
    expect((refused as JobError).message).toBe(
      "the endpoint's answer is larger than 1048576 bytes, the limit",
    );
    expect((await writing)?.ended).toBe(false);
  });

  it("keeps only the start of a failed answer's body, and closes the connection without reading the rest", async () => {
    let writing: Promise<{ written: number; ended: boolean }> | undefined;
    const total = 64 * 1024 * 1024;
    const gateway = await serve((_req, res) => {
      res.writeHead(500);
      writing = writeMany(res, total, 'e');
    });
    const answer = await send(gateway.url);
    expect(answer.status).toBe(500);
    expect(answer.body.length).toBeLessThanOrEqual(16 * 1024);
    expect(answer.body.startsWith('eeee')).toBe(true);
    const server = await writing;
    expect(server?.ended).toBe(false);
    expect(server?.written).toBeLessThan(total / 4);
  });

  it('is rejected when its signal aborts while the answer is on its way', async () => {
    const abort = new AbortController();
    let writing: Promise<{ written: number; ended: boolean }> | undefined;
    const gateway = await serve((_req, res) => {
      res.writeHead(200);
      res.write('{"partial":');
      writing = new Promise((resolve) => res.on('close', () => resolve({ written: 0, ended: false })));
      abort.abort();
    });
    const sent = httpSend(`${gateway.url}/e/app/run`, {
      headers: {},
      body: '{}',
      signal: abort.signal,
      answerLimitBytes: 1024,
    });
    await expect(sent).rejects.toThrow();
    expect((await writing)?.ended).toBe(false);
  });
});
