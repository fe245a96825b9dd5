import { describe, expect, it } from 'vitest';
import { GpuCheckpointDeadlineError } from '../../errors/gpu-checkpoint-catalogue.js';
import { availabilityOf } from './availability.js';

const version = (driverVersion: number, missing: string[] = []) => ({
  answer: { ok: true as const, op: 'driver-version' as const, steps: [], driverVersion, missing },
});

describe('whether the suspended tier can work', () => {
  it('is available with driver 570 (CUDA 12.8) and newer, with every entry point', () => {
    expect(availabilityOf(version(12080))).toEqual({ available: true, driverVersion: '12.8' });
    expect(availabilityOf(version(13000))).toEqual({ available: true, driverVersion: '13.0' });
  });

  it('is not with an older driver, and says which and what to do', () => {
    const availability = availabilityOf(version(12040, ['cuCheckpointProcessLock']));
    expect(availability).toEqual({ available: false, reason: expect.stringContaining('CUDA API is 12.4') });
    expect(availability.available || availability.reason).toContain(
      'upgrade the NVIDIA driver to 570 or newer',
    );
  });

  it('is not when entry points are missing, and names them', () => {
    const availability = availabilityOf(version(12080, ['cuCheckpointProcessRestore']));
    expect(availability.available || availability.reason).toContain(
      'libcuda.so.1 lacks cuCheckpointProcessRestore',
    );
  });

  it('is not without libcuda', () => {
    const availability = availabilityOf({
      answer: {
        ok: false,
        op: 'driver-version',
        steps: [],
        error: { kind: 'no-libcuda', message: 'libcuda not found' },
      },
    });
    expect(availability.available || availability.reason).toMatch(
      /^libcuda\.so\.1 cannot be loaded .*suspended tier is off/,
    );
  });

  it('is not when the helper failed, and says how', () => {
    const availability = availabilityOf({
      failure: new GpuCheckpointDeadlineError('no answer within 15000 ms'),
    });
    expect(availability.available || availability.reason).toContain('no answer within 15000 ms');
  });
});
