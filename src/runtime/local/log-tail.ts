/**
 * A worker's log file read as lines: from the start or from its last N lines, and, when following, what is
 * appended afterwards until the worker has ended. Appends are noticed by fs.watch where it works and by polling
 * where it does not (network filesystems, some containers).
 */
import fs from 'node:fs';
import type fsp from 'node:fs/promises';

const READ_CHUNK = 1024 * 1024;
const TAIL_CHUNK = 64 * 1024;
const DEFAULT_POLL_MS = 250;

export interface TailOptions {
  /** Start at the last `tail` lines; from the start when undefined. */
  tail?: number;
  follow?: boolean;
  signal?: AbortSignal;
  /** Whether the writer has ended: once it has, what is read next is all there will be. */
  ended: () => boolean;
  /** Longest wait between two looks at a followed file. Default 250 ms. */
  pollMs?: number;
}

/** The lines of the open file `handle` (whose path is `file`), without their `\n` or `\r\n`. */
export async function* tailLines(
  handle: fsp.FileHandle,
  file: string,
  options: TailOptions,
): AsyncGenerator<string> {
  const { size } = await handle.stat();
  let position = options.tail === undefined ? 0 : await tailOffset(handle, size, options.tail);
  const decoder = new TextDecoder();
  let partial = '';
  for (;;) {
    // Whether the writer had ended before this read: then what is read now is all there will be.
    const ended = options.ended();
    const chunk = await readFrom(handle, position);
    position += chunk.length;
    if (chunk.length > 0) {
      const lines = (partial + decoder.decode(chunk, { stream: true })).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) yield stripCr(line);
      continue;
    }
    if (!options.follow || ended || options.signal?.aborted) break;
    await waitForChange(file, options.pollMs ?? DEFAULT_POLL_MS, options.signal);
  }
  partial += decoder.decode();
  if (partial !== '') yield stripCr(partial);
}

/** Byte offset where the last `lines` lines of the file start; a final newline ends the last line. */
export async function tailOffset(handle: fsp.FileHandle, size: number, lines: number): Promise<number> {
  if (lines <= 0) return size;
  let count = 0;
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - TAIL_CHUNK);
    const buffer = Buffer.alloc(end - start);
    await handle.read(buffer, 0, buffer.length, start);
    for (let i = buffer.length - 1; i >= 0; i--) {
      if (buffer[i] !== 0x0a || start + i === size - 1) continue;
      count += 1;
      if (count === lines) return start + i + 1;
    }
    end = start;
  }
  return 0;
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

async function readFrom(handle: fsp.FileHandle, position: number): Promise<Buffer> {
  const { size } = await handle.stat();
  if (size <= position) return Buffer.alloc(0);
  const buffer = Buffer.alloc(Math.min(size - position, READ_CHUNK));
  const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
  return buffer.subarray(0, bytesRead);
}

/** Resolves when the file changes, after `ms`, or on abort, whichever comes first. */
function waitForChange(file: string, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    let watcher: fs.FSWatcher | undefined;
    const done = () => {
      clearTimeout(timer);
      watcher?.close();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    try {
      watcher = fs.watch(file, { persistent: false }, done);
      watcher.on('error', done);
    } catch {
      // No watching here (the file went, or the platform cannot): the timer will do.
    }
  });
}
