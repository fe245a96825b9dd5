import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type KubeletDriver,
  type PodQos,
  placeInPodCgroup,
  removeTestHierarchy,
  testPodHierarchy,
} from '../../test/support/pod-cgroups.js';
import { bearer, NODE_AGENT_PATHS, type NodeAgentStatus } from '../runtime/kubernetes/node-agent-protocol.js';
import { NodeAgentServer } from './agent-server.js';
import type { PodHierarchy } from './pod-cgroups.js';
import { PodTiers } from './pod-tiers.js';

const TOKEN = 'test-agent-token-0123456789';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function readCount(file: string): number {
  try {
    return Number(readFileSync(file, 'utf8').trim());
  } catch {
    return 0;
  }
}

/** Whether the counter moves: within 3 s where it should (a loaded machine schedules late), else over 500 ms. */
async function moving(file: string, expected: boolean): Promise<boolean> {
  const before = readCount(file);
  const end = Date.now() + (expected ? 3_000 : 500);
  for (;;) {
    await sleep(50);
    const moved = readCount(file) !== before;
    if ((expected && moved) || Date.now() >= end) return moved;
  }
}

const cases: { kind: 'v2' | 'v1'; driver: KubeletDriver; qos: PodQos }[] = [
  { kind: 'v2', driver: 'systemd', qos: 'burstable' },
  { kind: 'v2', driver: 'cgroupfs', qos: 'guaranteed' },
  { kind: 'v1', driver: 'cgroupfs', qos: 'besteffort' },
  { kind: 'v1', driver: 'systemd', qos: 'guaranteed' },
];

describe.each(['v2', 'v1'] as const)('the node agent on cgroup %s of this machine', (kind) => {
  const found = testPodHierarchy(kind);
  const skip = 'skip' in found ? found.skip : undefined;
  let hierarchy: PodHierarchy;
  let server: NodeAgentServer;
  let base: string;
  let dir: string;
  const children: ChildProcess[] = [];

  /** A process that counts into a file every 20 ms, in a pod cgroup laid out as the kubelet lays it out. */
  function startPod(driver: KubeletDriver, qos: PodQos): { uid: string; counter: string } {
    const uid = randomUUID();
    const counter = path.join(dir, `${uid}.count`);
    const child = spawn(
      '/bin/sh',
      ['-c', `i=0; while :; do i=$((i+1)); echo $i > ${counter}; sleep 0.02; done`],
      {
        stdio: 'ignore',
      },
    );
    children.push(child);
    placeInPodCgroup(hierarchy, { driver, qos, uid }, child.pid ?? 0);
    return { uid, counter };
  }

  const call = (method: string, pathname: string, token = TOKEN) =>
    fetch(`${base}${pathname}`, { method, headers: bearer(token) });

  beforeAll(async () => {
    if (skip !== undefined) return;
    hierarchy = found as PodHierarchy;
    dir = mkdtempSync(path.join(os.tmpdir(), 'corral-agent-'));
    const logger = pino({ level: 'silent' });
    server = new NodeAgentServer({
      tiers: new PodTiers({ hierarchy, clock: Date.now, logger }),
      token: TOKEN,
      logger,
    });
    const address = await server.listen('127.0.0.1', 0);
    base = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    if (skip !== undefined) return;
    await server.close();
    for (const child of children) child.kill('SIGKILL');
    await removeTestHierarchy(hierarchy);
    rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(skip !== undefined).each(cases.filter((c) => c.kind === kind))(
    'freezes a $driver $qos pod over HTTP (it stops counting), says so, and thaws it (it counts again)',
    async ({ driver, qos }) => {
      const pod = startPod(driver, qos);
      expect(await moving(pod.counter, true)).toBe(true);

      const frozen = await call('POST', NODE_AGENT_PATHS.move(pod.uid, 'freeze'));
      expect(frozen.status).toBe(200);
      expect(await frozen.json()).toMatchObject({ uid: pod.uid, tier: 'frozen' });
      expect(await moving(pod.counter, false)).toBe(false);
      expect(await (await call('GET', NODE_AGENT_PATHS.pod(pod.uid))).json()).toMatchObject({
        tier: 'frozen',
      });
      const status = (await (await call('GET', NODE_AGENT_PATHS.status)).json()) as NodeAgentStatus;
      expect(status).toMatchObject({ cgroup: kind, suspend: { available: false } });
      expect(status.held).toContainEqual(expect.objectContaining({ uid: pod.uid, tier: 'frozen' }));

      const thawed = await call('POST', NODE_AGENT_PATHS.move(pod.uid, 'thaw'));
      expect(await thawed.json()).toMatchObject({ uid: pod.uid, tier: 'running' });
      expect(await moving(pod.counter, true)).toBe(true);
      const after = (await (await call('GET', NODE_AGENT_PATHS.status)).json()) as NodeAgentStatus;
      expect(after.held.map((h) => h.uid)).not.toContain(pod.uid);
    },
  );

  it.skipIf(skip !== undefined)('refuses a wrong or missing token, and the pod keeps running', async () => {
    const pod = startPod('cgroupfs', 'burstable');
    const wrong = await call('POST', NODE_AGENT_PATHS.move(pod.uid, 'freeze'), 'not-the-token');
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ reason: 'NODE_AGENT_UNAUTHENTICATED' });
    const none = await fetch(`${base}${NODE_AGENT_PATHS.move(pod.uid, 'freeze')}`, { method: 'POST' });
    expect(none.status).toBe(401);
    expect((await fetch(`${base}${NODE_AGENT_PATHS.status}`)).status).toBe(401);
    expect(await moving(pod.counter, true)).toBe(true);
  });

  it.skipIf(skip !== undefined)('answers 404 for a pod that has no cgroup on this node', async () => {
    const answer = await call('POST', NODE_AGENT_PATHS.move(randomUUID(), 'freeze'));
    expect(answer.status).toBe(404);
    expect(await answer.json()).toMatchObject({ reason: 'NODE_AGENT_POD_NOT_FOUND' });
    const traversal = await call('GET', NODE_AGENT_PATHS.pod('../../..'));
    expect(traversal.status).toBe(404);
  });

  it.skipIf(skip !== undefined)(
    'refuses a suspend where the node has no GPU checkpointer, naming why',
    async () => {
      const pod = startPod('systemd', 'besteffort');
      const answer = await call('POST', `${NODE_AGENT_PATHS.move(pod.uid, 'suspend')}?deadlineMs=1000`);
      expect(answer.status).toBe(503);
      expect(await answer.json()).toMatchObject({
        reason: 'NODE_AGENT_SUSPEND_UNAVAILABLE',
        message: 'no GPU checkpoint support built',
      });
      expect(await moving(pod.counter, true)).toBe(true);
    },
  );
});
