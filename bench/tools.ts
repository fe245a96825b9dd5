/** The load tools the benches drive (wrk, nginx), and the build of dist/ that `corral serve` runs. */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

export function findBinary(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin'];
  for (const dir of dirs) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

export interface Tools {
  nginx: string | undefined;
  wrk: string | undefined;
  nginxVersion: string;
  wrkVersion: string;
}

/** nginx and wrk, installed with apt-get (Debian's nginx-light and wrk) when missing. */
export function ensureTools(): Tools {
  let nginx = findBinary('nginx');
  let wrk = findBinary('wrk');
  if (!nginx || !wrk) {
    const missing = [!nginx && 'nginx (package nginx-light)', !wrk && 'wrk'].filter(Boolean).join(' and ');
    const aptGet = findBinary('apt-get');
    if (!aptGet) {
      console.log(`${missing} not found and there is no apt-get: install them to measure against nginx`);
    } else {
      const root = process.getuid?.() === 0;
      const sudo = root ? undefined : findBinary('sudo');
      console.log(
        `${missing} not found: installing nginx-light and wrk with ${sudo ? 'sudo -n ' : ''}apt-get (Debian packages; ` +
          'the bench runs nginx with its own config on a free 127.0.0.1 port and does not touch a system nginx)',
      );
      const apt = (args: string[]) => {
        const command = sudo ? sudo : aptGet;
        const argv = sudo ? ['-n', aptGet, ...args] : args;
        return spawnSync(command, argv, {
          stdio: ['ignore', 'ignore', 'inherit'],
          env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
          timeout: 300_000,
        }).status;
      };
      if (!root && !sudo) {
        console.log('not root and no sudo: cannot install; run `apt-get install -y nginx-light wrk` as root');
      } else if (apt(['install', '-y', 'nginx-light', 'wrk']) !== 0) {
        console.log('apt-get install failed; running apt-get update and trying again');
        apt(['update']);
        apt(['install', '-y', 'nginx-light', 'wrk']);
      }
      nginx = findBinary('nginx');
      wrk = findBinary('wrk');
    }
  }
  return {
    nginx,
    wrk,
    nginxVersion: nginx ? versionOf(nginx, ['-v']) : 'not installed',
    wrkVersion: wrk ? versionOf(wrk, ['-v']) : 'not installed',
  };
}

/** The first line a binary prints about its version (nginx prints to stderr, wrk exits 1). */
function versionOf(binary: string, args: string[]): string {
  const result = spawnSync(binary, args, { encoding: 'utf8', timeout: 10_000 });
  const text = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n')[0] ?? '';
  return text.replace(/\s+Copyright.*$/, '').trim() || 'unknown';
}

/** Builds dist/: what `corral serve` runs (and the gateway bench's child loads). */
export function buildDist(): void {
  console.log(
    'building dist/ with `npm run build` (the benches measure the compiled code, as corral serve runs it)',
  );
  execFileSync('npm', ['run', 'build', '--silent'], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** What one wrk run reports. */
export interface WrkFigures {
  requests: number;
  seconds: number;
  non2xx: number;
  socketErrors: number;
  p50Ms: number;
  p99Ms: number;
}

export function parseWrk(output: string): WrkFigures {
  const done = /(\d+) requests in ([\d.]+)(us|ms|s|m)\b/.exec(output);
  if (!done) throw new Error(`cannot read wrk's output:\n${output}`);
  const seconds = Number(done[2]) * ({ us: 1e-6, ms: 1e-3, s: 1, m: 60 }[done[3] ?? 's'] ?? 1);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const socketErrors = socket ? socket.slice(1).reduce((sum, v) => sum + Number(v), 0) : 0;
  const percentile = (p: string) => {
    const match = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(output);
    if (!match) return Number.NaN;
    return Number(match[1]) * ({ us: 1e-3, ms: 1, s: 1000 }[match[2] ?? 'ms'] ?? 1);
  };
  return {
    requests: Number(done[1]),
    seconds,
    non2xx,
    socketErrors,
    p50Ms: percentile('50'),
    p99Ms: percentile('99'),
  };
}

export interface WrkRun {
  threads: number;
  connections: number;
  seconds: number;
  url: string;
  /** The Host header (the gateway routes by it). */
  host?: string;
  /** The Authorization header (the gateway needs a key for an endpoint that is not public). */
  authorization?: string;
  /** Sees the wrk process as it starts (to kill it if the bench dies first). */
  onSpawn?: (child: ChildProcess) => void;
}

/** Runs wrk with `--latency` and resolves with what it printed; rejects if it fails or overruns by 30 s. */
export function runWrk(wrk: string, run: WrkRun): Promise<string> {
  const args = [
    '-t',
    String(run.threads),
    '-c',
    String(run.connections),
    '-d',
    `${run.seconds}s`,
    '--latency',
  ];
  if (run.host) args.push('-H', `Host: ${run.host}`);
  if (run.authorization) args.push('-H', `Authorization: ${run.authorization}`);
  args.push(run.url);
  return new Promise((resolve, reject) => {
    const child = spawn(wrk, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    run.onSpawn?.(child);
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), (run.seconds + 30) * 1000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`wrk exited with ${code}: ${out}`));
    });
  });
}
