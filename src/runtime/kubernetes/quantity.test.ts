import { describe, expect, it } from 'vitest';
import { bytesQuantity, gibQuantity, parseQuantity } from './quantity.js';

describe('bytesQuantity', () => {
  it.each([
    { bytes: 8 * 2 ** 30, quantity: '8Gi' },
    { bytes: 1.5 * 2 ** 30, quantity: '1536Mi' },
    { bytes: 2 ** 40, quantity: '1Ti' },
    { bytes: 4096, quantity: '4Ki' },
    { bytes: 1000, quantity: '1000' },
    { bytes: 0, quantity: '0' },
    { bytes: 2 ** 30 + 0.4, quantity: '1Gi' },
  ])('$bytes -> $quantity', ({ bytes, quantity }) => {
    expect(bytesQuantity(bytes)).toBe(quantity);
  });

  it.each([
    { gib: 80, quantity: '80Gi' },
    { gib: 0.5, quantity: '512Mi' },
    { gib: 0.125, quantity: '128Mi' },
  ])('gibQuantity($gib) -> $quantity', ({ gib, quantity }) => {
    expect(gibQuantity(gib)).toBe(quantity);
  });
});

describe('parseQuantity', () => {
  it.each([
    { quantity: '8Gi', value: 8 * 2 ** 30 },
    { quantity: '512Mi', value: 512 * 2 ** 20 },
    { quantity: '80G', value: 80e9 },
    { quantity: '500m', value: 0.5 },
    { quantity: '1.5Gi', value: 1.5 * 2 ** 30 },
    { quantity: '1e3', value: 1000 },
    { quantity: '2E', value: 2e18 },
    { quantity: '12345', value: 12345 },
    { quantity: ' 1Ki ', value: 1024 },
  ])('$quantity -> $value', ({ quantity, value }) => {
    expect(parseQuantity(quantity)).toBe(value);
  });

  it.each(['', 'Gi', '8GB', '8 Gi', 'ten', '1Xi'])('%j is not a quantity', (quantity) => {
    expect(parseQuantity(quantity)).toBeUndefined();
  });

  it('reads back what bytesQuantity writes', () => {
    for (const bytes of [1, 1023, 1024, 3 * 2 ** 20, 7 * 2 ** 30 + 2 ** 20, 2 ** 45]) {
      expect(parseQuantity(bytesQuantity(bytes))).toBe(bytes);
    }
  });
});
