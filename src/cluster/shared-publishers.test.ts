import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import type { LeaseClaim } from '../store/cluster/leases.js';
import type { ClusterSignals } from './cluster-signals.js';
import type { TermFence } from './elector.js';
import type { ControllerTerms } from './leadership.js';
import type { PublishedRoutes } from './route-publisher.js';
import { SharedPublishers, type SharedPublishersOptions } from './shared-publishers.js';
import {
  DEFAULT_SHARED_TIMING,
  type LeaderMessage,
  leaderMessageOf,
  leaderMessageText,
} from './shared-traffic.js';

const fence = (token: number): TermFence => ({ claim: () => ({ token }) as unknown as LeaseClaim });
const quiet = { info: () => {}, warn: () => {} };

/** Publishers over stand-ins that record what reaches them: the leader's messages, the controller's passes. */
function publishers() {
  const seen: string[] = [];
  let hear: ((message: LeaderMessage) => void) | undefined;
  const shared: SharedPublishersOptions['shared'] = {
    routesChannel: 'routes',
    tellLeaderQueued: async () => {},
    timing: DEFAULT_SHARED_TIMING,
    settledFor: () => null,
    onLeaderMessage: (listener) => {
      hear = listener;
      return () => {
        hear = undefined;
      };
    },
  };
  const signals = {
    start: async () => seen.push('signals read'),
    stop: () => seen.push('signals stopped'),
    remoteQueued: async (endpointId: string) => seen.push(`queued elsewhere: ${endpointId}`),
  } as unknown as ClusterSignals;
  const table: PublishedRoutes = {
    endpoints: () => [],
    routableWorkers: () => [],
    conditionOf: () => undefined,
    onChange: () => () => {},
    publications: 0,
  };
  const built = new SharedPublishers({
    shared,
    store: {
      gatewaySignals: { removeReplica: async () => {} },
    } as unknown as SharedPublishersOptions['store'],
    replicaId: 'r1',
    gateway: { loads: () => [], queueSignal: () => undefined, onQueued: () => () => {} },
    controllerRoutes: table,
    signals,
    poke: () => seen.push('pass'),
    timers: new ManualTimers(0),
    logger: quiet,
  });
  const inner: ControllerTerms = {
    start: () => {},
    lead: async () => {
      seen.push('controller leads');
    },
    stepDown: async () => {
      seen.push('controller steps down');
    },
  };
  return {
    built,
    terms: built.terms(inner),
    seen,
    send: (message: LeaderMessage) => hear?.(message),
    heard: () => hear,
  };
}

describe('SharedPublishers', () => {
  it("takes the leader's messages only during a term of its own: a pass asked for, a request queued elsewhere", async () => {
    const { terms, seen, send } = publishers();
    send({ kind: 'pass' });
    send({ kind: 'queued', endpointId: 'e1' });
    expect(seen).toEqual([]);
    await terms.lead(fence(4));
    send({ kind: 'pass' });
    send({ kind: 'queued', endpointId: 'e1' });
    await terms.stepDown();
    send({ kind: 'pass' });
    expect(seen).toEqual([
      'signals read',
      'controller leads',
      'pass',
      'queued elsewhere: e1',
      'signals stopped',
      'controller steps down',
    ]);
  });

  it("says its term's fencing token while it leads, and none after", async () => {
    const { built, terms } = publishers();
    expect(built.term()).toBeNull();
    await terms.lead(fence(9));
    expect(built.term()).toBe(9);
    await terms.stepDown();
    expect(built.term()).toBeNull();
  });

  it("stops listening to the leader's channel once closed", async () => {
    const { built, heard } = publishers();
    expect(heard()).toBeDefined();
    await built.close();
    expect(heard()).toBeUndefined();
  });
});

describe('leader messages', () => {
  it('read back as they were sent, and ask for a pass when they are not a queued request', () => {
    const queued: LeaderMessage = { kind: 'queued', endpointId: 'e1' };
    expect(leaderMessageOf(leaderMessageText(queued))).toEqual(queued);
    expect(leaderMessageOf(leaderMessageText({ kind: 'pass' }))).toEqual({ kind: 'pass' });
    expect(leaderMessageOf('poke')).toEqual({ kind: 'pass' });
  });
});
