/**
 * The last lines of a worker's output, bounded by a number of lines and of bytes (pure). The output keeper feeds
 * it a worker's log as its container ends; what it holds is what `GET endpoint/worker/log` shows afterwards.
 */

export interface OutputLimits {
  /** Most lines kept. */
  lines: number;
  /** Most bytes kept (UTF-8, a newline counted per line). */
  bytes: number;
}

/** At least 1,000 lines or 256 KiB, whichever is reached first. */
export const DEFAULT_OUTPUT_LIMITS: OutputLimits = { lines: 1000, bytes: 256 * 1024 };

export class OutputTail {
  readonly #limits: OutputLimits;
  #lines: string[] = [];
  #start = 0;
  #bytes = 0;
  #dropped = false;

  constructor(limits: OutputLimits = DEFAULT_OUTPUT_LIMITS) {
    this.#limits = limits;
  }

  push(raw: string): void {
    // PostgreSQL text cannot hold NUL; a line longer than the whole budget keeps its end.
    let line = raw.includes('\0') ? raw.replaceAll('\0', '\uFFFD') : raw;
    let size = Buffer.byteLength(line) + 1;
    if (size > this.#limits.bytes) {
      line = lastBytes(line, this.#limits.bytes - 1);
      size = Buffer.byteLength(line) + 1;
      this.#dropped = true;
    }
    this.#lines.push(line);
    this.#bytes += size;
    while (this.#lines.length - this.#start > this.#limits.lines || this.#bytes > this.#limits.bytes) {
      const first = this.#lines[this.#start] ?? '';
      this.#bytes -= Buffer.byteLength(first) + 1;
      this.#start += 1;
      this.#dropped = true;
    }
    // Compacts now and then so that a long output does not keep every line it ever had.
    if (this.#start > 4096 && this.#start * 2 > this.#lines.length) {
      this.#lines = this.#lines.slice(this.#start);
      this.#start = 0;
    }
  }

  /** The lines kept, oldest first. */
  lines(): string[] {
    return this.#lines.slice(this.#start);
  }

  /** Whether older lines (or the start of a long line) were dropped to stay within the limits. */
  get truncated(): boolean {
    return this.#dropped;
  }
}

/** The end of `text` in at most `bytes` UTF-8 bytes, never splitting a character. */
function lastBytes(text: string, bytes: number): string {
  const buffer = Buffer.from(text);
  let from = Math.max(0, buffer.length - bytes);
  // A UTF-8 continuation byte (10xxxxxx) is not the start of a character.
  while (from < buffer.length && ((buffer[from] ?? 0) & 0xc0) === 0x80) from += 1;
  return buffer.subarray(from).toString();
}
