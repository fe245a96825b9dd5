/**
 * One fetch of a model at a time in a model cache directory that several node agents share (several kubelets on one
 * machine, as scripts/kube-cluster.sh runs them, or a cache on a shared mount): the model cache shares a download
 * between the callers of one process only, and two processes appending to one `blobs/{etag}.incomplete` would spoil
 * it. A lock file per repository (`{hubDir}/.corral-locks/models--{org}--{name}`, created exclusively, holding the
 * holder's PID) is held while this agent fetches; the callers within this agent share it. Another agent's lock is
 * waited for, and taken over once its PID is gone (an agent killed mid-fetch; the agents run with hostPID, so PIDs
 * are the machine's).
 */
import { mkdir, open, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import { modelRepoDir } from '../domain/model-refs.js';

export interface ModelLocksOptions {
  hubDir: string;
  /** How long between two looks at another agent's lock; default 250 ms. */
  retryMs?: number;
  /** Whether a process of that PID runs; default `process.kill(pid, 0)`. */
  alive?: (pid: number) => boolean;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class ModelLocks {
  readonly #o: ModelLocksOptions;
  /** This agent's locks: the callers holding each, and the file's taking (shared by them). */
  readonly #held = new Map<string, { holders: number; taken: Promise<void> }>();

  constructor(options: ModelLocksOptions) {
    this.#o = options;
  }

  /** Runs `work` while this agent holds the model's lock (taken, or waited for, first). */
  async hold<T>(name: string, work: () => Promise<T>): Promise<T> {
    const file = path.join(this.#o.hubDir, '.corral-locks', modelRepoDir(name));
    let held = this.#held.get(file);
    if (!held) {
      held = { holders: 0, taken: this.#take(file) };
      this.#held.set(file, held);
    }
    held.holders += 1;
    try {
      await held.taken;
      return await work();
    } finally {
      held.holders -= 1;
      if (held.holders === 0) {
        this.#held.delete(file);
        await held.taken.then(
          () => unlink(file).catch(() => undefined),
          () => undefined,
        );
      }
    }
  }

  async #take(file: string): Promise<void> {
    await mkdir(path.dirname(file), { recursive: true });
    for (;;) {
      try {
        const handle = await open(file, 'wx');
        await handle.writeFile(String(process.pid));
        await handle.close();
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
      // A file being written (no PID yet) is someone's: look again. A holder gone leaves its lock to the next.
      if (Number.isInteger(pid) && pid > 0 && !(this.#o.alive ?? processAlive)(pid)) {
        await unlink(file).catch(() => undefined);
        continue;
      }
      await new Promise((resolve) => setTimeout(resolve, this.#o.retryMs ?? 250));
    }
  }
}
