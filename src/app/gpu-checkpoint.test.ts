import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { gpuCheckpointFor } from './gpu-checkpoint.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe("corral serve's GPU checkpointer", () => {
  it('is none with simulated GPUs, and the start-up log says why', async () => {
    const { logger, lines } = capture();
    const setup = await gpuCheckpointFor({
      gpus: { kind: 'simulated', groups: [{ productId: 'sim-80g', count: 1, cudaVersion: '12.8' }] },
      runtime: 'docker',
      logger,
    });
    expect(setup.checkpointer).toBeUndefined();
    expect(setup.availability).toEqual({
      available: false,
      reason: expect.stringMatching(/^GPUs are simulated/),
    });
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'GPU checkpoint unavailable: the suspended tier is off',
        reason: expect.stringMatching(/^GPUs are simulated/),
      }),
    ]);
  });

  it('is none on the kubernetes runtime, whose workers are on other machines', async () => {
    const setup = await gpuCheckpointFor({
      gpus: { kind: 'auto' },
      runtime: 'kubernetes',
      logger: capture().logger,
    });
    expect(setup.availability).toEqual({
      available: false,
      reason: expect.stringContaining('kubernetes runtime'),
    });
  });

  it('is none with --gpus auto on a machine without libcuda (this one), asked of the real helper', async () => {
    const { logger, lines } = capture();
    const setup = await gpuCheckpointFor({
      gpus: { kind: 'auto' },
      runtime: 'local',
      logger,
      probeDeadlineMs: 60_000,
    });
    expect(setup.checkpointer).toBeUndefined();
    expect(setup.availability).toEqual({
      available: false,
      reason: expect.stringMatching(
        /^libcuda\.so\.1 cannot be loaded .*upgrade the NVIDIA driver to 570 or newer/,
      ),
    });
    expect(lines.map((line) => line.msg)).toEqual(['GPU checkpoint unavailable: the suspended tier is off']);
  });
});
