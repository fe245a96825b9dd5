/**
 * Pods' cgroups as the kubelet lays them out, made for real in a test-owned subtree of this machine's cgroup
 * hierarchies (v2 and the v1 freezer's, wherever each is writable here), with real processes moved into them: what
 * the node agent (src/node/) freezes in its tests and in the test kubelet's pods. Each hierarchy's subtree is removed
 * at the end, once its processes are killed.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { PodHierarchy } from '../../src/node/pod-cgroups.js';
import { findFreezer, killCgroup, setFrozen } from '../../src/runtime/cgroups/cgroup-freezer.js';
import type { CgroupKind } from '../../src/runtime/cgroups/cgroup-hierarchy.js';

export type KubeletDriver = 'systemd' | 'cgroupfs';
export type PodQos = 'guaranteed' | 'burstable' | 'besteffort';

/** A test-owned hierarchy root on this machine, of each kind that is writable here; `skip` says why one is not. */
export function testPodHierarchy(kind: CgroupKind): PodHierarchy | { skip: string } {
  const found = findFreezer(
    kind === 'v2' ? 'cgroup-v2' : 'cgroup-v1',
    `corral-pods-${randomUUID().slice(0, 8)}`,
  );
  if (found.kind === 'process-group') return { skip: found.reason };
  return { kind: found.kind, root: found.base };
}

/** The pod's own cgroup directory, relative to the root, as the kubelet's driver names it for its QoS class. */
export function kubeletPodDir(driver: KubeletDriver, qos: PodQos, uid: string): string {
  if (driver === 'systemd') {
    const id = uid.replaceAll('-', '_');
    return qos === 'guaranteed'
      ? `kubepods.slice/kubepods-pod${id}.slice`
      : `kubepods.slice/kubepods-${qos}.slice/kubepods-${qos}-pod${id}.slice`;
  }
  return qos === 'guaranteed' ? `kubepods/pod${uid}` : `kubepods/${qos}/pod${uid}`;
}

/** Makes the pod's cgroup and one container's below it; moves `pid` into the container's. Returns the pod's dir. */
export function placeInPodCgroup(
  hierarchy: PodHierarchy,
  layout: { driver: KubeletDriver; qos: PodQos; uid: string },
  pid: number,
): string {
  const podDir = path.join(hierarchy.root, kubeletPodDir(layout.driver, layout.qos, layout.uid));
  const container = path.join(podDir, layout.driver === 'systemd' ? 'cri-containerd-worker.scope' : 'worker');
  mkdirSync(container, { recursive: true });
  writeFileSync(path.join(container, 'cgroup.procs'), String(pid));
  return podDir;
}

/** Kills every process left under the test root and removes its cgroups, deepest first. */
export async function removeTestHierarchy(hierarchy: PodHierarchy): Promise<void> {
  const remove = async (dir: string): Promise<void> => {
    let entries: string[] = [];
    try {
      entries = readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const entry of entries) await remove(path.join(dir, entry));
    const cgroup = { kind: hierarchy.kind, path: dir };
    killCgroup(cgroup);
    await setFrozen(cgroup, false).catch(() => undefined);
    for (let attempt = 0; attempt < 100; attempt++) {
      try {
        rmdirSync(dir);
        return;
      } catch {
        killCgroup(cgroup);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  await remove(hierarchy.root);
}
