import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../../test/support/manual-timers.js';
import {
  GpuCheckpointDeadlineError,
  GpuCheckpointHelperError,
} from '../../errors/gpu-checkpoint-catalogue.js';
import { HelperDaemon } from './helper-daemon.js';

const logger = pino({ level: 'silent' });

/**
 * A real Node process that speaks the serving helper's line protocol. Each answer carries the helper's own pid (in
 * `state`), so that a test sees whether a call was served by the same process or a fresh one. The request's pid says
 * what to do: 1 answer, 2 hang in a call that never returns, 3 crash, 4 print an answer with another id and a line that
 * is no answer first, then its own.
 */
const SCRIPT = `
if (process.argv[1] !== '--serve') process.exit(9);
const lines = require('node:readline').createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const r = JSON.parse(line);
  const answer = (id) => console.log(JSON.stringify({ ok: true, op: r.op, steps: [], state: process.pid, id }));
  if (r.pid === 2) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  if (r.pid === 3) { console.error('Segmentation fault'); process.exit(139); }
  if (r.pid === 4) { console.log(JSON.stringify({ ok: true, op: r.op, steps: [], state: -1, id: r.id + 100 })); console.log('warning'); }
  answer(r.id);
});
`;
const helper = { command: process.execPath, args: ['-e', SCRIPT, '--'] };

const stateOf = (answer: { ok: boolean; state?: number }) => (answer.ok ? answer.state : undefined);

describe('the checkpoint helper kept running', () => {
  it('serves call after call from one process, each answer matched to its request', async () => {
    const daemon = new HelperDaemon({ helper, logger, timers: new ManualTimers() });
    const [first, second] = await Promise.all([
      daemon.call('state', ['1'], 60_000),
      daemon.call('resume', ['1'], 60_000),
    ]);
    expect(first).toMatchObject({ ok: true, op: 'state' });
    expect(second).toMatchObject({ ok: true, op: 'resume' });
    expect(stateOf(first)).toBe(stateOf(second));
    // An answer with another request's id is not this call's: the call waits for its own.
    const held = await daemon.call('state', ['4'], 60_000);
    expect(held).toMatchObject({ ok: true, op: 'state' });
    expect(stateOf(held)).toBe(stateOf(first));
    daemon.close();
  });

  it('kills a hung helper at the deadline, rejects that call alone, and serves the next from a fresh helper', async () => {
    const timers = new ManualTimers();
    const daemon = new HelperDaemon({ helper, logger, timers });
    const before = stateOf(await daemon.call('state', ['1'], 60_000));
    const hung = daemon.call('suspend', ['2', '500'], 1_000).catch((e: unknown) => e);
    const queued = daemon.call('state', ['1'], 60_000);
    // The call's deadline is the one timer set: calls are served one at a time.
    expect(timers.count).toBe(1);
    timers.advance(999);
    expect(daemon.running).toBe(true);
    timers.advance(1);
    const error = await hung;
    expect(error).toBeInstanceOf(GpuCheckpointDeadlineError);
    expect(error).toMatchObject({
      code: 'GPU_CHECKPOINT_DEADLINE',
      message: 'the driver call (suspend) did not return within 1000 ms',
      metadata: { op: 'suspend', params: ['2', '500'], deadlineMs: 1_000 },
    });
    const after = stateOf(await queued);
    expect(after).toBeGreaterThan(0);
    expect(after).not.toBe(before);
    daemon.close();
  });

  it('rejects the call of a helper that crashes, with the end of its stderr, and restarts it on the next call', async () => {
    const daemon = new HelperDaemon({ helper, logger, timers: new ManualTimers() });
    const before = stateOf(await daemon.call('state', ['1'], 60_000));
    const error = await daemon.call('restore', ['3'], 60_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GpuCheckpointHelperError);
    expect(error).toMatchObject({
      message: 'the checkpoint helper (restore) exited without an answer (exit 139)',
      metadata: { stderr: 'Segmentation fault' },
    });
    expect(daemon.running).toBe(false);
    const after = stateOf(await daemon.call('state', ['1'], 60_000));
    expect(after).toBeGreaterThan(0);
    expect(after).not.toBe(before);
    daemon.close();
  });

  it('close ends the helper process and rejects the calls not answered, and every later call', async () => {
    const timers = new ManualTimers();
    const daemon = new HelperDaemon({ helper, logger, timers });
    const pid = stateOf(await daemon.call('state', ['1'], 60_000)) as number;
    expect(() => process.kill(pid, 0)).not.toThrow();
    const hung = daemon.call('lock', ['2', '500'], 60_000).catch((e: unknown) => e);
    const queued = daemon.call('state', ['1'], 60_000).catch((e: unknown) => e);
    daemon.close();
    expect(await hung).toBeInstanceOf(GpuCheckpointHelperError);
    expect(await queued).toMatchObject({
      message: 'the checkpoint helper was closed before answering (state)',
    });
    await expect(daemon.call('state', ['1'], 60_000)).rejects.toBeInstanceOf(GpuCheckpointHelperError);
    expect(timers.count).toBe(0);
    // The helper is gone (SIGKILL to its group): waits a bounded time for the kernel to reap it.
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(pid)).toBe(false);
  });

  it('rejects with a helper error when the helper cannot start', async () => {
    const daemon = new HelperDaemon({
      helper: { command: '/nonexistent/corral-cuda-helper', args: [] },
      logger,
      timers: new ManualTimers(),
    });
    const error = await daemon.call('state', ['1'], 60_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GpuCheckpointHelperError);
    expect((error as Error).message).toMatch(/^the checkpoint helper could not start: .*ENOENT/);
    daemon.close();
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
