/**
 * `corral node` (the node agent) as a real process on loopback, over a test-owned cgroup hierarchy
 * (pod-cgroups.ts): started on any free port (or the one given, at the loopback address given: two agents as two
 * nodes), with the flags given besides (its model cache), awaited until its log says it listens, stopped with SIGTERM.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PodHierarchy } from '../../src/node/pod-cgroups.js';
import { CORRAL_BIN } from './process.js';

export interface NodeAgentProcess {
  port: number;
  token: string;
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

export async function startNodeAgent(
  hierarchy: PodHierarchy,
  token: string,
  options: { listen?: string; port?: number; args?: string[] } = {},
): Promise<NodeAgentProcess> {
  const dir = mkdtempSync(path.join(tmpdir(), 'corral-node-agent-'));
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const child = spawn(
    process.execPath,
    [CORRAL_BIN, 'node', '--listen', options.listen ?? '127.0.0.1', '--port', String(options.port ?? 0)]
      .concat([
        '--token-file',
        tokenFile,
        '--cgroup-root',
        hierarchy.root,
        '--cgroup-version',
        hierarchy.kind,
      ])
      .concat(['--gpus', 'none', ...(options.args ?? [])]),
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`corral node did not listen within 20 s:\n${output}`)),
      20_000,
    );
    const look = () => {
      const line = output.split('\n').find((l) => l.includes('"node agent listening"'));
      if (!line) return;
      clearTimeout(timer);
      child.stdout?.off('data', look);
      resolve(Number(String(JSON.parse(line).address).split(':').pop()));
    };
    child.stdout?.on('data', look);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`corral node exited with ${code}:\n${output}`));
    });
  });
  return {
    port,
    token,
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
