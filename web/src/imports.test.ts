import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const WEB = fileURLToPath(new URL('.', import.meta.url));

/** Every relative import of the dashboard's sources that leaves web/: `file -> target`. */
function importsOutOfWeb(): string[] {
  const files = readdirSync(WEB, { recursive: true, encoding: 'utf8' }).filter(
    (path) => /\.tsx?$/.test(path) && !path.endsWith('.test.ts'),
  );
  return files.flatMap((file) =>
    [...readFileSync(join(WEB, file), 'utf8').matchAll(/from '((?:\.\.\/)+src\/[^']+)'/g)].map(
      (match) => `${file} -> ${match[1]}`,
    ),
  );
}

describe("the dashboard's imports", () => {
  it('reach the API only through the typed client (src/client/index.ts): no second copy of its types', () => {
    const imports = importsOutOfWeb();
    expect(imports.length).toBeGreaterThan(3);
    expect(imports.filter((line) => !line.endsWith('/src/client/index.js'))).toEqual([]);
  });
});
