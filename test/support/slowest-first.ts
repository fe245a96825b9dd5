/**
 * The order integration files start in (vitest.config.ts's sequencer): the slowest known ones first, so that none
 * of them starts last and leaves the other workers idle while it runs on alone; then the rest in Vitest's own order
 * (the slowest of the last run on a machine that has its cache, else the largest first).
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { SLOWEST_FIRST } from './tiers.js';

export class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return slowestFirst(sorted, (file) => relative(this.ctx.config.root, file.moduleId), SLOWEST_FIRST);
  }
}

/** `files` with those on the `slowest` list first, in its order; the others after them, in their order. */
export function slowestFirst<T>(
  files: readonly T[],
  pathOf: (file: T) => string,
  slowest: readonly string[],
): T[] {
  const rank = new Map(slowest.map((path, index) => [path, index]));
  const known = files.filter((file) => rank.has(pathOf(file)));
  known.sort((a, b) => (rank.get(pathOf(a)) ?? 0) - (rank.get(pathOf(b)) ?? 0));
  return [...known, ...files.filter((file) => !rank.has(pathOf(file)))];
}
