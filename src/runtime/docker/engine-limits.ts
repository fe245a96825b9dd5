/**
 * Which per-container limits a Docker engine can enforce, from `GET /info`. Pure: takes the engine's answer.
 */

/** The fields of `GET /info` read here (the engine sends many more). */
export interface DockerInfo {
  Driver?: string;
  /** Pairs such as ["Backing Filesystem", "xfs"]. */
  DriverStatus?: [string, string][] | null;
  /** False where the kernel has no memory cgroup: the engine then ignores memory limits. */
  MemoryLimit?: boolean;
}

export interface EngineLimits {
  /** `StorageOpt.size` is accepted: a worker's writable layer is limited to its rootfsSize. */
  rootfsSize: boolean;
  /** HostConfig.Memory is enforced. */
  memory: boolean;
  /** The storage driver and what it sits on, e.g. "overlay2 on xfs". */
  storage: string;
  /** Why the rootfs size is (or is not) limited, for the start-up log and docs. */
  rootfsReason: string;
}

/**
 * overlay2 limits a container's writable layer only on an xfs backing filesystem mounted with `pquota` (which
 * `GET /info` does not show: the runtime falls back when the engine refuses); btrfs and zfs limit it with their own
 * quotas. Every other driver or backing filesystem (overlay2 on ext4, vfs, fuse-overlayfs) cannot.
 */
export function engineLimits(info: DockerInfo): EngineLimits {
  const driver = (info.Driver ?? '').toLowerCase();
  const backing = driverStatus(info, 'Backing Filesystem').toLowerCase();
  const storage = backing === '' ? driver || 'unknown' : `${driver} on ${backing}`;
  const memory = info.MemoryLimit !== false;
  if (driver === 'overlay2' && backing === 'xfs') {
    return {
      rootfsSize: true,
      memory,
      storage,
      rootfsReason: 'overlay2 on xfs sets a project quota per container (the xfs mount needs pquota)',
    };
  }
  if (driver === 'btrfs' || driver === 'zfs') {
    return { rootfsSize: true, memory, storage, rootfsReason: `${driver} sets a quota per container` };
  }
  return {
    rootfsSize: false,
    memory,
    storage,
    rootfsReason:
      driver === 'overlay2'
        ? `overlay2 limits a container's size only on xfs with pquota, not on ${backing || 'this filesystem'}`
        : `the ${driver || 'unknown'} storage driver cannot limit a container's size`,
  };
}

function driverStatus(info: DockerInfo, key: string): string {
  return (info.DriverStatus ?? []).find(([name]) => name === key)?.[1] ?? '';
}

/**
 * The engine refused a size limit on the writable layer (overlay2 on xfs without pquota, btrfs without quotas):
 * "--storage-opt is supported only for overlay over xfs with 'pquota' mount option".
 */
export function isStorageOptRefused(reason: string): boolean {
  return /storage[-_ ]?opt|quota/i.test(reason);
}
