/**
 * A run body parsed on the body thread answers what the contract's parse answers in place: the same request, the
 * same refusals, whatever the size. (That it frees the event loop is measured by bench/tenant-isolation.)
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRunBody } from '../contract/jobs.js';
import { JOB_LIMITS } from '../domain/job.js';
import { RunBodyParser } from './run-body-parser.js';

const LARGE_INPUT = { image: 'é'.repeat(600_000), prompt: 'a cat', steps: [1, 2, 3] };

/** A request whose body arrives in chunks of 64 KiB, as a socket hands it over; `declared`: its content-length. */
function requestOf(text: string, declared = true): IncomingMessage {
  const bytes = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 65_536) chunks.push(bytes.subarray(at, at + 65_536));
  const req = Readable.from(chunks) as unknown as IncomingMessage;
  req.headers = declared ? { 'content-length': String(bytes.length) } : {};
  return req;
}

const read = (parser: RunBodyParser, text: string, declared = true) =>
  parser.read(requestOf(text, declared), 20 * 1024 * 1024, 'a run body', () => {});

const BODIES = [
  '{"input":{"prompt":"x"},"webhook":"https://h/x","policy":{"executionTimeout":5000,"ttl":10000,"lowPriority":true}}',
  '{"input":0}',
  JSON.stringify({ input: LARGE_INPUT, policy: { lowPriority: true } }),
  '{',
  '[1]',
  '{}',
  '{"input":null}',
  '{"input":1,"webhook":3}',
  '{"input":1,"policy":{"ttl":9999}}',
  `{"input":${'['.repeat(JOB_LIMITS.jsonDepth + 1)}${']'.repeat(JOB_LIMITS.jsonDepth + 1)}}`,
  '{"__proto__":{"polluted":true},"input":{"a":1}}',
];

describe('run bodies', () => {
  const parsers: RunBodyParser[] = [];
  afterEach(async () => {
    for (const parser of parsers.splice(0)) await parser.close();
  });

  it.each([
    ['in place', 1024 * 1024 * 1024],
    ['on the body thread', 1],
  ])('%s are parsed as the contract parses them', async (_where, threadFromBytes) => {
    const parser = new RunBodyParser({ threadFromBytes });
    parsers.push(parser);
    for (const text of BODIES)
      expect(await read(parser, text), text.slice(0, 60)).toEqual(parseRunBody(text));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('hands a large body to the thread and gets its input back whole, with its UTF-8 size', async () => {
    const parser = new RunBodyParser();
    parsers.push(parser);
    const text = JSON.stringify({ input: LARGE_INPUT });
    expect(Buffer.byteLength(text)).toBeGreaterThan(1024 * 1024);
    const parsed = await read(parser, text, false);
    expect(parsed.ok && JSON.parse(parsed.value.input)).toEqual(LARGE_INPUT);
    expect(parsed.ok && parsed.value.inputBytes).toBe(Buffer.byteLength(JSON.stringify(LARGE_INPUT)));
  });

  it('asks for admission with the size before it parses, and parses nothing refused', async () => {
    const parser = new RunBodyParser({ threadFromBytes: 1 });
    parsers.push(parser);
    const text = JSON.stringify({ input: LARGE_INPUT });
    const sizes: number[] = [];
    const refused = await parser
      .read(requestOf(text), 20 * 1024 * 1024, 'a run body', (size) => {
        sizes.push(size);
        throw new Error('over the rate');
      })
      .catch((error: unknown) => (error as Error).message);
    expect(refused).toBe('over the rate');
    expect(sizes).toEqual([Buffer.byteLength(text)]);
    expect(await read(parser, '{"input":1}')).toMatchObject({ ok: true, value: { input: '1' } });
  });

  it('refuses a body past the limit, naming it', async () => {
    const parser = new RunBodyParser({ threadFromBytes: 1 });
    parsers.push(parser);
    const refused = parser.read(
      requestOf(JSON.stringify({ input: LARGE_INPUT }), false),
      1_000_000,
      'a run body',
      () => {},
    );
    await expect(refused).rejects.toMatchObject({
      code: 'BODY_TOO_LARGE',
      message: 'a run body is larger than 1000000 bytes, the limit',
    });
  });

  it('answers bodies sent at once, each its own', async () => {
    const parser = new RunBodyParser({ threadFromBytes: 1 });
    parsers.push(parser);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => read(parser, JSON.stringify({ input: { i } }))),
    );
    expect(answers.map((a) => a.ok && a.value.input)).toEqual(
      Array.from({ length: 20 }, (_, i) => `{"i":${i}}`),
    );
  });
});
