/**
 * A worker's answer larger than any limit, for the tests that a reader stops early: `total` bytes of `fill` written
 * in 64 KiB chunks as the client reads them, generated, never held.
 */
import type { ServerResponse } from 'node:http';

/** Resolves with the bytes written once the response ends or its connection closes (before the end: the client closed it). */
export function writeMany(
  res: ServerResponse,
  total: number,
  fill: string,
): Promise<{ written: number; ended: boolean }> {
  const chunk = Buffer.alloc(64 * 1024, fill);
  let written = 0;
  return new Promise((resolve) => {
    res.on('close', () => resolve({ written, ended: res.writableFinished }));
    const more = () => {
      while (written < total && !res.destroyed) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end();
    };
    more();
  });
}
