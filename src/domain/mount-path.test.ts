/** The mount path rule as a table: paths the engine would refuse or that would mount inside another volume. */
import { describe, expect, it } from 'vitest';
import { mountPathProblem, normalMountPath } from './mount-path.js';

describe('normalMountPath', () => {
  it.each([
    ['/x', '/x'],
    ['/x/', '/x'],
    ['//x//y/', '/x/y'],
    ['/x/./y', '/x/y'],
    ['/', '/'],
    ['///', '/'],
  ])('%s -> %s', (path, normal) => {
    expect(normalMountPath(path)).toBe(normal);
  });
});

describe('mount paths', () => {
  it.each<[string, string[], string | undefined]>([
    ['/data', [], undefined],
    ['/dev/shm', [], undefined],
    ['/models', ['/data'], undefined],
    ['/data2', ['/data'], undefined],
    ['data', [], 'mountPath must be an absolute path'],
    ['/x/../etc', [], 'mountPath must be an absolute path'],
    ['/', [], 'cannot be /'],
    ['//', [], 'cannot be /'],
    ['/proc', [], 'inside /proc'],
    ['/proc/sys', [], 'inside /proc'],
    ['/sys/', [], 'inside /sys'],
    ['/sys/fs/cgroup', [], 'inside /sys'],
    ['/dev', [], 'inside /dev'],
    ['/dev/pts', [], 'inside /dev'],
    ['/x/', ['/x'], 'is used twice (also `volumes.0.mountPath`)'],
    ['/x//./', ['/x'], 'is used twice'],
    ['/x/y', ['/x'], 'are nested'],
    ['/x', ['/x/y'], 'are nested'],
  ])('%s after %j: %s', (path, before, problem) => {
    const found = mountPathProblem(
      path,
      before.map((p, index) => ({ path: p, index })),
    );
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toContain(problem);
  });
});
