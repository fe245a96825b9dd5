/**
 * The rule of a volume's mount path in a worker: absolute, not `/`, not on the worker's system directories, not
 * twice and not inside another volume's, as the engine reads it (normalised). Pure.
 */

/** The worker's own system directories: a mount on them (or in /proc and /sys) breaks the container. */
const SYSTEM_PATHS = ['/proc', '/sys', '/dev'];

/** `/x//y/./z/` -> `/x/y/z`: how the engine reads a mount path. */
export function normalMountPath(path: string): string {
  const parts = path.split('/').filter((part) => part !== '' && part !== '.');
  return `/${parts.join('/')}`;
}

/**
 * Why a mount path cannot be used next to the ones before it, or undefined. The engine refuses a path mounted twice
 * (`/x` and `/x/`) and `/`, and a container cannot start with a mount on /proc, /sys or /dev; a mount inside another
 * one writes its mount point into the other volume (a network storage shared with others, maybe read-only).
 */
export function mountPathProblem(
  path: string,
  before: { path: string; index: number }[],
): string | undefined {
  if (!path.startsWith('/') || path.split('/').includes('..')) return 'mountPath must be an absolute path';
  const normal = normalMountPath(path);
  if (normal === '/') return "mountPath cannot be / (the worker's root filesystem)";
  for (const system of SYSTEM_PATHS) {
    // /dev/shm is where larger shared memory goes (PyTorch data loaders): the one place below them that is allowed.
    if (normal === system || (normal.startsWith(`${system}/`) && normal !== '/dev/shm')) {
      return `mountPath ${normal} is inside ${system}, which the worker's system needs; mount elsewhere`;
    }
  }
  for (const other of before) {
    const where = `\`volumes.${other.index}.mountPath\``;
    if (other.path === normal) return `mountPath ${normal} is used twice (also ${where})`;
    if (normal.startsWith(`${other.path}/`) || other.path.startsWith(`${normal}/`)) {
      return `mountPath ${normal} and ${where} (${other.path}) are nested; mount volumes side by side`;
    }
  }
  return undefined;
}
