import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The pages a user reads: the README and every page under docs/. */
function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.md'))
    .map((path) => `docs/${path.replaceAll('\\', '/')}`);
  return ['README.md', ...docs].sort();
}

/** Fenced blocks hold commands and output, not links; their `#` lines are not headings either. */
function withoutFences(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** Every `[text](target)` whose target is a path in the repository, not a URL or a page's own anchor only. */
function relativeLinks(text: string): string[] {
  return [...withoutFences(text).matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] ?? '')
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && target !== '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of withoutFences(text).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = (match[1] ?? '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replaceAll(' ', '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** What is wrong with one link from `page`, or undefined when it resolves inside the repository. */
function brokenReason(page: string, target: string): string | undefined {
  const [path = '', anchor] = target.split('#', 2);
  const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURI(path));
  const inRepo = relative(ROOT, file);
  if (inRepo.startsWith('..')) return 'leaves the repository (a clone does not have it)';
  if (!existsSync(file)) return 'no such file';
  if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor)) {
    return `no heading #${anchor} in ${inRepo}`;
  }
  return undefined;
}

describe('links in README.md and docs/', () => {
  const all = pages();

  it('finds the pages and their links', () => {
    expect(all).toContain('README.md');
    expect(all).toContain('docs/architecture.md');
    const links = all.flatMap((page) => relativeLinks(readFileSync(join(ROOT, page), 'utf8')));
    expect(links.length).toBeGreaterThan(50);
  });

  it('resolve every relative link to a file in the repository, and each anchor to a heading there', () => {
    const broken = all.flatMap((page) =>
      relativeLinks(readFileSync(join(ROOT, page), 'utf8')).flatMap((target) => {
        const reason = brokenReason(page, target);
        return reason === undefined ? [] : [`${page}: (${target}) ${reason}`];
      }),
    );
    expect(broken).toEqual([]);
  });

  it('reads a link out of the repository, a missing file and a missing heading as broken', () => {
    expect(brokenReason('docs/workers.md', '../../shared/DESIGN.md')).toMatch(/leaves the repository/);
    expect(brokenReason('docs/workers.md', 'no-such-page.md')).toBe('no such file');
    expect(brokenReason('docs/jobs.md', 'api.md#no-such-heading')).toMatch(/no heading/);
    expect(brokenReason('docs/jobs.md', 'api.md#errors')).toBeUndefined();
  });
});
