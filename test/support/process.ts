/** The `corral` binary as a real process, for end-to-end tests: `serve` started and awaited, commands run. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noteInstallation } from './installations.js';
import { removeInstallationResources, TEST_IMAGE } from './test-image.js';

export const CORRAL_BIN = fileURLToPath(new URL('../../bin/corral.js', import.meta.url));

export interface ServeProcess {
  apiUrl: string;
  gatewayUrl: string;
  /** The server's installation id (label corral.dev/installation on each worker it makes). */
  installationId: string;
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
}

/** The log lines (JSON) a `corral serve` under test has written to stdout so far, parsed. */
export function serveLogLines(
  server: ServeProcess,
): { level: number; msg: string; [key: string]: unknown }[] {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

/** Writes the end of what a `corral serve` logged to stderr (for a failed test; undefined if it never started). */
export function printServeLog(server: ServeProcess | undefined, lines = 200): void {
  if (!server) return;
  const tail = server.stdout().split('\n').slice(-lines).join('\n');
  process.stderr.write(`--- the last ${lines} lines corral serve logged ---\n${tail}\n${server.stderr()}\n`);
}

/** `corral serve`'s arguments for the local runtime (workers as host processes) with simulated GPUs, e.g. `h100-80g:2`. */
export function localRuntimeArgs(gpus: string): string[] {
  return ['--runtime', 'local', '--gpus', gpus, ...(process.getuid?.() === 0 ? ['--local-allow-root'] : [])];
}

/**
 * How long `corral serve` may take to listen: a wait on its log line, so that it costs nothing when the start is quick.
 * Suites run side by side (docs/contributing.md), and on a loaded 2-core machine a start that imports every module
 * took over 20 s; under the hook timeout (60 s), so that a start that fails shows what serve printed.
 */
const START_TIMEOUT_MS = 45_000;

/**
 * Starts `corral serve` as a real process (`nodeArgs`: options for node itself; `prefix`: a command that runs node,
 * such as `prlimit --nofile=...`) and waits until its API listens.
 */
export async function startServe(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { nodeArgs?: string[]; prefix?: string[]; startTimeoutMs?: number } = {},
): Promise<ServeProcess> {
  const [command = process.execPath, ...prefixArgs] = options.prefix ?? [];
  const child = spawn(
    command,
    [
      ...(options.prefix ? [...prefixArgs, process.execPath] : []),
      ...(options.nodeArgs ?? []),
      CORRAL_BIN,
      'serve',
      '--api-addr',
      '127.0.0.1:0',
      '--gateway-addr',
      '127.0.0.1:0',
      // Suites run side by side: each server's worker-facing listener on a port of its own.
      '--workers-addr',
      '127.0.0.1:0',
      ...args,
    ],
    {
      // The test worker image is built on this machine (never pulled): owners without an admin key may run it too.
      env: { ...process.env, CORRAL_API_KEY: '', CORRAL_ALLOW_LOCAL_IMAGES: TEST_IMAGE, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const [apiUrl, gatewayUrl] = await new Promise<[string, string]>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`corral serve did not start:\n${out}\n${err}`)),
      options.startTimeoutMs ?? START_TIMEOUT_MS,
    );
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /"apiUrl":"([^"]+)","gatewayUrl":"([^"]+)".*"msg":"corral API listening"/.exec(out);
      if (match?.[1] && match[2]) {
        clearTimeout(timer);
        resolve([match[1], match[2]]);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`corral serve exited with ${code}:\n${out}\n${err}`));
    });
  });
  const installationId = /"installationId":"([^"]+)"/.exec(out)?.[1];
  if (!installationId) throw new Error(`corral serve logged no installation id:\n${out}`);
  noteInstallation(installationId);
  return {
    apiUrl,
    gatewayUrl,
    installationId,
    child,
    stdout: () => out,
    stderr: () => err,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}

/**
 * `corral serve` (startServe) with `serveArgs` on a data directory of its own (`dataDir`) that holds `configYaml` as corral.yaml,
 * `CORRAL_API_KEY` the given key; `close` stops it, removes its installation's containers and networks, then the
 * directory.
 */
export async function startServeWithConfig(options: {
  dirPrefix: string;
  configYaml: string;
  serveArgs: string[];
  apiKey: string;
}): Promise<{ server: ServeProcess; dataDir: string; close(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), options.dirPrefix));
  const config = join(dataDir, 'corral.yaml');
  writeFileSync(config, options.configYaml);
  const server = await startServe([...options.serveArgs, '--config', config], {
    CORRAL_DATA_DIR: dataDir,
    CORRAL_API_KEY: options.apiKey,
  }).catch((error: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  });
  return {
    server,
    dataDir,
    close: async () => {
      await server.stop();
      removeInstallationResources(server.installationId);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a `corral` command to completion. */
export function runCorral(args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CORRAL_BIN, ...args], {
      env: { ...process.env, CORRAL_API_KEY: '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** An answer of the API: its status, its JSON body and the text it came as. */
export interface ApiAnswer {
  status: number;
  body: any;
  text: string;
}

/**
 * Calls the API of a `corral serve` under test with `key`: GET without a body, POST with one; `owner` is sent as
 * X-Corral-Owner (an admin key acting for that owner).
 */
export async function callApi(
  server: Pick<ServeProcess, 'apiUrl'>,
  key: string,
  path: string,
  body?: unknown,
  owner?: string,
): Promise<ApiAnswer> {
  const response = await fetch(`${server.apiUrl}/gpu-instance/openapi/v1/${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(owner ? { 'x-corral-owner': owner } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text), text };
}

/**
 * Calls with `key` to whichever server `current` returns at call time (a suite starts it in beforeAll): `call` as
 * callApi, `endpointOf` the `endpoint` of `GET endpoint?id=`.
 */
export function apiOf(current: () => ServeProcess | undefined, key: string) {
  const call = (path: string, body?: unknown): Promise<ApiAnswer> => {
    const server = current();
    if (!server) throw new Error('corral serve is not running');
    return callApi(server, key, path, body);
  };
  const endpointOf = async (id: string) => (await call(`endpoint?id=${id}`)).body.endpoint;
  return { call, endpointOf };
}
