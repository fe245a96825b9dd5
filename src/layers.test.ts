/**
 * The dependency rules of docs/architecture.md as a test: which top-level parts of src/ each part may import, and
 * the few imports between roles that must stay type-only interfaces.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));

/** Part -> the parts it may import (besides itself). main.ts is the composition root and may import any. */
const ALLOWED: Record<string, string[]> = {
  domain: [],
  errors: [],
  crypto: [],
  gpu: [],
  logger: [],
  registry: ['domain'],
  listeners: [],
  store: ['domain'],
  contract: ['domain', 'errors', 'gpu', 'store'],
  service: ['crypto', 'domain', 'errors', 'store'],
  autoscaler: ['domain', 'service'],
  runtime: ['config', 'gpu', 'service'],
  controller: ['crypto', 'domain', 'gpu', 'runtime', 'service', 'store'],
  cluster: ['autoscaler', 'controller', 'domain', 'runtime', 'service', 'store'],
  gateway: ['autoscaler', 'controller', 'domain', 'errors', 'listeners', 'service'],
  config: ['contract', 'domain', 'gpu', 'registry', 'store'],
  api: [
    'contract',
    'crypto',
    'domain',
    'errors',
    'gateway',
    'gpu',
    'listeners',
    'runtime',
    'service',
    'store',
  ],
  client: ['contract'],
  cli: ['client', 'config', 'contract', 'logger', 'main', 'service', 'store'],
};

/** Imports between roles that must be type-only, and the one file each may name. */
const INTERFACES_ONLY: { from: string; to: string; files: string[] }[] = [
  { from: 'gateway', to: 'controller', files: ['controller/routing-table.ts'] },
  { from: 'gateway', to: 'autoscaler', files: ['autoscaler/queue-signals.ts'] },
  { from: 'api', to: 'gateway', files: ['gateway/metrics.ts', 'gateway/history.ts'] },
  { from: 'cluster', to: 'controller', files: ['controller/routing-table.ts'] },
  { from: 'cluster', to: 'autoscaler', files: ['autoscaler/queue-signals.ts'] },
  { from: 'api', to: 'runtime', files: ['runtime/types.ts'] },
];

interface Import {
  file: string;
  target: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

function importsOf(path: string): Import[] {
  const text = readFileSync(path, 'utf8');
  const found: Import[] = [];
  for (const match of text.matchAll(/^(import|export)( type)?\s[^;]*?from '(\.[^']+)';/gms)) {
    const target = relative(SRC, resolve(dirname(path), match[3] ?? '')).replace(/\.js$/, '.ts');
    found.push({ file: relative(SRC, path), target, typeOnly: match[2] !== undefined });
  }
  return found;
}

const partOf = (file: string) =>
  file.includes('/') ? (file.split('/')[0] ?? '') : file.replace(/\.ts$/, '');

const imports = sourceFiles(SRC).flatMap(importsOf);

describe('the dependencies between the parts of src/', () => {
  it('every part is in the rules', () => {
    const parts = new Set(imports.map((i) => partOf(i.file)));
    parts.delete('main');
    expect([...parts].filter((p) => !(p in ALLOWED))).toEqual([]);
  });

  it('each part imports only the parts below it', () => {
    const broken = imports
      .filter((i) => {
        const [from, to] = [partOf(i.file), partOf(i.target)];
        return from !== 'main' && from !== to && !(ALLOWED[from] ?? []).includes(to);
      })
      .map((i) => `${i.file} -> ${i.target}`);
    expect(broken).toEqual([]);
  });

  it('roles refer to each other only through type-only interfaces', () => {
    const broken = imports
      .filter((i) =>
        INTERFACES_ONLY.some(
          (rule) =>
            partOf(i.file) === rule.from &&
            partOf(i.target) === rule.to &&
            (!i.typeOnly || !rule.files.includes(i.target)),
        ),
      )
      .map((i) => `${i.file} -> ${i.target}${i.typeOnly ? '' : ' (not type-only)'}`);
    expect(broken).toEqual([]);
  });

  it('the gateway knows no scaling policy and the controller nothing of the gateway or the autoscaler', () => {
    const from = (part: string, to: string) =>
      imports.filter((i) => partOf(i.file) === part && partOf(i.target) === to).map((i) => i.target);
    expect(from('gateway', 'autoscaler').filter((t) => t !== 'autoscaler/queue-signals.ts')).toEqual([]);
    expect(from('controller', 'gateway')).toEqual([]);
    expect(from('controller', 'autoscaler')).toEqual([]);
  });
});
