import { appendFile, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TailOptions, tailLines, tailOffset } from './log-tail.js';

let dir: string;
let file: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'corral-log-tail-'));
  file = path.join(dir, 'w.log');
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function lines(content: string | Buffer, options: Omit<TailOptions, 'ended'>): Promise<string[]> {
  await writeFile(file, content);
  const handle = await open(file, 'r');
  try {
    const out: string[] = [];
    for await (const line of tailLines(handle, file, { ...options, ended: () => true })) out.push(line);
    return out;
  } finally {
    await handle.close();
  }
}

describe('tailOffset', () => {
  it.each([
    ['a\nb\nc\n', 1, 4],
    ['a\nb\nc\n', 2, 2],
    ['a\nb\nc\n', 3, 0],
    ['a\nb\nc\n', 10, 0],
    ['a\nb\nc', 1, 4],
    ['a\nb\nc', 2, 2],
    ['a\nb\nc\n', 0, 6],
    ['', 3, 0],
  ])('%j, last %d lines -> byte %d', async (content, count, offset) => {
    await writeFile(file, content);
    const handle = await open(file, 'r');
    try {
      expect(await tailOffset(handle, Buffer.byteLength(content), count)).toBe(offset);
    } finally {
      await handle.close();
    }
  });

  it('counts lines across its read chunks', async () => {
    const content = Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join('\n');
    expect(await lines(content, { tail: 3 })).toEqual(['line 19997', 'line 19998', 'line 19999']);
  });
});

describe('tailLines', () => {
  it.each<[string, string | Buffer, number | undefined, string[]]>([
    ['every line', 'a\nb\n', undefined, ['a', 'b']],
    ['a last line without newline', 'a\nb', undefined, ['a', 'b']],
    ['CRLF endings', 'a\r\nb\r\n', undefined, ['a', 'b']],
    ['empty lines kept', 'a\n\nb\n', undefined, ['a', '', 'b']],
    ['the last lines', 'a\nb\nc\n', 2, ['b', 'c']],
    ['no lines asked', 'a\nb\n', 0, []],
    ['an empty file', '', undefined, []],
    ['multi-byte characters', 'é\n日本\n', undefined, ['é', '日本']],
  ])('%s', async (_name, content, tail, expected) => {
    expect(await lines(content, { tail })).toEqual(expected);
  });

  it('follows appends until the writer has ended, then reads what is left', async () => {
    await writeFile(file, 'first\n');
    const handle = await open(file, 'r');
    let ended = false;
    const seen: string[] = [];
    try {
      const reading = (async () => {
        for await (const line of tailLines(handle, file, { follow: true, ended: () => ended, pollMs: 20 })) {
          seen.push(line);
          if (line === 'first') await appendFile(file, 'second\n');
          if (line === 'second') {
            await appendFile(file, 'last words');
            ended = true;
          }
        }
      })();
      await reading;
    } finally {
      await handle.close();
    }
    expect(seen).toEqual(['first', 'second', 'last words']);
  });

  it('stops following on abort', async () => {
    await writeFile(file, 'only\n');
    const handle = await open(file, 'r');
    const abort = new AbortController();
    const seen: string[] = [];
    try {
      for await (const line of tailLines(handle, file, {
        follow: true,
        signal: abort.signal,
        ended: () => false,
        pollMs: 60_000,
      })) {
        seen.push(line);
        abort.abort();
      }
    } finally {
      await handle.close();
    }
    expect(seen).toEqual(['only']);
  });
});
