import { describe, expect, it } from 'vitest';
import { logLines } from './log-lines.js';

function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

async function collect(chunks: Buffer[]): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of logLines(chunks)) lines.push(line);
  return lines;
}

/** Re-cuts a byte sequence into chunks of `size` bytes. */
function rechunk(bytes: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  return chunks;
}

describe('logLines', () => {
  const body = Buffer.concat([
    frame(1, 'hello\n'),
    frame(2, 'warn: a\n'),
    frame(1, 'multi\nline\n'),
    frame(1, 'part'),
    frame(2, 'err\n'),
    frame(1, 'ial\r\n'),
    frame(1, 'h\u00e9llo \u2713\n'),
    frame(1, 'no newline at end'),
  ]);
  const expected = [
    'hello',
    'warn: a',
    'multi',
    'line',
    'err',
    'partial',
    'h\u00e9llo \u2713',
    'no newline at end',
  ];

  it.each([1, 3, 7, 8, 9, 64, 4096])('demultiplexes frames cut into %i-byte chunks', async (size) => {
    expect(await collect(rechunk(body, size))).toEqual(expected);
  });

  it('passes a TTY (raw) stream through', async () => {
    expect(await collect([Buffer.from('plain\nte'), Buffer.from('xt\n')])).toEqual(['plain', 'text']);
  });

  it('a short raw stream', async () => {
    expect(await collect([Buffer.from('hi')])).toEqual(['hi']);
  });

  it('an empty stream', async () => {
    expect(await collect([])).toEqual([]);
  });
});
