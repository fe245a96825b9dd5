import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findPodCgroup } from './pod-cgroups.js';

const UID = '0f3c8a4e-1b2d-4c5e-8f90-123456789abc';

describe('findPodCgroup', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'corral-pod-cgroups-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));
  const hierarchy = () => ({ kind: 'v1' as const, root });

  it('finds a pod under the kubelet layout at the root (cgroupfs and systemd drivers)', () => {
    mkdirSync(join(root, `kubepods/burstable/pod${UID}`), { recursive: true });
    expect(findPodCgroup(hierarchy(), UID)?.path).toBe(join(root, `kubepods/burstable/pod${UID}`));
    rmSync(join(root, 'kubepods'), { recursive: true });
    const slice = `kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID.replaceAll('-', '_')}.slice`;
    mkdirSync(join(root, slice), { recursive: true });
    expect(findPodCgroup(hierarchy(), UID)?.path).toBe(join(root, slice));
  });

  it("finds a pod under a kubelet's cgroupRoot one directory down, and only its own UID", () => {
    mkdirSync(join(root, 'corral-node-2/kubepods', `pod${UID}`), { recursive: true });
    mkdirSync(join(root, 'system.slice/docker-abc.scope'), { recursive: true });
    expect(findPodCgroup(hierarchy(), UID)?.path).toBe(join(root, 'corral-node-2/kubepods', `pod${UID}`));
    expect(findPodCgroup(hierarchy(), UID.replace('0f3c', '1f3c'))).toBeUndefined();
  });

  it('refuses what is not a pod UID, so no path can be walked out of the hierarchy', () => {
    mkdirSync(join(root, 'kubepods/pod..'), { recursive: true });
    expect(findPodCgroup(hierarchy(), '..')).toBeUndefined();
    expect(findPodCgroup(hierarchy(), '../../etc')).toBeUndefined();
  });
});
