/**
 * PodView's reconnect backoff on manual timers, against the API stand-in: while the API server cannot be reached the
 * watch is tried again after 100, 200, 400, 400 ms (doubling up to the maximum); once it answers, the view is live
 * again and the backoff starts over.
 */
import { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { KubeStandIn } from '../../../test/support/kube-stand-in.js';
import { ManualTimers } from '../../../test/support/manual-timers.js';
import { eventually } from '../../../test/support/runtime-contract.js';
import { clientApi } from './client-api.js';
import type { Pod } from './objects.js';
import { PodView } from './pod-view.js';

const NS = 'corral-workers';
let standIn: KubeStandIn;
let timers: ManualTimers;
let view: PodView;
const changes: [string | undefined, string | undefined][] = [];

beforeEach(async () => {
  standIn = new KubeStandIn();
  await standIn.start();
  const config = new KubeConfig();
  config.loadFromString(standIn.kubeconfig());
  timers = new ManualTimers();
  changes.length = 0;
  view = new PodView({
    api: clientApi(config),
    namespace: NS,
    labelSelector: 'app=a',
    logger: pino({ level: 'silent' }),
    timers,
    backoff: { initialMs: 100, maxMs: 400 },
    onChange: (before: Pod | undefined, after: Pod | undefined) =>
      changes.push([before?.metadata?.name, after?.metadata?.name]),
  });
});

afterEach(async () => {
  view.close();
  await standIn.close();
});

/** Fires the one pending retry after exactly `ms`, not before, and waits for its attempt to end. */
async function retryAfter(ms: number): Promise<void> {
  const before = view.stats.reconnects;
  await timers.advanceSettling(ms - 1);
  expect(view.stats.reconnects).toBe(before);
  await timers.advanceSettling(1);
  expect(view.stats.reconnects).toBe(before + 1);
}

it('reconnects with a doubling backoff while the API server is down, and resets it once back', async () => {
  await view.sync();
  expect(view.live).toBe(true);
  standIn.setDown(true);
  await eventually(() => expect(timers.count).toBe(1));
  expect(view.live).toBe(false);
  for (const ms of [100, 200, 400, 400]) {
    await retryAfter(ms);
    await eventually(() => expect(timers.count).toBe(1));
  }
  standIn.setDown(false);
  await retryAfter(400);
  await eventually(() => expect(view.live).toBe(true));
  // Down again: the backoff starts over from its first step.
  standIn.setDown(true);
  await eventually(() => expect(timers.count).toBe(1));
  await retryAfter(100);
});

it('applies what the watch says to the view: added, modified, deleted', async () => {
  await view.sync();
  const config = new KubeConfig();
  config.loadFromString(standIn.kubeconfig());
  const api = clientApi(config);
  await api.createPod(NS, { metadata: { name: 'p1', labels: { app: 'a' } }, spec: { containers: [] } });
  await eventually(() => expect(view.current().has('p1')).toBe(true));
  await api.deletePod(NS, 'p1', 0);
  await eventually(() => expect(view.current().has('p1')).toBe(false));
  expect(changes).toEqual([
    [undefined, 'p1'],
    ['p1', undefined],
  ]);
});
