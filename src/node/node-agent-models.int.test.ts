/**
 * The node agent's model calls through a real `corral node` process (built in dist/) against the hub stand-in: an
 * ensure fills the node's cache in the hub's layout with the owner's token from the body, its progress is readable
 * while the download runs, the node's models are listed, and a gated model the node already holds is refused to a
 * token without access. The owner's token never shows in the agent's log. With `--model-disk-budget-gb`, an ensure
 * evicts the least recently used model no endpoint names (as the ensure says them) and its answer names it; a model
 * is removed on request, and one another agent is fetching into the shared directory is not.
 */

import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HubStandIn, startHubStandIn } from '../../test/support/hub-stand-in.js';
import { type NodeAgentProcess, startNodeAgent } from '../../test/support/node-agent-process.js';
import { modelRepoDir } from '../domain/model-refs.js';
import type { CachedModel } from '../ports/model-cache.js';
import {
  bearer,
  NODE_AGENT_PATHS,
  type NodeCachedModel,
  type NodeModelEnsure,
  type NodeModelEnsured,
  type NodeModelProgress,
  type NodeModelRemoved,
} from '../runtime/kubernetes/node-agent-protocol.js';

const TOKEN = `agent-${randomUUID()}`;
const LARGE = 'corral-test/node-large';
const SHARED = 'corral-test/node-shared';
const STALE = 'corral-test/node-stale';
const GATED = 'corral-test/node-gated';
/** Three models of 1 MB for a budget of 2.5 MB: the third one's fetch evicts one. */
const KEPT = 'corral-test/budget-kept';
const OLDEST = 'corral-test/budget-oldest';
const NEWEST = 'corral-test/budget-newest';
const GRANTED = `hf_granted_${randomUUID().slice(0, 8)}`;
const NOT_GRANTED = 'hf_not_granted';

let hub: HubStandIn;
let agent: NodeAgentProcess;
let root: string;
let cacheDir: string;

const base = () => `http://127.0.0.1:${agent.port}`;

function ensure(
  name: string,
  token: string | null,
  overrides: Partial<NodeModelEnsure> = {},
  port = agent.port,
): Promise<Response> {
  const body: NodeModelEnsure = {
    model: { name, revision: 'main', allowPatterns: [] },
    token,
    hubUrl: hub.url,
    named: [],
    ...overrides,
  };
  return fetch(`http://127.0.0.1:${port}${NODE_AGENT_PATHS.ensureModel}`, {
    method: 'POST',
    headers: { ...bearer(TOKEN), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function progressOf(name: string): Promise<NodeModelProgress> {
  const query = new URLSearchParams({ name, revision: 'main' });
  const answer = await fetch(`${base()}${NODE_AGENT_PATHS.modelProgress}?${query}`, {
    headers: bearer(TOKEN),
  });
  expect(answer.status).toBe(200);
  return (await answer.json()) as NodeModelProgress;
}

beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'corral-node-models-'));
  cacheDir = path.join(root, 'hub');
  hub = await startHubStandIn({
    models: [
      { name: LARGE, weightBytes: 40_000_000, shards: 2 },
      { name: GATED, weightBytes: 1_000_000, access: { kind: 'gated', tokens: [GRANTED] } },
      { name: SHARED, weightBytes: 20_000_000 },
      { name: STALE, weightBytes: 1_000_000 },
      ...[KEPT, OLDEST, NEWEST].map((name) => ({ name, weightBytes: 1_000_000 })),
    ],
    tokens: [NOT_GRANTED],
  });
  // The agent's cgroup side is not used here: any directory read as a v2 hierarchy.
  agent = await startNodeAgent({ kind: 'v2', root }, TOKEN, {
    args: ['--model-cache-dir', cacheDir, '--hub-url', hub.url],
  });
});

afterAll(async () => {
  await agent?.stop();
  await hub?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("the node agent's model cache", () => {
  it('fetches a model into the node cache in the hub layout, its progress readable meanwhile, then lists it', async () => {
    hub.setBytesPerSecond(10_000_000);
    const answer = ensure(LARGE, null);
    let seen: NodeModelProgress['progress'] = null;
    for (let n = 0; n < 200 && !(seen && seen.bytesDone > 0); n++) {
      seen = (await progressOf(LARGE)).progress;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    hub.setBytesPerSecond(null);
    expect(seen).toMatchObject({ name: LARGE, revision: 'main' });
    expect(seen?.bytesDone).toBeGreaterThan(0);
    expect(seen?.bytesDone).toBeLessThan(seen?.bytesTotal ?? 0);
    const done = await answer;
    expect(done.status).toBe(200);
    const { model } = (await done.json()) as { model: CachedModel };
    const { commit } = await hub.describe(LARGE);
    expect(model).toMatchObject({ name: LARGE, revision: 'main', commit });
    expect(model.bytes).toBeGreaterThan(40_000_000);
    const repo = path.join(cacheDir, modelRepoDir(LARGE));
    // What the hub's client reads offline: refs/main holds the commit with no newline, the snapshot its files.
    expect(readFileSync(path.join(repo, 'refs', 'main'), 'utf8')).toBe(commit);
    expect(existsSync(path.join(repo, 'snapshots', commit, 'config.json'))).toBe(true);
    expect((await progressOf(LARGE)).progress).toBeNull();
    const listed = (await (
      await fetch(`${base()}${NODE_AGENT_PATHS.models}`, { headers: bearer(TOKEN) })
    ).json()) as CachedModel[];
    expect(listed).toContainEqual(expect.objectContaining({ name: LARGE, commit, repoDir: repo }));
  });

  it('refuses a gated model the node holds to an owner without access, and never logs the token', async () => {
    const granted = await ensure(GATED, GRANTED);
    expect(granted.status).toBe(200);
    expect(await granted.json()).toMatchObject({ model: { name: GATED } });
    for (const token of [NOT_GRANTED, null]) {
      const refused = await ensure(GATED, token);
      expect(refused.status).toBe(200);
      expect((await refused.json()) as NodeModelEnsured).toMatchObject({ refusal: { code: 'MODEL_GATED' } });
    }
    expect(agent.output()).toContain('downloading a model file into the cache');
    expect(agent.output()).not.toContain(GRANTED);
  });

  it('refuses an ensure naming another hub than its own, a bad model name, and a call without its token', async () => {
    const otherHub = await ensure(LARGE, null, { hubUrl: 'http://hub.example:1' });
    expect(otherHub.status).toBe(400);
    expect(await otherHub.json()).toMatchObject({
      reason: 'NODE_AGENT_BAD_REQUEST',
      message: expect.stringContaining(hub.url),
    });
    const badName = await ensure('../../etc', null);
    expect(badName.status).toBe(400);
    const unauthenticated = await fetch(`${base()}${NODE_AGENT_PATHS.models}`);
    expect(unauthenticated.status).toBe(401);
  });

  it('lets two agents sharing one cache directory fetch a model at once: each file comes once, both hold it', async () => {
    // Several kubelets on one machine (scripts/kube-cluster.sh) give their agents one hostPath.
    const second = await startNodeAgent({ kind: 'v2', root }, TOKEN, {
      args: ['--model-cache-dir', cacheDir, '--hub-url', hub.url],
    });
    try {
      const before = hub.cdnBytesSent();
      hub.setBytesPerSecond(20_000_000);
      const answers = await Promise.all([ensure(SHARED, null), ensure(SHARED, null, {}, second.port)]);
      hub.setBytesPerSecond(null);
      const models = await Promise.all(
        answers.map(async (a) => ((await a.json()) as { model: CachedModel }).model),
      );
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      expect(models[0]?.commit).toBe(models[1]?.commit);
      const weights = (await hub.describe(SHARED)).files.filter((f) => f.sha256 !== null);
      const weightBytes = weights.reduce((sum, f) => sum + f.size, 0);
      expect(hub.cdnBytesSent() - before).toBe(weightBytes);
      expect(existsSync(path.join(cacheDir, '.corral-locks', modelRepoDir(SHARED)))).toBe(false);
    } finally {
      await second.stop();
    }
  });

  it('takes over a lock its holder left when it was killed (its PID gone, or its own PID from before a restart)', async () => {
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    const lock = path.join(cacheDir, '.corral-locks', modelRepoDir(STALE));
    mkdirSync(path.dirname(lock), { recursive: true });
    for (const pid of [gone, agent.child.pid]) {
      writeFileSync(lock, String(pid));
      const answer = await ensure(STALE, null);
      expect(answer.status).toBe(200);
      expect(existsSync(lock)).toBe(false);
    }
  });

  it('evicts within its disk budget the least recently used model no endpoint names, and says so', async () => {
    const budgetDir = path.join(root, 'budget-hub');
    const budgeted = await startNodeAgent({ kind: 'v2', root }, TOKEN, {
      args: ['--model-cache-dir', budgetDir, '--hub-url', hub.url, '--model-disk-budget-gb', '0.0025'],
    });
    try {
      const answers: NodeModelEnsured[] = [];
      for (const name of [KEPT, OLDEST, NEWEST]) {
        // KEPT is named by an endpoint (so the ensures say), and the oldest: OLDEST is the one to go.
        const answer = await ensure(name, null, { named: [KEPT] }, budgeted.port);
        expect(answer.status).toBe(200);
        answers.push((await answer.json()) as NodeModelEnsured);
      }
      expect(answers.map((a) => ('evicted' in a ? a.evicted : a))).toEqual([[], [], [OLDEST]]);
      const listed = await call<NodeCachedModel[]>(budgeted.port, 'GET', NODE_AGENT_PATHS.models);
      expect(listed.map((m) => m.name).sort()).toEqual([KEPT, NEWEST]);
      expect(listed.every((m) => m.download === null)).toBe(true);
      expect(existsSync(path.join(budgetDir, modelRepoDir(OLDEST)))).toBe(false);
      expect(budgeted.output()).toContain('evicted a model no endpoint names');
    } finally {
      await budgeted.stop();
    }
  });

  it('removes a model on request, but not one another agent is fetching into the shared directory', async () => {
    const lock = path.join(cacheDir, '.corral-locks', modelRepoDir(STALE));
    // A live process other than this agent holds the model's lock: another agent fetching it.
    writeFileSync(lock, String(process.pid));
    try {
      expect(await call<NodeModelRemoved>(agent.port, 'DELETE', NODE_AGENT_PATHS.model(STALE))).toEqual({
        removal: 'downloading',
        held: true,
      });
    } finally {
      rmSync(lock, { force: true });
    }
    expect(await call<NodeModelRemoved>(agent.port, 'DELETE', NODE_AGENT_PATHS.model(STALE))).toEqual({
      removal: 'removed',
      held: false,
    });
    expect(existsSync(path.join(cacheDir, modelRepoDir(STALE)))).toBe(false);
    expect(await call<NodeModelRemoved>(agent.port, 'DELETE', NODE_AGENT_PATHS.model(STALE))).toEqual({
      removal: 'not_cached',
      held: false,
    });
  });
});

async function call<T>(port: number, method: string, path: string): Promise<T> {
  const answer = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: bearer(TOKEN) });
  expect(answer.status).toBe(200);
  return (await answer.json()) as T;
}
