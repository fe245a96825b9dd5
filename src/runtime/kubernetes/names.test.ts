import { describe, expect, it } from 'vitest';
import { dnsName, isLabelKey, isLabelValue, labelValue } from './names.js';

describe('labelValue', () => {
  it.each(['', 'true', 'inst-abc123', 'ep1', 'o1', 'a.b_c-d', 'x'.repeat(63)])(
    'keeps the valid %j',
    (value) => {
      expect(labelValue(value)).toBe(value);
    },
  );

  it.each(['alice@example.com', 'team/ml', '-leading', 'trailing.', 'x'.repeat(64), 'ü'])(
    'folds %j into a valid value, distinct from a neighbour',
    (value) => {
      const folded = labelValue(value);
      expect(isLabelValue(folded)).toBe(true);
      expect(folded).not.toBe(labelValue(`${value}2`));
      expect(labelValue(value)).toBe(folded);
    },
  );

  it('keeps a readable part', () => {
    expect(labelValue('alice@example.com')).toMatch(/^alice-example\.com-[0-9a-f]{10}$/);
  });
});

describe('isLabelKey', () => {
  it.each(['corral.dev/worker', 'app', 'nvidia.com/gpu.product', 'a/b'])('%j is a key', (key) => {
    expect(isLabelKey(key)).toBe(true);
  });

  it.each(['', 'Corral.dev/x', 'a b', '/x', 'corral.dev/', `${'x'.repeat(64)}`])('%j is not a key', (key) => {
    expect(isLabelKey(key)).toBe(false);
  });
});

describe('dnsName', () => {
  it('keeps a name that fits', () => {
    expect(dnsName('corral-', 'abcdefgh-12345678')).toBe('corral-abcdefgh-12345678');
  });

  it.each(['Upper', 'under_score', 'dots.in.it', 'x'.repeat(80), '@@'])(
    'folds %j into a DNS label, distinct from a neighbour',
    (id) => {
      const name = dnsName('corral-', id);
      expect(name).toMatch(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
      expect(name).not.toBe(dnsName('corral-', `${id}x`));
    },
  );

  it('keeps ids that fold alike apart', () => {
    expect(dnsName('corral-', 'A')).not.toBe(dnsName('corral-', 'a_'));
  });
});
