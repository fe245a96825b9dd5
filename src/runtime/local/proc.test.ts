import { describe, expect, it } from 'vitest';
import {
  cpuPercent,
  isSameProcess,
  type ProcView,
  parseProcStat,
  parseRssBytes,
  readProcStat,
  readProcView,
  readRssBytes,
} from './proc.js';

/** A /proc/<pid>/stat line with the given comm, state, utime, stime and starttime (other fields zero). */
function statLine(comm: string, state: string, utime: number, stime: number, startTime: number): string {
  const fields = [state, ...Array(10).fill('0'), utime, stime, ...Array(6).fill('0'), startTime, '0', '0'];
  return `4242 (${comm}) ${fields.join(' ')}\n`;
}

describe('parseProcStat', () => {
  it.each([
    [
      'a plain line',
      statLine('node', 'S', 30, 12, 987654),
      { state: 'S', startTime: '987654', cpuTicks: 42 },
    ],
    [
      'a comm with spaces and parentheses',
      statLine('my (odd) name', 'R', 1, 2, 5),
      { state: 'R', startTime: '5', cpuTicks: 3 },
    ],
    ['a zombie', statLine('sh', 'Z', 0, 0, 77), { state: 'Z', startTime: '77', cpuTicks: 0 }],
    ['no comm', 'garbage', undefined],
    ['a cut-off line', '4242 (node) S 0 0', undefined],
    ['empty', '', undefined],
  ])('%s', (_name, text, expected) => {
    expect(parseProcStat(text)).toEqual(expected);
  });
});

describe('parseRssBytes', () => {
  it.each([
    ['Name:\tnode\nVmRSS:\t   2048 kB\nThreads:\t7\n', 2048 * 1024],
    ['Name:\tkthreadd\nThreads:\t1\n', 0],
    ['', 0],
  ])('%j -> %d', (status, bytes) => {
    expect(parseRssBytes(status)).toBe(bytes);
  });
});

describe('isSameProcess', () => {
  const stat = { state: 'S', startTime: '100', cpuTicks: 0 };
  const ours = 'PATH=/bin\0CORRAL_WORKER_ID=w1\0';
  const cases: [string, ProcView, boolean][] = [
    ['our process', { procAvailable: true, stat, environ: ours }, true],
    ['no /proc on this host: alive is all we know', { procAvailable: false }, true],
    ['/proc but no stat: gone meanwhile', { procAvailable: true }, false],
    ['a zombie', { procAvailable: true, stat: { ...stat, state: 'Z' }, environ: ours }, false],
    ['dead', { procAvailable: true, stat: { ...stat, state: 'X' }, environ: ours }, false],
    ['another start time: a recycled pid', { procAvailable: true, stat: { ...stat, startTime: '1' } }, false],
    ['another worker id', { procAvailable: true, stat, environ: 'CORRAL_WORKER_ID=w2\0' }, false],
    [
      'a prefix of the worker id is not the worker',
      { procAvailable: true, stat, environ: 'CORRAL_WORKER_ID=w10' },
      false,
    ],
    ['an unreadable environ: the start time has to do', { procAvailable: true, stat }, true],
    ['an empty environ: the start time has to do', { procAvailable: true, stat, environ: '' }, true],
  ];
  it.each(cases)('%s', (_name, view, same) => {
    expect(isSameProcess(view, { workerId: 'w1', startTime: '100' })).toBe(same);
  });

  it('takes any start time when the state file has none', () => {
    expect(isSameProcess({ procAvailable: true, stat, environ: ours }, { workerId: 'w1' })).toBe(true);
  });
});

describe('cpuPercent', () => {
  it.each([
    ['one core busy for a second', { ticks: 0, at: 0 }, { ticks: 100, at: 1000 }, 100],
    ['a quarter of a core', { ticks: 50, at: 1000 }, { ticks: 100, at: 3000 }, 25],
    ['rounded to one decimal', { ticks: 0, at: 0 }, { ticks: 1, at: 3000 }, 0.3],
    ['no time passed: not a division by zero', { ticks: 0, at: 5 }, { ticks: 0, at: 5 }, 0],
    ['ticks going back (a new process): never negative', { ticks: 90, at: 0 }, { ticks: 10, at: 1000 }, 0],
  ])('%s', (_name, previous, current, percent) => {
    expect(cpuPercent(previous, current)).toBe(percent);
  });
});

describe.runIf(process.platform === 'linux')('the /proc readers on this host', () => {
  it('read this process', () => {
    expect(readProcStat(process.pid)).toMatchObject({
      state: expect.any(String),
      startTime: expect.any(String),
    });
    expect(readRssBytes(process.pid)).toBeGreaterThan(0);
    expect(readProcView(process.pid)).toMatchObject({ procAvailable: true, stat: expect.any(Object) });
  });

  it('answer undefined for a pid that does not exist', () => {
    expect(readProcStat(2 ** 30)).toBeUndefined();
    expect(readRssBytes(2 ** 30)).toBeUndefined();
    expect(readProcView(2 ** 30)).toEqual({ procAvailable: true });
  });
});
