/**
 * `corral serve`'s log is for a person on a terminal, end to end: a real `corral serve` on a pseudo-terminal (`script`,
 * 80 columns) with the local runtime, and one beside it with its output piped (JSON lines). An endpoint whose worker
 * exits 1 at once is said in WARN lines naming it by name, with the exit code and the last line of its output, and
 * its crash loop once with its backoff, not a line per try; a named health path that answers 404 is said with its
 * path and its HEALTH_TIMEOUT. The piped server's JSON lines carry the same facts as fields.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  CORRAL_BIN,
  callApi,
  localRuntimeArgs,
  type ServeProcess,
  serveLogLines,
  startServe,
} from '../support/process.js';

const KEY = 'e2e-terminal-log-key-0123456789';
/** The default backoff (crashes/backoff.ts): failures 1 s, 2 s, 4 s, 8 s apart; the 5th makes a crash loop. */
const CRASH_LOOP_AFTER = 5;
const CRASHING = `sh -c 'echo "Traceback (most recent call last):" >&2; echo "ModuleNotFoundError: No module named torch" >&2; exit 1'`;
/** Marks this run's worker processes (the local runtime leaves them running when its server stops). */
const MARKER = `termlog-${randomUUID().slice(0, 8)}`;
/** An app that serves, but answers 404 on every path. */
const NOT_FOUND_APP = `'${process.execPath}' -e "require('http').createServer((q, s) => { s.statusCode = 404; s.end(); }).listen(process.env.PORT) // ${MARKER}"`;
const until = <T>(check: () => T | Promise<T>, timeoutMs: number) =>
  vi.waitFor(check, { timeout: timeoutMs, interval: 200 });

/** `corral serve` on a pseudo-terminal of 80 columns: what a person running it sees. */
class TerminalServe {
  readonly child: ChildProcess;
  #text = '';

  constructor(args: string[], env: NodeJS.ProcessEnv) {
    const quoted = [process.execPath, CORRAL_BIN, 'serve', ...args].map((a) => `'${a}'`).join(' ');
    this.child = spawn('script', ['-qfec', `stty cols 80 rows 24; exec ${quoted}`, '/dev/null'], {
      env: { ...process.env, CORRAL_API_KEY: KEY, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (chunk: Buffer) => {
      this.#text += chunk.toString();
    });
  }

  /** The lines shown so far, colours and carriage returns removed. */
  lines(): string[] {
    return stripVTControlCharacters(this.#text).replaceAll('\r', '').split('\n');
  }

  async apiUrl(): Promise<string> {
    return until(() => {
      const url = this.lines()
        .map((line) => /corral API listening.* apiUrl=(\S+)/.exec(line)?.[1])
        .find((found) => found !== undefined);
      if (!url) throw new Error(`not listening yet:\n${this.lines().join('\n')}`);
      return url;
    }, 30_000);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve();
      this.child.once('exit', () => resolve());
      this.child.kill('SIGTERM');
    });
  }
}

describe('corral serve says worker trouble where a person looks', () => {
  const dirs: string[] = [];
  let terminal: TerminalServe;
  let terminalApi: string;
  let piped: ServeProcess;
  const created: [{ apiUrl: string }, string][] = [];

  const create = async (server: { apiUrl: string }, endpoint: Record<string, unknown>) => {
    const answer = await callApi(server, KEY, 'endpoint/create', { endpoint });
    expect(answer.status, answer.text).toBe(200);
    created.push([server, answer.body.id]);
    return answer.body.id as string;
  };
  const crashedEvents = async (server: { apiUrl: string }, id: string) =>
    (await callApi(server, KEY, `endpoint/log?id=${id}&limit=1000`)).body.events.filter(
      (e: { type: string }) => e.type === 'crashed',
    ).length as number;
  const crashing = {
    name: 'sdxl',
    ports: [{ port: 8000 }],
    workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1 },
    image: { image: 'sdxl:local', command: CRASHING },
  };

  beforeAll(async () => {
    const dataDir = (name: string) => {
      const dir = mkdtempSync(join(tmpdir(), `corral-e2e-termlog-${name}-`));
      dirs.push(dir);
      return dir;
    };
    terminal = new TerminalServe(
      [
        ...localRuntimeArgs('h100-80g:2'),
        '--api-addr',
        '127.0.0.1:0',
        '--gateway-addr',
        '127.0.0.1:0',
      ].concat(['--workers-addr', '127.0.0.1:0']),
      { CORRAL_DATA_DIR: dataDir('tty') },
    );
    [terminalApi, piped] = await Promise.all([
      terminal.apiUrl(),
      startServe(localRuntimeArgs('h100-80g:2'), { CORRAL_DATA_DIR: dataDir('json'), CORRAL_API_KEY: KEY }),
    ]);
  }, 60_000);

  afterAll(async () => {
    // Deleted endpoints' workers are stopped by their server; any left (a failed test) are stopped here.
    await Promise.all(created.map(([server, id]) => callApi(server, KEY, 'endpoint/delete', { id })));
    await until(() => expect(markedProcesses()).toEqual([]), 20_000).catch(() => {
      for (const pid of markedProcesses()) process.kill(pid, 'SIGKILL');
    });
    await Promise.all([terminal?.stop(), piped?.stop()]);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('a crash-looping worker: WARN lines with the name, exit code and last output line, the loop said once; the JSON carries the same fields', async () => {
    const server = { apiUrl: terminalApi };
    const [id, pipedId] = await Promise.all([create(server, crashing), create(piped, crashing)]);
    const label = `endpoint sdxl (${id})`;
    const ofEndpoint = () => terminal.lines().filter((line) => line.includes(label));

    // One failure past the crash loop: it and the try before it print nothing more.
    await until(
      async () => expect(await crashedEvents(server, id)).toBeGreaterThan(CRASH_LOOP_AFTER),
      90_000,
    );
    await until(
      () => expect(ofEndpoint().some((line) => line.includes('worker crashed'))).toBe(true),
      10_000,
    );
    const lines = ofEndpoint();
    const failures = lines.filter((line) => / WARN {2}/.test(line));
    expect(failures[0]).toMatch(
      new RegExp(
        `^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} WARN {2}${literal(label)}: worker \\S+ exited with code 1: "ModuleNotFoundError: No module named torch"`,
      ),
    );
    expect(lines.find((line) => line.includes('worker crashed'))).toMatch(
      new RegExp(
        `WARN {2}${literal(label)}: worker crashed ${CRASH_LOOP_AFTER} times in \\d+ s \\(exited with code 1: "ModuleNotFoundError: No module named torch"\\); next try in \\d+ s`,
      ),
    );
    // A start, a WARN per failure until the loop, the loop: six lines for six failures over half a minute (it was
    // two INFO lines per try, with no cause).
    expect(failures, lines.join('\n')).toHaveLength(CRASH_LOOP_AFTER);
    expect(lines.length, lines.join('\n')).toBeLessThanOrEqual(CRASH_LOOP_AFTER + 1);

    // Off a terminal: JSON lines with the same facts as fields.
    await until(
      () =>
        expect(serveLogLines(piped).some((l) => l.endpointId === pipedId && l.crashLoop === true)).toBe(true),
      90_000,
    );
    const json = serveLogLines(piped).filter((l) => l.endpointId === pipedId && l.level === 40);
    expect(json[0]).toMatchObject({
      endpointName: 'sdxl',
      cause: 'RUNTIME_ERROR',
      exitCode: 1,
      output: ['Traceback (most recent call last):', 'ModuleNotFoundError: No module named torch'],
    });
    expect(json.at(-1)).toMatchObject({ endpointName: 'sdxl', crashLoop: true, failures: CRASH_LOOP_AFTER });
    expect(json.at(-1)?.nextTryMs).toEqual(expect.any(Number));
  }, 180_000);

  it('a named health path that answers 404: its path and status, then HEALTH_TIMEOUT, by name', async () => {
    const id = await create(
      { apiUrl: terminalApi },
      {
        name: 'pinger',
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1 },
        image: { image: 'pinger:local', command: NOT_FOUND_APP },
        healthy: { path: '/ping' },
      },
    );
    const label = literal(`endpoint pinger (${id})`);
    await until(() => {
      const lines = terminal.lines().join('\n');
      expect(lines).toMatch(new RegExp(`WARN {2}${label}: worker \\S+ health check /ping failing: .*404`));
      expect(lines).toMatch(
        new RegExp(
          `WARN {2}${label}: worker \\S+ failed \\(HEALTH_TIMEOUT\\): GET /ping answered 404 on every probe`,
        ),
      );
    }, 60_000);
  }, 90_000);
});

/** The pids of this run's worker processes still alive. */
function markedProcesses(): number[] {
  return readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(MARKER) ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
