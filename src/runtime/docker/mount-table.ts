/**
 * Whether a network storage's host path is a nosuid,nodev mount, from /proc/self/mountinfo, and what it takes to
 * make it one. Pure: the host guard reads the table and runs the commands.
 */

export interface MountPoint {
  mountPoint: string;
  /** The per-mount options (field 6), e.g. ["rw", "nosuid", "relatime"]. */
  options: string[];
}

/** The mount points of a mountinfo text, in order (a later mount on the same point hides an earlier one). */
export function parseMountInfo(text: string): MountPoint[] {
  return text
    .split('\n')
    .map((line) => line.split(' '))
    .filter((fields) => fields.length >= 6)
    .map((fields) => ({
      mountPoint: unescapeOctal(fields[4] ?? ''),
      options: (fields[5] ?? '').split(','),
    }));
}

/** mountinfo writes space, tab, newline and backslash as \040, \011, \012 and \134. */
function unescapeOctal(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

export type StoragePlan =
  /** Already a nosuid,nodev mount point: nothing to do. */
  | { action: 'none' }
  /** A mount point without those options: remount it with them (per mount point; the filesystem is untouched). */
  | { action: 'remount'; commands: string[][] }
  /** Not a mount point: bind-mount the path on itself, then make that mount nosuid,nodev. */
  | { action: 'bind'; commands: string[][] };

/**
 * Per-mount flags a bind remount would otherwise reset (it sets the flags it is given, not only the new ones):
 * kept as they are, so that a read-only or noexec mount stays so.
 */
const KEPT_FLAGS = new Set(['ro', 'noexec', 'noatime', 'nodiratime', 'relatime', 'strictatime']);

/** What makes `path` (absolute, symlinks resolved) a nosuid,nodev mount point; `mount` arguments. */
export function storagePlan(mounts: MountPoint[], path: string): StoragePlan {
  const own = mounts.filter((m) => m.mountPoint === path).at(-1);
  if (own?.options.includes('nosuid') && own.options.includes('nodev')) return { action: 'none' };
  // A new bind mount starts with the flags of the mount that holds the path.
  const from = own ?? containingMount(mounts, path);
  const kept = (from?.options ?? []).filter((option) => KEPT_FLAGS.has(option));
  const remount = ['-o', ['remount', 'bind', 'nosuid', 'nodev', ...kept].join(','), path];
  if (!own) return { action: 'bind', commands: [['--bind', path, path], remount] };
  return { action: 'remount', commands: [remount] };
}

function containingMount(mounts: MountPoint[], path: string): MountPoint | undefined {
  let best: MountPoint | undefined;
  for (const mount of mounts) {
    const prefix = mount.mountPoint === '/' ? '/' : `${mount.mountPoint}/`;
    if (!path.startsWith(prefix)) continue;
    if (!best || mount.mountPoint.length >= best.mountPoint.length) best = mount;
  }
  return best;
}
