import { describe, expect, it } from 'vitest';
import { cudaResultName, formatDriverApiVersion, processStateOf } from './cuda-abi.js';

describe('the CUDA ABI facts', () => {
  it.each([
    [0, 'running'],
    [1, 'locked'],
    [2, 'checkpointed'],
    [3, 'failed'],
    [4, 'failed'],
    [5, 'failed'],
  ])('reads CUprocessState %i as %s', (value, state) => {
    expect(processStateOf(value)).toBe(state);
  });

  it.each([
    [12080, '12.8'],
    [13000, '13.0'],
    [12040, '12.4'],
    [13020, '13.2'],
  ])('writes driver API version %i as %s', (version, text) => {
    expect(formatDriverApiVersion(version)).toBe(text);
  });

  it("names a CUresult by the driver's name, else the table's, else its number", () => {
    expect(cudaResultName(909)).toBe('CUDA_ERROR_TIMEOUT');
    expect(cudaResultName(304, 'CUDA_ERROR_OPERATING_SYSTEM')).toBe('CUDA_ERROR_OPERATING_SYSTEM');
    expect(cudaResultName(12345)).toBe('CUresult 12345');
  });
});
