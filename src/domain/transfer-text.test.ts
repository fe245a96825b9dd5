import { describe, expect, it } from 'vitest';
import { decimalSize, timeLeft } from './transfer-text.js';

describe('transfer text', () => {
  it.each([
    [812, '812 B'],
    [200_000, '200 kB'],
    [3_240_000, '3.2 MB'],
    [410_000_000, '410 MB'],
    [999_999, '1.0 MB'],
    [14_900_000_000, '15 GB'],
  ])('a size of %d bytes reads %s', (bytes, text) => {
    expect(decimalSize(bytes)).toBe(text);
  });

  it.each([
    [28.2, '29 s'],
    [720, '12 min'],
    [14_730, '4 h 6 min'],
  ])('%d s left reads %s', (seconds, text) => {
    expect(timeLeft(seconds)).toBe(text);
  });
});
