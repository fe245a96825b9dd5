import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { LABELS } from '../types.js';
import { type LocalState, parseState, StateDir } from './state-dir.js';

const NOW = 1_700_000_000_000;

const full: LocalState = {
  version: 1,
  workerId: 'w1',
  endpointId: 'e1',
  revision: 3,
  labels: { [LABELS.endpoint]: 'e1', team: 'a' },
  port: 40001,
  pid: 1234,
  startTime: '98765',
  createdAt: 10,
  startedAt: 11,
  gpuUuids: ['GPU-a'],
  exitCode: 1,
  message: 'exited with code 1',
};

describe('parseState', () => {
  it('reads back what was written', () => {
    expect(parseState(JSON.stringify(full), NOW)).toEqual(full);
  });

  it('fills what older files lack: the endpoint from its label, the start from now', () => {
    const {
      endpointId: _e,
      revision: _r,
      startTime: _s,
      createdAt: _c,
      startedAt: _t,
      gpuUuids: _g,
      ...rest
    } = full;
    expect(parseState(JSON.stringify({ ...rest, exitCode: undefined, message: undefined }), NOW)).toEqual({
      version: 1,
      workerId: 'w1',
      endpointId: 'e1',
      revision: 0,
      labels: full.labels,
      port: 40001,
      pid: 1234,
      createdAt: 0,
      startedAt: NOW,
      gpuUuids: [],
    });
  });

  it("reads a worker's cgroup and its suspended GPU memory; drops a cgroup that is not an absolute path of a known kind", () => {
    const cgroup = { kind: 'v2', path: '/sys/fs/cgroup/corral-x/w1' };
    const suspendedGpuBytes = { 'GPU-a': 40e9, 'GPU-b': -1, 'GPU-c': 'x' };
    expect(parseState(JSON.stringify({ ...full, cgroup, suspendedGpuBytes }), NOW)).toMatchObject({
      cgroup,
      suspendedGpuBytes: { 'GPU-a': 40e9 },
    });
    for (const bad of [{ kind: 'v3', path: '/x' }, { kind: 'v1', path: 'relative' }, 'v2']) {
      expect(parseState(JSON.stringify({ ...full, cgroup: bad }), NOW)).not.toHaveProperty('cgroup');
    }
  });

  it('keeps only string labels and gpu uuids', () => {
    const text = JSON.stringify({ ...full, labels: { a: 'x', b: 3 }, gpuUuids: ['GPU-a', 7] });
    expect(parseState(text, NOW)).toMatchObject({ labels: { a: 'x' }, gpuUuids: ['GPU-a'] });
  });

  it.each([
    ['not JSON', '{'],
    ['null', 'null'],
    ['another version', JSON.stringify({ ...full, version: 2 })],
    ['a worker id that is a path', JSON.stringify({ ...full, workerId: '../x' })],
    ['no pid', JSON.stringify({ ...full, pid: undefined })],
    ['a pid of 0 (signals would go to our own group)', JSON.stringify({ ...full, pid: 0 })],
    ['a fractional pid', JSON.stringify({ ...full, pid: 1.5 })],
    ['no port', JSON.stringify({ ...full, port: '80' })],
    ['no labels', JSON.stringify({ ...full, labels: null })],
  ])('refuses %s', (_name, text) => {
    expect(parseState(text, NOW)).toBeUndefined();
  });
});

describe('StateDir', () => {
  let root: string;
  let dir: StateDir;

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'corral-state-dir-'));
    dir = new StateDir(root);
    await dir.ensure();
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('writes state files that readStates finds, and names the files it cannot use', async () => {
    dir.writeState(full);
    dir.writeState({ ...full, workerId: 'w2', exitCode: undefined });
    await writeFile(path.join(root, 'workers', 'broken.json'), '{');
    await writeFile(path.join(root, 'workers', 'w1.json.77.tmp'), 'half a write');
    const read = await dir.readStates(NOW);
    expect(read.states.map((s) => s.workerId).sort()).toEqual(['w1', 'w2']);
    expect(read.unreadable).toEqual([{ file: 'broken.json' }]);
    expect(JSON.parse(await readFile(dir.statePath('w1'), 'utf8'))).toEqual(full);
  });

  it('throws when a state file cannot be written, leaving no temporary file behind', async () => {
    await mkdir(dir.statePath('w1'));
    expect(() => dir.writeState(full)).toThrow();
    expect(await readdir(path.join(root, 'workers'))).toEqual(['w1.json']);
  });

  it('reports a state file it cannot read', async () => {
    await mkdir(dir.statePath('w3'));
    const read = await dir.readStates(NOW);
    expect(read.unreadable).toEqual([
      { file: 'w3.json', error: expect.objectContaining({ code: 'EISDIR' }) },
    ]);
  });

  it('makes a directory per local volume, passes network volumes through, and deletes a worker whole', async () => {
    const spec = testWorkerSpec({
      image: 'ignored',
      workerId: 'w4',
      volumes: [
        { type: 'local', name: 'v', sizeGB: 1, mountPath: '/data' },
        { type: 'network', hostPath: '/srv/models', mountPath: '/models' },
      ],
    });
    const mounts = await dir.prepareVolumes(spec);
    const local = path.join(root, 'volumes', 'w4', '0');
    expect(mounts).toEqual([
      { mountPath: '/data', dir: local },
      { mountPath: '/models', dir: '/srv/models' },
    ]);
    expect(existsSync(local)).toBe(true);
    dir.writeState({ ...full, workerId: 'w4' });
    await writeFile(dir.logPath('w4'), 'hello\n');
    await dir.deleteWorker('w4');
    expect(existsSync(dir.statePath('w4'))).toBe(false);
    expect(existsSync(dir.logPath('w4'))).toBe(false);
    expect(existsSync(path.join(root, 'volumes', 'w4'))).toBe(false);
    await dir.deleteWorker('never-was');
  });

  it('deletes what it can before reporting what it cannot', async () => {
    await mkdir(dir.statePath('w5'));
    await writeFile(dir.logPath('w5'), 'hello\n');
    await expect(dir.deleteWorker('w5')).rejects.toThrow();
    expect(existsSync(dir.logPath('w5'))).toBe(false);
  });
});
