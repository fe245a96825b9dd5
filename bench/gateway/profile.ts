/**
 * Where the gateway child's sampled time went, when CORRAL_BENCH_GATEWAY_CPU_PROF names a directory: self time
 * by kind of code and the busiest functions, from its newest .cpuprofile.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { table } from '../support.js';
import { REPO_ROOT } from './settings.js';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Where the gateway child's sampled time went (self time by kind of code), from its newest .cpuprofile. */
export function summarizeProfile(dir: string): void {
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread (1 is tsx's loader thread).
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) : [];
  const newest = files.sort().at(-1);
  if (!newest) {
    console.log(`\nno .cpuprofile in ${dir}`);
    return;
  }
  const profile = JSON.parse(readFileSync(join(dir, newest), 'utf8')) as CpuProfile;
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const kind = (frame: CpuProfile['nodes'][number]['callFrame']): string | undefined => {
    const { functionName: fn, url } = frame;
    if (fn === '(idle)') return undefined;
    if (['writev', 'writeLatin1String', 'writeUtf8String', 'writeBuffer'].includes(fn)) {
      return 'socket writes (syscalls, incl. loopback delivery)';
    }
    if (fn === '(garbage collector)') return 'garbage collector';
    if (url.includes('prom-client')) return 'metrics (prom-client)';
    if (url.includes('abort_controller') || url.includes('event_target'))
      return 'AbortController / EventTarget';
    if (url.includes('/src/gateway/')) return 'src/gateway (own code)';
    if (url.includes('undici') || url.startsWith('wasm://')) return 'undici (client, llhttp)';
    if (url.startsWith('node:_http') || url.startsWith('node:internal/http')) return 'node:http server';
    if (url.startsWith('node:') || url === '') return 'other node core and native';
    return 'other (tsx, startup)';
  };
  const byKind = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id);
    const us = profile.timeDeltas[i + 1] ?? 0;
    const k = frame && kind(frame);
    if (!frame || k === undefined) return;
    busy += us;
    byKind.set(k, (byKind.get(k) ?? 0) + us);
    const where = frame.url.replace(/^.*node_modules\//, '').replace(`file://${REPO_ROOT}/`, '');
    const name = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  });
  const share = (us: number) => `${((us / busy) * 100).toFixed(1)}%`;
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => [name, share(us)]);
  console.log(
    `\nGateway CPU profile ${join(dir, newest)}: ${(busy / 1e6).toFixed(1)} s of samples, idle excluded`,
  );
  console.log(table(['self time in', 'share'], top(byKind, 12)));
  console.log(table(['function (self time)', 'share'], top(byFunction, 15)));
}
