import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseGpuBytes, SuspendRecords } from './suspend-records.js';

describe('parseGpuBytes', () => {
  it('keeps the byte counts that are numbers of zero or more, and nothing else', () => {
    expect(parseGpuBytes('{"gpuBytes":{"GPU-a":40000000000,"GPU-b":-1,"GPU-c":"x"}}')).toEqual({
      'GPU-a': 4e10,
    });
    expect(parseGpuBytes('not json')).toBeUndefined();
    expect(parseGpuBytes('{"other":1}')).toBeUndefined();
    expect(parseGpuBytes('null')).toBeUndefined();
  });
});

describe('SuspendRecords', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'corral-suspend-records-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes, reads back and deletes one record per worker; ids that are not file names are ignored', async () => {
    const records = new SuspendRecords(path.join(dir, 'suspended'));
    expect(records.read('w1')).toBeUndefined();
    records.write('w1', { 'GPU-a': 4e10 });
    records.write('../escape', { 'GPU-a': 1 });
    expect(records.read('w1')).toEqual({ 'GPU-a': 4e10 });
    expect(records.read('../escape')).toBeUndefined();
    expect(await readdir(path.join(dir, 'suspended'))).toEqual(['w1.json']);
    records.delete('w1');
    records.delete('w1');
    expect(records.read('w1')).toBeUndefined();
  });
});
