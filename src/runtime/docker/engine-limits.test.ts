import { describe, expect, it } from 'vitest';
import { type DockerInfo, engineLimits, isStorageOptRefused } from './engine-limits.js';

const overlayOn = (backing: string): DockerInfo => ({
  Driver: 'overlay2',
  DriverStatus: [
    ['Backing Filesystem', backing],
    ['Supports d_type', 'true'],
    ['Native Overlay Diff', 'true'],
    ['userxattr', 'false'],
  ],
  MemoryLimit: true,
});

describe('engineLimits', () => {
  it.each<{ name: string; info: DockerInfo; rootfsSize: boolean; storage: string; reason: RegExp }>([
    {
      name: 'overlay2 on xfs',
      info: overlayOn('xfs'),
      rootfsSize: true,
      storage: 'overlay2 on xfs',
      reason: /pquota/,
    },
    {
      name: 'overlay2 on ext4 (Docker says extfs)',
      info: overlayOn('extfs'),
      rootfsSize: false,
      storage: 'overlay2 on extfs',
      reason: /only on xfs with pquota, not on extfs/,
    },
    {
      name: 'btrfs',
      info: { Driver: 'btrfs', DriverStatus: [['Btrfs', '']], MemoryLimit: true },
      rootfsSize: true,
      storage: 'btrfs',
      reason: /btrfs sets a quota/,
    },
    {
      name: 'zfs',
      info: { Driver: 'zfs', DriverStatus: [['Zpool', 'tank']], MemoryLimit: true },
      rootfsSize: true,
      storage: 'zfs',
      reason: /zfs sets a quota/,
    },
    {
      name: 'vfs',
      info: { Driver: 'vfs', DriverStatus: [], MemoryLimit: true },
      rootfsSize: false,
      storage: 'vfs',
      reason: /vfs storage driver cannot/,
    },
    {
      name: 'fuse-overlayfs (rootless)',
      info: { Driver: 'fuse-overlayfs', DriverStatus: null },
      rootfsSize: false,
      storage: 'fuse-overlayfs',
      reason: /cannot limit/,
    },
    {
      name: 'an empty answer',
      info: {},
      rootfsSize: false,
      storage: 'unknown',
      reason: /unknown storage driver/,
    },
  ])('$name', ({ info, rootfsSize, storage, reason }) => {
    const limits = engineLimits(info);
    expect(limits.rootfsSize).toBe(rootfsSize);
    expect(limits.storage).toBe(storage);
    expect(limits.rootfsReason).toMatch(reason);
  });

  it.each([
    { MemoryLimit: true, memory: true },
    { MemoryLimit: false, memory: false },
    { MemoryLimit: undefined, memory: true },
  ])('memory limits with MemoryLimit $MemoryLimit: $memory', ({ MemoryLimit, memory }) => {
    expect(engineLimits({ ...overlayOn('xfs'), MemoryLimit }).memory).toBe(memory);
  });
});

describe('isStorageOptRefused', () => {
  it.each([
    ["--storage-opt is supported only for overlay over xfs with 'pquota' mount option", true],
    ['Storage Opt size is not supported', true],
    ['StorageOpt not supported by this driver', true],
    ['Failed to set quota limit for subvolume', true],
    ['No such image: x', false],
  ])('%j: %s', (reason, refused) => {
    expect(isStorageOptRefused(reason)).toBe(refused);
  });
});
