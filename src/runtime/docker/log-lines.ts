/**
 * Docker's multiplexed log stream -> text lines. Each frame is an 8-byte header (stream type 0/1/2, three zero
 * bytes, big-endian payload length) and the payload. A stream that does not start with such a header (a TTY
 * container) is passed through as raw text. Lines are split per stream so stdout and stderr never mix mid-line.
 */

const HEADER = 8;

class LineSplitter {
  #rest = '';
  readonly #decoder = new TextDecoder();

  push(bytes: Uint8Array): string[] {
    const text = this.#rest + this.#decoder.decode(bytes, { stream: true });
    const parts = text.split('\n');
    this.#rest = parts.pop() ?? '';
    return parts.map(stripCr);
  }

  end(): string[] {
    const text = this.#rest + this.#decoder.decode();
    this.#rest = '';
    return text === '' ? [] : [stripCr(text)];
  }
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

function looksMultiplexed(header: Buffer): boolean {
  const type = header[0] ?? 255;
  return type <= 2 && header[1] === 0 && header[2] === 0 && header[3] === 0;
}

/** Turns the chunks of a log response (follow stream or whole body) into lines, stdout and stderr together. */
export async function* logLines(
  chunks: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
): AsyncGenerator<string> {
  const splitters = new Map<number, LineSplitter>();
  const splitter = (type: number) => {
    let found = splitters.get(type);
    if (!found) {
      found = new LineSplitter();
      splitters.set(type, found);
    }
    return found;
  };
  let pending = Buffer.alloc(0);
  let raw: boolean | undefined;
  for await (const chunk of chunks) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk);
    if (raw === undefined && pending.length + bytes.length < HEADER) {
      pending = Buffer.concat([pending, bytes]);
      continue;
    }
    pending = pending.length === 0 ? bytes : Buffer.concat([pending, bytes]);
    raw ??= !looksMultiplexed(pending);
    if (raw) {
      yield* splitter(1).push(pending);
      pending = Buffer.alloc(0);
      continue;
    }
    while (pending.length >= HEADER) {
      const length = pending.readUInt32BE(4);
      if (pending.length < HEADER + length) break;
      yield* splitter(pending[0] ?? 1).push(pending.subarray(HEADER, HEADER + length));
      pending = pending.subarray(HEADER + length);
    }
  }
  if (raw !== false && pending.length > 0) yield* splitter(1).push(pending);
  for (const found of splitters.values()) yield* found.end();
}
