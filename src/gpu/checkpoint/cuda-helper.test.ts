import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const HELPER = fileURLToPath(new URL('./cuda-helper.ts', import.meta.url));

/** The real helper from its source, on this machine (no NVIDIA driver here); its one JSON line and exit code. */
async function helper(args: string[], env: Record<string, string> = {}) {
  const result = await run(process.execPath, ['--import', 'tsx', HELPER, ...args], {
    env: { ...process.env, ...env },
  }).then(
    (done) => ({ ...done, code: 0 }),
    (failed: { stdout: string; stderr: string; code: number }) => failed,
  );
  return { answer: JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '') as unknown, code: result.code };
}

describe('the checkpoint helper process, without a driver', () => {
  it('answers driver-version with "libcuda not found", exit 1', async () => {
    const { answer, code } = await helper(['driver-version'], { CORRAL_LIBCUDA: '' });
    expect(code).toBe(1);
    expect(answer).toMatchObject({
      ok: false,
      op: 'driver-version',
      error: { kind: 'no-libcuda', message: expect.stringMatching(/^libcuda not found: libcuda\.so\.1: /) },
    });
  });

  it('names the entry points a library lacks (libc stands for a driver without them)', async () => {
    const version = await helper(['driver-version'], { CORRAL_LIBCUDA: 'libc.so.6' });
    expect(version).toEqual({
      code: 0,
      answer: {
        ok: true,
        op: 'driver-version',
        steps: [],
        driverVersion: 0,
        missing: [
          'cuDriverGetVersion',
          'cuInit',
          'cuCheckpointProcessGetState',
          'cuCheckpointProcessLock',
          'cuCheckpointProcessCheckpoint',
          'cuCheckpointProcessRestore',
          'cuCheckpointProcessUnlock',
        ],
      },
    });
    const suspend = await helper(['suspend', '1', '500'], { CORRAL_LIBCUDA: 'libc.so.6' });
    expect(suspend).toMatchObject({
      code: 1,
      answer: { ok: false, error: { kind: 'missing-entry-points' } },
    });
  });

  it('refuses an unknown operation or a missing pid', async () => {
    expect(await helper(['freeze', '1'])).toMatchObject({
      code: 1,
      answer: { ok: false, error: { kind: 'usage', message: 'unknown operation "freeze"' } },
    });
    expect(await helper(['lock'])).toMatchObject({
      code: 1,
      answer: { ok: false, error: { kind: 'usage', message: 'lock needs a process id, got "undefined"' } },
    });
  });

  it('serves request lines on stdin with answer lines carrying their ids, then exits when stdin closes', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', HELPER, '--serve'], {
      env: { ...process.env, CORRAL_LIBCUDA: 'libc.so.6' },
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.stdin.write(`${JSON.stringify({ id: 7, op: 'suspend', pid: 1, args: ['500'] })}\n`);
    child.stdin.write('not json\n');
    child.stdin.end(`${JSON.stringify({ id: 8, op: 'driver-version' })}\n`);
    expect(await exited).toBe(0);
    const answers = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    expect(answers).toMatchObject([
      { id: 7, ok: false, op: 'suspend', error: { kind: 'missing-entry-points' } },
      { id: null, ok: false, error: { kind: 'usage', message: 'not a request line' } },
      { id: 8, ok: true, op: 'driver-version', driverVersion: 0 },
    ]);
  });
});
