/** Plain-text tables for the CLI: columns padded to their widest cell, two spaces apart. */

export interface Column {
  header: string;
  /** Right-align (numbers). Default left. */
  align?: 'left' | 'right';
}

export function formatTable(
  columns: readonly (Column | string)[],
  rows: readonly (readonly string[])[],
): string {
  const cols = columns.map((c): Column => (typeof c === 'string' ? { header: c } : c));
  const cells = [cols.map((c) => c.header), ...rows.map((row) => cols.map((_, i) => clean(row[i] ?? '')))];
  const widths = cols.map((_, i) => Math.max(...cells.map((row) => width(row[i] ?? ''))));
  const lines = cells.map((row) =>
    row
      .map((cell, i) => {
        const pad = ' '.repeat((widths[i] ?? 0) - width(cell));
        return cols[i]?.align === 'right' ? pad + cell : cell + pad;
      })
      .join('  ')
      .trimEnd(),
  );
  return `${lines.join('\n')}\n`;
}

/** `Label:  value` lines with the values aligned. */
export function formatKeyValues(pairs: readonly (readonly [string, string])[]): string {
  const labelWidth = Math.max(0, ...pairs.map(([label]) => width(label) + 1));
  return pairs
    .map(([label, value]) => `${`${label}:`.padEnd(labelWidth)}  ${clean(value)}`.trimEnd())
    .map((line) => `${line}\n`)
    .join('');
}

/** One line per cell: newlines and tabs would break the columns. */
function clean(cell: string): string {
  return cell.replace(/[\r\n\t]+/g, ' ');
}

/** Display width in code points (good enough for the ASCII the API returns). */
function width(text: string): number {
  return [...text].length;
}
