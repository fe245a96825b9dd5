import { describe, expect, it } from 'vitest';
import { suspendSupport } from '../../runtime/idle-tiers.js';
import { UnavailableCheckpointer } from './unavailable-checkpointer.js';

describe('UnavailableCheckpointer', () => {
  const reason = 'libcuda not found: the suspended tier is off';

  it('gives the runtimes the reason the suspended tier is off, which they say as theirs', () => {
    expect(suspendSupport(new UnavailableCheckpointer(reason))).toEqual({ available: false, reason });
  });

  it('refuses every call with GPU_CHECKPOINT_UNAVAILABLE and the reason', async () => {
    const checkpointer = new UnavailableCheckpointer(reason);
    await expect(checkpointer.suspend()).rejects.toMatchObject({
      code: 'GPU_CHECKPOINT_UNAVAILABLE',
      message: reason,
    });
    await expect(checkpointer.resume()).rejects.toMatchObject({ code: 'GPU_CHECKPOINT_UNAVAILABLE' });
    await expect(checkpointer.state()).rejects.toMatchObject({ code: 'GPU_CHECKPOINT_UNAVAILABLE' });
    await expect(checkpointer.gpuProcesses()).rejects.toMatchObject({ code: 'GPU_CHECKPOINT_UNAVAILABLE' });
  });
});
