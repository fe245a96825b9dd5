/**
 * Which cgroup freezer this host offers the local runtime, read from /proc/self/mountinfo and /proc/self/cgroup
 * (pure): the cgroup v2 hierarchy (`cgroup.freeze`, `cgroup.events`) wherever it is mounted (/sys/fs/cgroup on a
 * unified host, /sys/fs/cgroup/unified on a hybrid one), else the v1 `freezer` controller's hierarchy
 * (`freezer.state`). Each answer is the directory of this process's own cgroup in that hierarchy, under which the
 * runtime makes one cgroup per worker. Also what a freezer's state file says (frozen or not).
 */

export type CgroupKind = 'v2' | 'v1';

/** The directory of this process's cgroup in one hierarchy. */
export interface CgroupPlace {
  kind: CgroupKind;
  dir: string;
}

interface Mount {
  /** Field 4: the root of the mount within its hierarchy. */
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

/** mountinfo's octal escapes (`\040` for a space) undone. */
function unescapeField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** The cgroup mounts of /proc/self/mountinfo's text. */
export function cgroupMounts(mountinfo: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (before === undefined || after === undefined) continue;
    const fields = before.split(' ');
    const [fsType, , superOptions] = after.split(' ');
    const root = fields[3];
    const mountPoint = fields[4];
    if (root === undefined || mountPoint === undefined || fsType === undefined) continue;
    if (fsType !== 'cgroup' && fsType !== 'cgroup2') continue;
    mounts.push({
      root: unescapeField(root),
      mountPoint: unescapeField(mountPoint),
      fsType,
      superOptions: (superOptions ?? '').split(','),
    });
  }
  return mounts;
}

/** /proc/self/cgroup's lines: hierarchy id, controllers, path. */
function ownPaths(procCgroup: string): { controllers: string[]; path: string; id: string }[] {
  return procCgroup
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const first = line.indexOf(':');
      const second = line.indexOf(':', first + 1);
      return {
        id: line.slice(0, first),
        controllers: line.slice(first + 1, second).split(','),
        path: line.slice(second + 1),
      };
    });
}

/** Where `path` (relative to the hierarchy's root) lies under a mount of it; undefined when the mount does not show it. */
function dirUnder(mount: Mount, path: string): string | undefined {
  const root = mount.root === '/' ? '' : mount.root;
  if (root !== '' && path !== root && !path.startsWith(`${root}/`)) return undefined;
  const rest = path.slice(root.length);
  const base = mount.mountPoint.replace(/\/+$/, '');
  return rest === '' || rest === '/' ? base || '/' : `${base}${rest}`;
}

/** This process's cgroup in the v2 hierarchy and in the v1 freezer's, where each is mounted (first mount found). */
export function cgroupPlaces(mountinfo: string, procCgroup: string): CgroupPlace[] {
  const mounts = cgroupMounts(mountinfo);
  const own = ownPaths(procCgroup);
  const places: CgroupPlace[] = [];
  const v2Path = own.find((line) => line.id === '0' && line.controllers.join('') === '')?.path;
  const v2Mount = mounts.find((m) => m.fsType === 'cgroup2');
  if (v2Path !== undefined && v2Mount) {
    const dir = dirUnder(v2Mount, v2Path);
    if (dir !== undefined) places.push({ kind: 'v2', dir });
  }
  const v1Path = own.find((line) => line.controllers.includes('freezer'))?.path;
  const v1Mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes('freezer'));
  if (v1Path !== undefined && v1Mount) {
    const dir = dirUnder(v1Mount, v1Path);
    if (dir !== undefined) places.push({ kind: 'v1', dir });
  }
  return places;
}

/** The file a freezer is driven through, and the one its state is read from. */
export function freezerFiles(kind: CgroupKind): { control: string; state: string } {
  return kind === 'v2'
    ? { control: 'cgroup.freeze', state: 'cgroup.events' }
    : { control: 'freezer.state', state: 'freezer.state' };
}

/** What to write to the control file to freeze or thaw. */
export function freezerCommand(kind: CgroupKind, frozen: boolean): string {
  if (kind === 'v2') return frozen ? '1' : '0';
  return frozen ? 'FROZEN' : 'THAWED';
}

/**
 * What the state file says: `frozen` (every process stopped), `thawed`, or `freezing` (v1's FREEZING, or v2 asked to
 * freeze and not there yet: the caller reads `cgroup.events` alone, so it sees only frozen 0/1).
 */
export function freezerStateOf(kind: CgroupKind, text: string): 'frozen' | 'thawed' | 'freezing' {
  if (kind === 'v2') return /^frozen 1$/m.test(text) ? 'frozen' : 'thawed';
  const state = text.trim();
  if (state === 'FROZEN') return 'frozen';
  if (state === 'FREEZING') return 'freezing';
  return 'thawed';
}
