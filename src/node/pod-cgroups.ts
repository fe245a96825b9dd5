/**
 * Where the kubelet puts a pod's cgroup, so that the node agent can freeze the pod by its UID: under the kubelet's
 * systemd driver `kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid with _ for ->.slice`, under its cgroupfs
 * driver `kubepods/<qos>/pod<uid>`; a Guaranteed pod sits directly under `kubepods` (`kubepods-pod<uid>.slice`,
 * `kubepods/pod<uid>`). The same names on cgroup v2 (the unified hierarchy's root) and v1 (the freezer hierarchy's).
 * The freezer that stops the pod's cgroup stops every container in it, the sandbox's too, and keeps their memory.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { WorkerCgroup } from '../runtime/cgroups/cgroup-freezer.js';
import type { CgroupKind } from '../runtime/cgroups/cgroup-hierarchy.js';

/** A pod UID as the API server gives it (RFC 4122 text); anything else is never looked up on disk. */
const POD_UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function isPodUid(text: string): boolean {
  return POD_UID.test(text);
}

/** The pod's cgroup directories the kubelet may have made, relative to the hierarchy's root, in the order tried. */
function podCgroupCandidates(uid: string): string[] {
  const underscored = uid.replaceAll('-', '_');
  const systemd = [
    `kubepods.slice/kubepods-pod${underscored}.slice`,
    ...['burstable', 'besteffort'].map(
      (qos) => `kubepods.slice/kubepods-${qos}.slice/kubepods-${qos}-pod${underscored}.slice`,
    ),
  ];
  const cgroupfs = [
    `kubepods/pod${uid}`,
    ...['burstable', 'besteffort'].map((qos) => `kubepods/${qos}/pod${uid}`),
  ];
  return [...systemd, ...cgroupfs];
}

/** Which cgroup hierarchy the node's pods are in: `auto` reads the root (cgroup v2's files, else v1's freezer). */
export type CgroupVersionChoice = 'auto' | CgroupKind;

/** The hierarchy the kubelet's layout starts in: its kind and its root directory. */
export interface PodHierarchy {
  kind: CgroupKind;
  root: string;
}

/**
 * The hierarchy under `root` (the node's /sys/fs/cgroup as the agent sees it): cgroup v2 where the root has
 * `cgroup.controllers`, else the v1 freezer's at `root/freezer`. `v1` or `v2` takes `root` as that hierarchy's root
 * itself. Throws, with what was looked for, where neither is there.
 */
export function podHierarchy(root: string, choice: CgroupVersionChoice): PodHierarchy {
  if (choice !== 'auto') return { kind: choice, root };
  if (fs.existsSync(path.join(root, 'cgroup.controllers'))) return { kind: 'v2', root };
  const freezer = path.join(root, 'freezer');
  if (fs.existsSync(path.join(freezer, 'freezer.state')) || fs.existsSync(path.join(freezer, 'cgroup.procs')))
    return { kind: 'v1', root: freezer };
  throw new Error(`no cgroup v2 (${root}/cgroup.controllers) or v1 freezer (${freezer}) under ${root}`);
}

/**
 * The pod's cgroup in the hierarchy, or undefined where the kubelet made none for that UID (not on this node). The
 * kubelet's layout starts at the hierarchy's root, or one directory below it where the kubelet was given a
 * `cgroupRoot` (several kubelets on one machine each have their own).
 */
export function findPodCgroup(hierarchy: PodHierarchy, uid: string): WorkerCgroup | undefined {
  if (!isPodUid(uid)) return undefined;
  for (const root of kubeletRoots(hierarchy.root)) {
    for (const candidate of podCgroupCandidates(uid)) {
      const dir = path.join(root, candidate);
      if (fs.existsSync(dir)) return { kind: hierarchy.kind, path: dir };
    }
  }
  return undefined;
}

/** The hierarchy's root, then each directory right under it that holds a kubelet's `kubepods` (a `cgroupRoot`). */
function kubeletRoots(root: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(root, { withFileTypes: true });
  } catch {
    return [root];
  }
  const nested = entries
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('kubepods'))
    .map((entry) => path.join(root, entry.name))
    .filter(
      (dir) => fs.existsSync(path.join(dir, 'kubepods')) || fs.existsSync(path.join(dir, 'kubepods.slice')),
    );
  return [root, ...nested];
}
