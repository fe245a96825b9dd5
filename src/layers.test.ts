/**
 * The dependency rules of docs/architecture.md as a test: which top-level parts of src/ each part may import, and
 * the few imports between roles that must stay type-only interfaces.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));

/**
 * Part -> the parts it may import (besides itself). app/ is the composition root and may import any; main.ts, the
 * program's entry, runs the command line. `ports/`
 * holds what two roles share (the routing view, the queue signals, clocks and timers, the traffic shapes): every
 * part may import it, and it imports only the domain.
 */
const ALLOWED: Record<string, string[]> = {
  domain: [],
  ports: ['domain'],
  errors: [],
  crypto: [],
  gpu: ['errors'],
  logger: [],
  /** Which addresses are public, and look-ups pinned to the address checked: shared by webhooks and registries. */
  net: [],
  registry: ['domain', 'net'],
  listeners: [],
  store: ['domain'],
  contract: ['domain', 'errors', 'gpu'],
  service: ['crypto', 'domain', 'errors', 'store'],
  autoscaler: ['domain', 'service'],
  runtime: ['config', 'gpu', 'service'],
  controller: ['crypto', 'domain', 'gpu', 'runtime', 'service', 'store'],
  cluster: ['domain', 'history', 'runtime', 'service', 'store'],
  history: ['domain', 'gateway'],
  gateway: ['domain', 'errors', 'listeners', 'service'],
  jobs: ['contract', 'domain', 'errors', 'service', 'store'],
  config: ['contract', 'domain', 'gpu', 'registry', 'store'],
  /** Jobs' webhooks: the target guard, the outbox and its delivery (wired by app/). */
  webhooks: ['crypto', 'net', 'store'],
  /** The usage ledger: the recorder of workers' states, prices, the reader over the store (issue 32). */
  usage: ['domain', 'store'],
  api: ['contract', 'crypto', 'domain', 'errors', 'gpu', 'listeners', 'runtime', 'service', 'store'],
  client: ['contract'],
  cli: ['app', 'client', 'config', 'contract', 'logger', 'service', 'store'],
  main: ['cli'],
};

/** Parts every other part may import: the neutral home of shared interfaces. */
const SHARED = ['ports'];

/** The roles of `corral serve`: none imports another; what they share is in ports/ and wired by app/. */
const ROLES = ['api', 'autoscaler', 'cluster', 'controller', 'gateway', 'jobs'];

/** Imports between parts that must be type-only, and the one file each may name. */
const INTERFACES_ONLY: { from: string; to: string; files: string[] }[] = [
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
    parts.delete('app');
    expect([...parts].filter((p) => !(p in ALLOWED))).toEqual([]);
  });

  it('each part imports only the parts below it', () => {
    const broken = imports
      .filter((i) => {
        const [from, to] = [partOf(i.file), partOf(i.target)];
        return from !== 'app' && from !== to && !SHARED.includes(to) && !(ALLOWED[from] ?? []).includes(to);
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

  it('no role imports another role: what roles share lives in ports/', () => {
    const broken = imports
      .filter((i) => {
        const [from, to] = [partOf(i.file), partOf(i.target)];
        return from !== to && ROLES.includes(from) && ROLES.includes(to);
      })
      .map((i) => `${i.file} -> ${i.target}`);
    expect(broken).toEqual([]);
  });

  it("ports/ imports nothing but the domain's types", () => {
    const broken = imports
      .filter((i) => partOf(i.file) === 'ports' && (partOf(i.target) !== 'domain' || !i.typeOnly))
      .map((i) => `${i.file} -> ${i.target}`);
    expect(broken).toEqual([]);
  });
});
