import { describe, expect, it } from 'vitest';
import {
  cgroupMounts,
  cgroupPlaces,
  freezerCommand,
  freezerFiles,
  freezerStateOf,
} from './cgroup-hierarchy.js';

/** This machine's: v1 controllers under /sys/fs/cgroup/<name>, the v2 hierarchy at /sys/fs/cgroup/unified. */
const HYBRID = `23 1 0:22 / / rw - overlay overlay rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`;
const HYBRID_SELF = `9:name=systemd:/
6:freezer:/
4:memory:/process_api/a29d
1:cpu:/
0::/
`;

describe('cgroupPlaces', () => {
  it('finds both hierarchies of a hybrid host, v2 first, at this process own cgroup', () => {
    expect(cgroupPlaces(HYBRID, HYBRID_SELF)).toEqual([
      { kind: 'v2', dir: '/sys/fs/cgroup/unified' },
      { kind: 'v1', dir: '/sys/fs/cgroup/freezer' },
    ]);
  });

  it('finds the unified hierarchy at /sys/fs/cgroup, under a systemd service cgroup', () => {
    const mountinfo = '30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n';
    expect(cgroupPlaces(mountinfo, '0::/system.slice/corral.service\n')).toEqual([
      { kind: 'v2', dir: '/sys/fs/cgroup/system.slice/corral.service' },
    ]);
  });

  it('takes a mount of a subtree into account (a container that sees its own cgroup as the mount root)', () => {
    const mountinfo = '30 23 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n';
    expect(cgroupPlaces(mountinfo, '0::/docker/abc/inner\n')).toEqual([
      { kind: 'v2', dir: '/sys/fs/cgroup/inner' },
    ]);
    // A cgroup outside what the mount shows cannot be reached through it.
    expect(cgroupPlaces(mountinfo, '0::/elsewhere\n')).toEqual([]);
  });

  it('finds the v1 freezer alone on a v1-only host, in a non-root cgroup', () => {
    const mountinfo = '37 31 0:34 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n';
    expect(cgroupPlaces(mountinfo, '6:freezer:/user/1000\n1:cpu:/\n')).toEqual([
      { kind: 'v1', dir: '/sys/fs/cgroup/freezer/user/1000' },
    ]);
  });

  it('finds nothing without cgroup mounts, and undoes mountinfo escapes', () => {
    expect(cgroupPlaces('23 1 0:22 / / rw - overlay overlay rw\n', HYBRID_SELF)).toEqual([]);
    const escaped = '41 31 0:38 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n';
    expect(cgroupMounts(escaped)).toEqual([
      { root: '/', mountPoint: '/mnt/my cgroups', fsType: 'cgroup2', superOptions: ['rw'] },
    ]);
  });
});

describe('the freezer files and states', () => {
  it('v2: cgroup.freeze 1/0, frozen when cgroup.events says frozen 1', () => {
    expect(freezerFiles('v2')).toEqual({ control: 'cgroup.freeze', state: 'cgroup.events' });
    expect([freezerCommand('v2', true), freezerCommand('v2', false)]).toEqual(['1', '0']);
    expect(freezerStateOf('v2', 'populated 1\nfrozen 1\n')).toBe('frozen');
    expect(freezerStateOf('v2', 'populated 1\nfrozen 0\n')).toBe('thawed');
  });

  it('v1: freezer.state FROZEN/THAWED, FREEZING on the way', () => {
    expect(freezerFiles('v1')).toEqual({ control: 'freezer.state', state: 'freezer.state' });
    expect([freezerCommand('v1', true), freezerCommand('v1', false)]).toEqual(['FROZEN', 'THAWED']);
    expect(freezerStateOf('v1', 'FROZEN\n')).toBe('frozen');
    expect(freezerStateOf('v1', 'FREEZING\n')).toBe('freezing');
    expect(freezerStateOf('v1', 'THAWED\n')).toBe('thawed');
  });
});
