import { describe, expect, it } from 'vitest';
import { DEFAULT_OUTPUT_LIMITS, OutputTail } from './output-tail.js';

describe('OutputTail', () => {
  it('keeps every line within the limits, in order', () => {
    const tail = new OutputTail({ lines: 3, bytes: 100 });
    for (const line of ['a', '', 'c']) tail.push(line);
    expect(tail.lines()).toEqual(['a', '', 'c']);
    expect(tail.truncated).toBe(false);
  });

  it('keeps the last N lines', () => {
    const tail = new OutputTail({ lines: 2, bytes: 100 });
    for (const line of ['1', '2', '3', '4']) tail.push(line);
    expect(tail.lines()).toEqual(['3', '4']);
    expect(tail.truncated).toBe(true);
  });

  it('keeps the last lines within the byte budget, a newline counted per line', () => {
    const tail = new OutputTail({ lines: 100, bytes: 10 });
    for (const line of ['aaaa', 'bbbb', 'cccc']) tail.push(line);
    // 'bbbb\ncccc\n' is 10 bytes.
    expect(tail.lines()).toEqual(['bbbb', 'cccc']);
  });

  it('counts UTF-8 bytes, and keeps the end of a line longer than the budget without splitting a character', () => {
    const tail = new OutputTail({ lines: 100, bytes: 8 });
    tail.push('é'.repeat(10));
    // 7 bytes of text: three two-byte characters, the broken half of a fourth left out.
    expect(tail.lines()).toEqual(['ééé']);
    expect(tail.truncated).toBe(true);
  });

  it('replaces NUL characters, which PostgreSQL text cannot hold', () => {
    const tail = new OutputTail();
    tail.push('a\0b');
    expect(tail.lines()).toEqual(['a\uFFFDb']);
  });

  it('by default keeps 1,000 lines of a long output, and 256 KiB of one with long lines', () => {
    const many = new OutputTail();
    for (let i = 0; i < 10_000; i++) many.push(`line ${i}`);
    const lines = many.lines();
    expect(lines).toHaveLength(DEFAULT_OUTPUT_LIMITS.lines);
    expect(lines[0]).toBe('line 9000');
    expect(lines.at(-1)).toBe('line 9999');

    const wide = new OutputTail();
    for (let i = 0; i < 1000; i++) wide.push(`${i}`.padEnd(1023, '.'));
    expect(wide.lines()).toHaveLength(256);
    expect(wide.lines().at(-1)?.startsWith('999')).toBe(true);
  });
});
