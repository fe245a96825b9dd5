/** Reading /proc/self/mountinfo and planning nosuid,nodev mounts for storage paths, as tables. */
import { describe, expect, it } from 'vitest';
import { parseMountInfo, storagePlan } from './mount-table.js';

const TABLE = [
  '26 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
  '30 26 0:40 / /srv/nfs rw,relatime - nfs4 server:/x rw',
  '31 26 0:41 / /srv/locked rw,nosuid,nodev,relatime - ext4 /dev/vdb rw',
  '32 26 0:42 / /srv/ro ro,noexec,relatime - ext4 /dev/vdc ro',
  '33 26 254:0 /srv/with\\040space /srv/with\\040space rw,relatime - ext4 /dev/vda rw',
].join('\n');

describe('parseMountInfo', () => {
  it('reads mount points and their per-mount options, unescaping spaces', () => {
    const mounts = parseMountInfo(TABLE);
    expect(mounts.map((m) => m.mountPoint)).toEqual([
      '/',
      '/srv/nfs',
      '/srv/locked',
      '/srv/ro',
      '/srv/with space',
    ]);
    expect(mounts[2]?.options).toEqual(['rw', 'nosuid', 'nodev', 'relatime']);
  });
});

describe('storagePlan', () => {
  const mounts = parseMountInfo(TABLE);
  it.each<[string, string, string[][]]>([
    ['/srv/locked', 'none', []],
    ['/srv/nfs', 'remount', [['-o', 'remount,bind,nosuid,nodev,relatime', '/srv/nfs']]],
    [
      '/srv/models',
      'bind',
      [
        ['--bind', '/srv/models', '/srv/models'],
        ['-o', 'remount,bind,nosuid,nodev,relatime', '/srv/models'],
      ],
    ],
    [
      '/srv/ro/models',
      'bind',
      [
        ['--bind', '/srv/ro/models', '/srv/ro/models'],
        ['-o', 'remount,bind,nosuid,nodev,ro,noexec,relatime', '/srv/ro/models'],
      ],
    ],
    [
      '/srv/locked/inner',
      'bind',
      [
        ['--bind', '/srv/locked/inner', '/srv/locked/inner'],
        ['-o', 'remount,bind,nosuid,nodev,relatime', '/srv/locked/inner'],
      ],
    ],
    ['/srv/with space', 'remount', [['-o', 'remount,bind,nosuid,nodev,relatime', '/srv/with space']]],
  ])('%s: %s', (path, action, commands) => {
    const plan = storagePlan(mounts, path);
    expect(plan.action).toBe(action);
    expect(plan.action === 'none' ? [] : plan.commands).toEqual(commands);
  });

  it('the last mount on a point is the one that counts', () => {
    const stacked = parseMountInfo(`${TABLE}\n40 30 0:50 / /srv/nfs rw,nosuid,nodev - nfs4 server:/x rw`);
    expect(storagePlan(stacked, '/srv/nfs').action).toBe('none');
  });
});
