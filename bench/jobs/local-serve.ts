/**
 * The jobs bench's `corral serve`: the compiled dist/ on SQLite in `dataDir` with the `local` runtime (its workers
 * are host processes running the test worker with this node), and the test worker's image for an endpoint.
 */
import { type ServeProcess, startServe } from '../../test/support/process.js';
import { WORKER_SCRIPT } from '../../test/support/test-image.js';

export function startLocalServe(
  dataDir: string,
  key: string,
  options: { nodeArgs?: string[] } = {},
): Promise<ServeProcess> {
  // The local runtime refuses root unless told that its workers (host processes) may run as root.
  const root = process.getuid?.() === 0 ? ['--local-allow-root'] : [];
  return startServe(
    ['--runtime', 'local', '--gpus', 'h100-80g:8', ...root],
    { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: key },
    options,
  );
}

/** The `image` of an endpoint whose workers run the test worker under the local runtime. */
export function testWorkerImage(): { image: string; command: string } {
  return nodeScriptImage('corral-test-worker:local', WORKER_SCRIPT);
}

/** The `image` of an endpoint whose workers run `script` with this node under the local runtime (`image` names it). */
export function nodeScriptImage(image: string, script: string): { image: string; command: string } {
  const quote = (s: string) => `'${s.replaceAll("'", `'"'"'`)}'`;
  return { image, command: `${quote(process.execPath)} ${quote(script)}` };
}
