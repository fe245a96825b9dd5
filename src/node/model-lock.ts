/**
 * One fetch of a model at a time in a model cache directory that several node agents share (several kubelets on one
 * machine, as scripts/kube-cluster.sh runs them, or a cache on a shared mount): the model cache shares a download
 * between the callers of one process only, and two processes appending to one `blobs/{etag}.incomplete` would spoil
 * it. A lock file per repository (`{hubDir}/.corral-locks/models--{org}--{name}`, created exclusively, holding the
 * holder's PID) is held while this agent fetches; the callers within this agent share it. Another agent's lock is
 * waited for, and taken over once its PID is gone (an agent killed mid-fetch; the agents run with hostPID, so PIDs
 * are the machine's). A removal (or an eviction) only tries the lock: a model another agent is fetching is left.
 */
import { mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { modelRepoDir } from '../domain/model-refs.js';

export interface ModelLocksOptions {
  hubDir: string;
  /** How long between two looks at another agent's lock; default 250 ms. */
  retryMs?: number;
  /** Whether a process of that PID runs; default `process.kill(pid, 0)`. */
  alive?: (pid: number) => boolean;
  /** The wall clock the lock files' times are compared with; default Date.now. */
  now?: () => number;
}

/**
 * A lock file still without a PID this long after it was made is an agent's that was killed between creating it and
 * writing its PID (which takes microseconds): it is taken over, rather than waited for forever.
 */
export const UNWRITTEN_LOCK_MS = 10_000;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface Held {
  /** This agent's callers holding the lock. */
  holders: number;
  /** The file's taking, shared by them: false when it was tried once and another holds it (tryHold). */
  taken: Promise<boolean>;
  /** Set when the last holder lets go: resolves once the file is gone (and the entry with it). */
  released?: Promise<void>;
}

/** What a try that found the lock held answers. */
const BUSY = Symbol('busy');

export class ModelLocks {
  readonly #o: ModelLocksOptions;
  /** This agent's locks, by file, from their taking until their file is removed. */
  readonly #held = new Map<string, Held>();

  constructor(options: ModelLocksOptions) {
    this.#o = options;
  }

  /** Runs `work` while this agent holds the model's lock (taken, or waited for, first). */
  async hold<T>(name: string, work: () => Promise<T>): Promise<T> {
    for (;;) {
      // BUSY only when this caller joined another's try that failed: the lock is then looked at again.
      const done = await this.#run(name, work, true);
      if (done !== BUSY) return done;
    }
  }

  /**
   * Runs `work` holding the model's lock when no one holds it now, this agent or another; else answers undefined at
   * once (a removal or an eviction, which must not wait behind a fetch, nor remove a model being fetched).
   */
  async tryHold<T>(name: string, work: () => Promise<T>): Promise<T | undefined> {
    const done = await this.#run(name, work, false);
    return done === BUSY ? undefined : done;
  }

  async #run<T>(name: string, work: () => Promise<T>, wait: boolean): Promise<T | typeof BUSY> {
    const file = path.join(this.#o.hubDir, '.corral-locks', modelRepoDir(name));
    let held = this.#held.get(file);
    // A lock being let go is gone before it is taken again, so no file this agent finds is one it still holds.
    while (held?.released) {
      await held.released;
      held = this.#held.get(file);
    }
    if (held && !wait) return BUSY;
    if (!held) {
      held = { holders: 0, taken: this.#take(file, wait) };
      this.#held.set(file, held);
    }
    held.holders += 1;
    try {
      if (!(await held.taken)) return BUSY;
      return await work();
    } finally {
      held.holders -= 1;
      if (held.holders === 0) {
        const done = held;
        done.released = done.taken
          .then(
            (took) => (took ? unlink(file).catch(() => undefined) : undefined),
            () => undefined,
          )
          .finally(() => {
            if (this.#held.get(file) === done) this.#held.delete(file);
          });
        await done.released;
      }
    }
  }

  /** Takes the lock file: true once taken; false when `wait` is not set and another holds it. */
  async #take(file: string, wait: boolean): Promise<boolean> {
    await mkdir(path.dirname(file), { recursive: true });
    for (;;) {
      try {
        const handle = await open(file, 'wx');
        await handle.writeFile(String(process.pid));
        await handle.close();
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (await this.#abandoned(file)) {
        await unlink(file).catch(() => undefined);
        continue;
      }
      if (!wait) return false;
      await new Promise((resolve) => setTimeout(resolve, this.#o.retryMs ?? 250));
    }
  }

  /**
   * Whether another's lock file may be taken over: its holder is gone, or it is this agent's own PID (a lock it holds
   * is never taken again, see hold, so that one is a past agent's), or it never got a PID. A file being written (no
   * PID yet, and young) is someone's: look again.
   */
  async #abandoned(file: string): Promise<boolean> {
    const content = await readFile(file, 'utf8').catch(() => null);
    if (content === null) return false;
    const pid = Number(content.trim());
    if (Number.isInteger(pid) && pid > 0) return pid === process.pid || !(this.#o.alive ?? processAlive)(pid);
    const made = await stat(file).catch(() => null);
    return made !== null && (this.#o.now ?? Date.now)() - made.mtimeMs > UNWRITTEN_LOCK_MS;
  }
}
