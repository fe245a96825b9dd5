/**
 * Group commit: calls that arrive in the same turn of the event loop (the requests whose bodies ended in one I/O
 * poll) are run together, in arrival order, by one `run` (one transaction), and each caller is answered with its
 * own outcome once that run has ended (so once it has committed). A run that throws fails every call it held; a
 * call arriving while a run goes on waits for the next one. Used on SQLite, whose one connection writes each
 * commit's pages once however many rows the commit changed.
 */

export interface GroupCommitOptions<T, R> {
  /** Runs a group (one transaction): one outcome per item, in their order. */
  run: (items: readonly T[]) => Promise<R[]>;
  /** When the waiting group goes: the end of this turn of the event loop by default (`setImmediate`). */
  schedule?: (go: () => void) => void;
}

interface Waiting<T, R> {
  item: T;
  resolve: (outcome: R) => void;
  reject: (error: unknown) => void;
}

export class GroupCommit<T, R> {
  readonly #run: (items: readonly T[]) => Promise<R[]>;
  readonly #schedule: (go: () => void) => void;
  #waiting: Waiting<T, R>[] = [];
  #scheduled = false;
  #running = false;

  constructor(options: GroupCommitOptions<T, R>) {
    this.#run = options.run;
    this.#schedule = options.schedule ?? ((go) => setImmediate(go));
  }

  /** The item's outcome, once the group it joined has run. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#later();
    });
  }

  #later(): void {
    if (this.#scheduled || this.#running || this.#waiting.length === 0) return;
    this.#scheduled = true;
    this.#schedule(() => {
      this.#scheduled = false;
      void this.#go();
    });
  }

  async #go(): Promise<void> {
    const group = this.#waiting;
    this.#waiting = [];
    this.#running = true;
    try {
      const outcomes = await this.#run(group.map((w) => w.item));
      for (const [i, w] of group.entries()) w.resolve(outcomes[i] as R);
    } catch (error) {
      for (const w of group) w.reject(error);
    } finally {
      this.#running = false;
      this.#later();
    }
  }
}
