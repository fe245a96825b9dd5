/**
 * The dependency rules of docs/architecture.md as a test: the page's chart is the list of which top-level parts of
 * src/ each part may import (read from the page, so that no import lands undrawn and no arrow stays drawn after its
 * import goes), and the few imports between roles that must stay type-only interfaces.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));
const ARCHITECTURE = join(SRC, '..', 'docs', 'architecture.md');

/**
 * The chart of docs/architecture.md ("The parts and their dependencies") as nodes and arrows: the one statement of
 * which part may import which. A node's id is its part (a folder of src/, or `main`/`logger` for a top-level file);
 * `a --> b & c` draws two arrows, `a & b --> c` two, `a --> b --> c` a chain.
 */
function drawnParts(markdown: string): { nodes: Set<string>; arrows: Set<string> } {
  const chart = /```mermaid\n([\s\S]*?)```/.exec(markdown)?.[1];
  if (chart === undefined) throw new Error('docs/architecture.md has no mermaid chart');
  const nodes = new Set<string>();
  const arrows = new Set<string>();
  for (const raw of chart.split('\n').slice(1)) {
    const line = raw.replace(/\["[^"]*"\]/g, '').trim();
    if (line === '' || line.startsWith('%%')) continue;
    const sides = line.split('-->').map((side) => side.split('&').map((id) => id.trim()));
    for (const side of sides) for (const id of side) nodes.add(id);
    sides.slice(1).forEach((targets, i) => {
      for (const from of sides[i] ?? []) for (const to of targets) arrows.add(`${from} --> ${to}`);
    });
  }
  return { nodes, arrows };
}

const drawn = drawnParts(readFileSync(ARCHITECTURE, 'utf8'));

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

const arrowOf = (i: Import) => `${partOf(i.file)} --> ${partOf(i.target)}`;

/** A path of arrows that comes back to where it started, or [] when there is none (a depth-first search). */
function cycleIn(arrows: Set<string>): string[] {
  const next = new Map<string, string[]>();
  for (const arrow of arrows) {
    const [from = '', to = ''] = arrow.split(' --> ');
    next.set(from, [...(next.get(from) ?? []), to]);
  }
  const done = new Set<string>();
  const visit = (node: string, path: string[]): string[] => {
    if (path.includes(node)) return [...path.slice(path.indexOf(node)), node];
    if (done.has(node)) return [];
    for (const to of next.get(node) ?? []) {
      const cycle = visit(to, [...path, node]);
      if (cycle.length > 0) return cycle;
    }
    done.add(node);
    return [];
  };
  for (const node of next.keys()) {
    const cycle = visit(node, []);
    if (cycle.length > 0) return cycle;
  }
  return [];
}

describe('the dependencies between the parts of src/', () => {
  it('every part of src/ is a node of the chart, and every node a part', () => {
    const parts = readdirSync(SRC, { withFileTypes: true })
      .filter(
        (entry) => entry.isDirectory() || (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')),
      )
      .map((entry) => partOf(entry.name));
    expect({ undrawn: parts.filter((p) => !drawn.nodes.has(p)).sort() }).toEqual({ undrawn: [] });
    expect({ notInSrc: [...drawn.nodes].filter((n) => !parts.includes(n)).sort() }).toEqual({ notInSrc: [] });
  });

  it('every import between two parts is an arrow of the chart', () => {
    const undrawn = imports
      .filter((i) => partOf(i.file) !== partOf(i.target))
      .filter((i) => !drawn.arrows.has(arrowOf(i)))
      .map((i) => `${arrowOf(i)}  (${i.file} imports ${i.target})`);
    expect(undrawn).toEqual([]);
  });

  it('every arrow of the chart is an import', () => {
    const followed = new Set(imports.map(arrowOf));
    expect([...drawn.arrows].filter((arrow) => !followed.has(arrow))).toEqual([]);
  });

  it('the chart has no cycle: nothing points back up', () => {
    expect(cycleIn(drawn.arrows)).toEqual([]);
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
