import { describe, expect, it } from 'vitest';
import { formatKeyValues, formatTable } from './table.js';

describe('formatTable', () => {
  it('pads columns to the widest cell, two spaces apart, without trailing spaces', () => {
    const text = formatTable(
      ['ID', 'NAME', 'STATE'],
      [
        ['ep-1', 'a', 'serving'],
        ['ep-long-id', 'bigger name', ''],
      ],
    );
    expect(text).toBe(
      'ID          NAME         STATE\nep-1        a            serving\nep-long-id  bigger name\n',
    );
  });

  it('right-aligns columns that ask for it', () => {
    const text = formatTable(
      ['NAME', { header: 'N', align: 'right' }],
      [
        ['a', '5'],
        ['b', '120'],
      ],
    );
    expect(text).toBe('NAME    N\na       5\nb     120\n');
  });

  it('prints only the header when there are no rows and fills missing cells', () => {
    expect(formatTable(['A', 'B'], [])).toBe('A  B\n');
    expect(formatTable(['A', 'B'], [['x']])).toBe('A  B\nx\n');
  });

  it('keeps each row on one line', () => {
    expect(formatTable(['MESSAGE', 'X'], [['two\nlines', 'y']])).toBe('MESSAGE    X\ntwo lines  y\n');
  });
});

describe('formatKeyValues', () => {
  it('aligns values after the labels', () => {
    expect(
      formatKeyValues([
        ['ID', 'ep-1'],
        ['Name', 'echo'],
        ['Empty', ''],
      ]),
    ).toBe('ID:     ep-1\nName:   echo\nEmpty:\n');
  });
});
