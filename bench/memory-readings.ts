/**
 * What the memory bench (memory.ts) reads of a process: RSS and its high-water mark from /proc, the heap from its
 * Prometheus /metrics, the live heap after a full collection forced through the inspector, and the statistics of
 * those samples (median, least-squares slope).
 */
import { readFileSync } from 'node:fs';
import { WebSocket } from 'undici';
import type { ServeProcess } from '../test/support/process.js';

export const MIB = 1024 * 1024;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Where a process's /metrics are read, and the key it takes. */
export interface Scrape {
  apiUrl: string;
  headers: Record<string, string>;
}

/** VmRSS and VmHWM of a process, in MiB (undefined once it is gone). */
export function memoryOf(pid: number): { rssMiB: number; hwmMiB: number } | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMiB: kib('VmRSS') / 1024, hwmMiB: kib('VmHWM') / 1024 };
}

/** The process's own heap used, in MiB, from its Prometheus /metrics (prom-client's default metrics). */
async function heapUsedMiB(scrape: Scrape): Promise<number> {
  const text = await (await fetch(`${scrape.apiUrl}/metrics`, { headers: scrape.headers })).text();
  const match = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? ([\d.e+]+)/m.exec(text);
  return match ? Number(match[1]) / MIB : Number.NaN;
}

export interface LiveHeap {
  /** V8's heap in use right after a full collection. */
  usedMiB: number;
  /** V8's compiled code among it. */
  codeMiB: number;
}

/** Sends one Chrome DevTools Protocol command to the process's inspector and waits for its answer. */
function inspectorCommand(url: string, method: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`the inspector did not answer ${method} in 60 s`));
    }, 60_000);
    socket.addEventListener('open', () => socket.send(JSON.stringify({ id: 1, method })));
    socket.addEventListener('message', (event) => {
      const answer = JSON.parse(String(event.data)) as { id?: number; error?: { message: string } };
      if (answer.id !== 1) return;
      clearTimeout(timer);
      socket.close();
      if (answer.error) reject(new Error(`${method}: ${answer.error.message}`));
      else resolve();
    });
    socket.addEventListener('error', () => {
      clearTimeout(timer);
      reject(new Error(`cannot reach the inspector at ${url}`));
    });
  });
}

/** The heap in use after a full collection (forced through the inspector), from the process's own /metrics. */
export async function liveHeap(inspectorUrl: string, scrape: Scrape): Promise<LiveHeap> {
  await inspectorCommand(inspectorUrl, 'HeapProfiler.collectGarbage');
  const text = await (await fetch(`${scrape.apiUrl}/metrics`, { headers: scrape.headers })).text();
  const used = Number(/^nodejs_heap_size_used_bytes ([\d.e+]+)$/m.exec(text)?.[1] ?? Number.NaN);
  const space = (name: string) =>
    Number(
      new RegExp(`^nodejs_heap_space_size_used_bytes\\{space="${name}"\\} ([\\d.e+]+)$`, 'm').exec(
        text,
      )?.[1] ?? 0,
    );
  const code = space('code') + space('code_large_object');
  return { usedMiB: used / MIB, codeMiB: code / MIB };
}

/** The inspector's WebSocket URL, from what `node --inspect` printed on the process's stderr. */
export function inspectorUrlOf(server: ServeProcess): string {
  const url = /Debugger listening on (ws:\/\/\S+)/.exec(server.stderr())?.[1];
  if (!url) throw new Error(`corral serve printed no inspector URL:\n${server.stderr()}`);
  return url;
}

interface Sample {
  atMs: number;
  rssMiB: number;
  heapMiB: number;
}

/** Samples `pid`'s RSS (and, when `scrape` is given, its heap) every `everyMs` until stopped. */
export function startSampling(pid: number, everyMs: number, scrape?: Scrape) {
  const samples: Sample[] = [];
  const started = Date.now();
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    const rss = memoryOf(pid)?.rssMiB ?? Number.NaN;
    const heap = scrape ? heapUsedMiB(scrape).catch(() => Number.NaN) : Promise.resolve(Number.NaN);
    void heap.then((heapMiB) => {
      samples.push({ atMs: Date.now() - started, rssMiB: rss, heapMiB });
      busy = false;
    });
  }, everyMs);
  return {
    samples,
    stop: () => clearInterval(timer),
  };
}

export async function medianRss(pid: number, count: number): Promise<number> {
  const values: number[] = [];
  for (let i = 0; i < count; i++) {
    values.push(memoryOf(pid)?.rssMiB ?? Number.NaN);
    if (i < count - 1) await sleep(1_000);
  }
  return median(values);
}

export function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Least-squares slope of `value` over time, per minute. */
export function slopePerMinute(points: { atMs: number; value: number }[]): number {
  const valid = points.filter((p) => Number.isFinite(p.value));
  if (valid.length < 3) return Number.NaN;
  const n = valid.length;
  const meanX = valid.reduce((sum, p) => sum + p.atMs, 0) / n;
  const meanY = valid.reduce((sum, p) => sum + p.value, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const p of valid) {
    covariance += (p.atMs - meanX) * (p.value - meanY);
    variance += (p.atMs - meanX) ** 2;
  }
  return variance === 0 ? Number.NaN : (covariance / variance) * 60_000;
}
