import { once } from 'node:events';
import { createServer, type IncomingMessage, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { bodyTooLarge, GatewayError } from '../errors/gateway-catalogue.js';
import { answer, answerUpgrade, CAUSE_HEADER_CHARS, causeOf, errorAnswer, queuedHeader } from './answer.js';

const queueFull = () =>
  new GatewayError('QUEUE_FULL', 'the queue holds 2 requests, its limit', {
    retryAfterSeconds: 1,
    metadata: { queueLength: 2 },
  });

describe('errorAnswer', () => {
  it('writes the JSON body with its type and length, then the given headers, then Retry-After', () => {
    const built = errorAnswer(queueFull(), { headers: { 'x-corral-queue-ms': '0' } });
    expect(built.body).toBe(
      '{"code":429,"reason":"QUEUE_FULL","message":"the queue holds 2 requests, its limit",' +
        '"metadata":{"queueLength":2,"retryAfterSeconds":1}}',
    );
    expect(built.headers).toEqual([
      'content-type',
      'application/json; charset=utf-8',
      'content-length',
      String(Buffer.byteLength(built.body)),
      'x-corral-queue-ms',
      '0',
      'retry-after',
      '1',
    ]);
  });

  it('puts a cause in a header only as printable ASCII, and at most CAUSE_HEADER_CHARS of it', () => {
    const failed = (endpointMessage: string) =>
      new GatewayError('ENDPOINT_FAILED', 'x', { metadata: { endpointMessage } });
    expect(causeOf(failed('pull of café:1 failed\r\nx-evil: 1'))).toBe('pull of caf?:1 failed??x-evil: 1');
    expect(causeOf(failed('y'.repeat(2000)))).toHaveLength(CAUSE_HEADER_CHARS);
    expect(causeOf(queueFull())).toBeUndefined();
  });

  it('asks to close the connection before the given headers when told to', () => {
    const built = errorAnswer(bodyTooLarge(10), { close: true, headers: { 'x-corral-worker': 'w1' } });
    expect(built.headers.slice(4)).toEqual(['connection', 'close', 'x-corral-worker', 'w1']);
  });

  it('counts the length in bytes, not characters', () => {
    const built = errorAnswer(new GatewayError('ENDPOINT_NOT_FOUND', 'no endpoint serves é.localhost'));
    expect(built.headers[3]).toBe(String(Buffer.byteLength(built.body)));
    expect(Number(built.headers[3])).toBeGreaterThan(built.body.length);
  });
});

describe('queuedHeader', () => {
  it('is X-Corral-Queue-Ms for a known endpoint, nothing otherwise', () => {
    expect(queuedHeader(0)).toEqual({ 'x-corral-queue-ms': '0' });
    expect(queuedHeader(undefined)).toBeUndefined();
  });
});

describe('answer', () => {
  it("answers with the error's own status and headers, and not at all for a client that is gone", async () => {
    const errors = [queueFull(), new GatewayError('CLIENT_GONE', 'gone')];
    const written: boolean[] = [];
    const server = createServer((_req, res) => {
      const error = errors.shift() as GatewayError;
      written.push(answer(res, error, { headers: queuedHeader(3) }));
      if (!res.headersSent) res.writeHead(204).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const get = async () => {
      const req = request({ host: '127.0.0.1', port, agent: false }).end();
      const [res] = (await once(req, 'response')) as [IncomingMessage];
      let body = '';
      for await (const chunk of res) body += chunk;
      return { status: res.statusCode, headers: res.headers, body };
    };
    try {
      const full = await get();
      expect(full.status).toBe(429);
      expect(full.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(full.headers['x-corral-queue-ms']).toBe('3');
      expect(full.headers['retry-after']).toBe('1');
      expect(JSON.parse(full.body)).toMatchObject({ code: 429, reason: 'QUEUE_FULL' });
      expect((await get()).status).toBe(204);
      expect(written).toEqual([true, false]);
    } finally {
      server.close();
    }
  });
});

describe('answerUpgrade', () => {
  const socketText = async (write: (socket: PassThrough) => void) => {
    const socket = new PassThrough();
    write(socket);
    let text = '';
    for await (const chunk of socket) text += chunk;
    return text;
  };

  it('writes a status line, the same headers as answer (closing the connection) and the body, then ends', async () => {
    const error = queueFull();
    const text = await socketText((socket) => answerUpgrade(socket, error, queuedHeader(0)));
    const body = JSON.stringify(error.toBody());
    expect(text).toBe(
      'HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\nx-corral-queue-ms: 0\r\n` +
        `retry-after: 1\r\n\r\n${body}`,
    );
  });

  it('writes nothing to a closed socket, nor for a client that is gone', async () => {
    const gone = await socketText((socket) => {
      answerUpgrade(socket, new GatewayError('CLIENT_GONE'));
      socket.end();
    });
    expect(gone).toBe('');
    const closed = new PassThrough();
    closed.destroy();
    expect(() => answerUpgrade(closed, queueFull())).not.toThrow();
  });
});
