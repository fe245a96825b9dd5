/**
 * Where a runtime whose workers cannot carry it themselves (Docker: a container's labels are fixed at create) keeps
 * a suspended worker's GPU memory (per GPU uuid, in bytes) so that a restarted Corral adopts it knowing what its
 * restore needs: one small JSON file per worker in a directory of Corral's data dir, written at the suspend, removed
 * at the thaw that begins a restore and with the worker.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Worker ids name files here: no separators, no leading dot. */
const FILE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/;

/** The bytes of a record's text; undefined for anything else (pure). */
export function parseGpuBytes(text: string): Record<string, number> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const bytes = (value as { gpuBytes?: unknown } | null)?.gpuBytes;
  if (!bytes || typeof bytes !== 'object') return undefined;
  return Object.fromEntries(
    Object.entries(bytes).filter(
      (entry): entry is [string, number] =>
        typeof entry[1] === 'number' && Number.isFinite(entry[1]) && entry[1] >= 0,
    ),
  );
}

export class SuspendRecords {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = path.resolve(dir);
  }

  /** Records the worker's GPU memory (tmp + rename). Throws where it cannot be written. */
  write(workerId: string, gpuBytes: Record<string, number>): void {
    const file = this.#file(workerId);
    if (!file) return;
    fs.mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${JSON.stringify({ gpuBytes })}\n`);
    fs.renameSync(tmp, file);
  }

  /** The recorded GPU memory, or undefined when there is none (or it cannot be read). */
  read(workerId: string): Record<string, number> | undefined {
    const file = this.#file(workerId);
    if (!file) return undefined;
    try {
      return parseGpuBytes(fs.readFileSync(file, 'utf8'));
    } catch {
      return undefined;
    }
  }

  delete(workerId: string): void {
    const file = this.#file(workerId);
    if (file) fs.rmSync(file, { force: true });
  }

  #file(workerId: string): string | undefined {
    return FILE_ID.test(workerId) ? path.join(this.#dir, `${workerId}.json`) : undefined;
  }
}
