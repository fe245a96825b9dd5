/**
 * One owner's creates and updates run one at a time: the others wait before their body is read (so a flooding
 * owner's connections hold no parsed bodies and the kernel slows its sender), and another owner's requests wait
 * behind at most one of its writes instead of all of them. In this process's memory, like the rate limit.
 *
 * The turn passes on in a later turn of the event loop (`setImmediate`), after the I/O that arrived meanwhile: the
 * store's SQLite driver answers without I/O, so a write handed its turn from a promise would run straight after the
 * previous one, and a flood's queued writes would run as one block (25 creates of 64 KB held another owner's list
 * for 116 ms in the abuse bench).
 */
export class OwnerWriteGate {
  /** Owners with a write in progress, each with the writes waiting their turn. */
  readonly #waiting = new Map<string, (() => void)[]>();
  readonly #maxWaiting: number;

  constructor(options: { maxWaiting: number }) {
    this.#maxWaiting = options.maxWaiting;
  }

  /**
   * Resolves with the function that lets the next write of this owner in (call it exactly once), or with
   * undefined at once when `maxWaiting` writes of the owner already wait.
   */
  async enter(owner: string): Promise<(() => void) | undefined> {
    const queue = this.#waiting.get(owner);
    if (!queue) {
      this.#waiting.set(owner, []);
      return this.#leaver(owner);
    }
    if (queue.length >= this.#maxWaiting) return undefined;
    await new Promise<void>((resolve) => queue.push(resolve));
    return this.#leaver(owner);
  }

  #leaver(owner: string): () => void {
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = this.#waiting.get(owner)?.shift();
      if (next) setImmediate(next);
      else this.#waiting.delete(owner);
    };
  }
}
