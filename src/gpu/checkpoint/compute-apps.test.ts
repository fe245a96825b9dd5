import { describe, expect, it } from 'vitest';
import { parseComputeApps } from './compute-apps.js';

const MIB = 1024 * 1024;

describe('nvidia-smi --query-compute-apps, parsed', () => {
  it.each([
    [
      'one process',
      '4242, GPU-5f3c1e2a-0000-1111-2222-333344445555, 4096\n',
      [{ pid: 4242, gpuUuid: 'GPU-5f3c1e2a-0000-1111-2222-333344445555', usedBytes: 4096 * MIB }],
    ],
    ['nothing running', '', []],
    ['a message instead of rows', 'No running processes found\n', []],
    [
      'one process on two GPUs is two rows',
      '10, GPU-a, 100\n10, GPU-b, 200\n',
      [
        { pid: 10, gpuUuid: 'GPU-a', usedBytes: 100 * MIB },
        { pid: 10, gpuUuid: 'GPU-b', usedBytes: 200 * MIB },
      ],
    ],
    [
      'a memory nvidia-smi cannot tell is 0 bytes',
      '7, GPU-a, [N/A]\n8, MIG-b, [Not Supported]\n',
      [
        { pid: 7, gpuUuid: 'GPU-a', usedBytes: 0 },
        { pid: 8, gpuUuid: 'MIG-b', usedBytes: 0 },
      ],
    ],
    ['CRLF line ends and blank lines', '5, GPU-a, 1\r\n\r\n', [{ pid: 5, gpuUuid: 'GPU-a', usedBytes: MIB }]],
    [
      'a row that is not one (no pid, no uuid, extra cells)',
      'x, GPU-a, 1\n0, GPU-a, 1\n3, gpu0, 1\n4, GPU-a, 1, 2\n',
      [],
    ],
  ])('%s', (_name, csv, processes) => {
    expect(parseComputeApps(csv)).toEqual(processes);
  });
});
