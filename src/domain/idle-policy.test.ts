/**
 * The idle-policy rule: which policy an owner has, which step takes effect after how long without traffic, never a
 * raise, never below minWorkers, counted from creation without traffic, each step once per idle time.
 */
import { describe, expect, it } from 'vitest';
import {
  DAY_MS,
  type IdleEndpoint,
  type IdlePolicy,
  idleDecision,
  idleEventMessage,
  idlePolicyFor,
} from './idle-policy.js';

const RUNPOD: IdlePolicy = {
  steps: [
    { afterDays: 3, maxWorkers: 2 },
    { afterDays: 7, maxWorkers: 0 },
  ],
};
const T0 = Date.parse('2026-11-01T00:00:00.000Z');

function endpoint(over: Partial<IdleEndpoint> = {}): IdleEndpoint {
  return { minWorkers: 0, maxWorkers: 5, createdAt: T0, lastTrafficAt: null, appliedStep: null, ...over };
}

describe('idlePolicyFor', () => {
  const settings = {
    defaults: RUNPOD,
    owners: { lab: 'off' as const, ml: { steps: [{ afterDays: 1, maxWorkers: 1 }] } },
  };

  it("gives an owner its own policy, else the operator's default; off means none", () => {
    expect(idlePolicyFor('ml', settings)?.steps).toEqual([{ afterDays: 1, maxWorkers: 1 }]);
    expect(idlePolicyFor('anyone', settings)).toBe(RUNPOD);
    expect(idlePolicyFor('lab', settings)).toBeUndefined();
    expect(idlePolicyFor('anyone', { owners: {} })).toBeUndefined();
  });
});

describe('idleDecision', () => {
  it('changes nothing before the first step is due', () => {
    expect(idleDecision(endpoint({ lastTrafficAt: T0 }), RUNPOD, T0 + 3 * DAY_MS - 1)).toBeUndefined();
  });

  it('lowers maxWorkers to 2 after 3 days without traffic, and to 0 after 7', () => {
    const traffic = T0 + DAY_MS;
    const third = idleDecision(endpoint({ lastTrafficAt: traffic }), RUNPOD, traffic + 3 * DAY_MS);
    expect(third).toMatchObject({ index: 0, from: 5, to: 2, idleSince: traffic });
    const after = endpoint({
      lastTrafficAt: traffic,
      maxWorkers: 2,
      appliedStep: { index: 0, at: traffic + 3 * DAY_MS },
    });
    expect(idleDecision(after, RUNPOD, traffic + 6 * DAY_MS)).toBeUndefined();
    expect(idleDecision(after, RUNPOD, traffic + 7 * DAY_MS)).toMatchObject({ index: 1, from: 2, to: 0 });
  });

  it('counts an endpoint that never had traffic from its creation', () => {
    expect(idleDecision(endpoint(), RUNPOD, T0 + 3 * DAY_MS)).toMatchObject({ index: 0, idleSince: T0 });
  });

  it('goes straight to the latest step due when several are (no pass ran meanwhile)', () => {
    expect(idleDecision(endpoint(), RUNPOD, T0 + 30 * DAY_MS)).toMatchObject({ index: 1, from: 5, to: 0 });
  });

  it('never raises maxWorkers: a step above it takes effect and changes nothing', () => {
    expect(idleDecision(endpoint({ maxWorkers: 1 }), RUNPOD, T0 + 3 * DAY_MS)).toMatchObject({
      from: 1,
      to: 1,
    });
  });

  it('never lowers maxWorkers below minWorkers, and leaves minWorkers as it is', () => {
    const warm = endpoint({ minWorkers: 1, maxWorkers: 4 });
    expect(idleDecision(warm, RUNPOD, T0 + 8 * DAY_MS)).toMatchObject({ from: 4, to: 1 });
    expect(idleDecision(endpoint({ minWorkers: 3, maxWorkers: 3 }), RUNPOD, T0 + 8 * DAY_MS)).toMatchObject({
      to: 3,
    });
  });

  it('does not take a step again after the owner raised maxWorkers; a later step still comes', () => {
    const raised = endpoint({ maxWorkers: 5, appliedStep: { index: 0, at: T0 + 3 * DAY_MS } });
    expect(idleDecision(raised, RUNPOD, T0 + 4 * DAY_MS)).toBeUndefined();
    expect(idleDecision(raised, RUNPOD, T0 + 7 * DAY_MS)).toMatchObject({ index: 1, to: 0 });
  });

  it('starts a new idle time at traffic after a step: the steps come again, counted from that traffic', () => {
    const traffic = T0 + 10 * DAY_MS;
    const back = endpoint({
      maxWorkers: 3,
      lastTrafficAt: traffic,
      appliedStep: { index: 1, at: T0 + 7 * DAY_MS },
    });
    expect(idleDecision(back, RUNPOD, traffic + 2 * DAY_MS)).toBeUndefined();
    expect(idleDecision(back, RUNPOD, traffic + 3 * DAY_MS)).toMatchObject({ index: 0, from: 3, to: 2 });
  });

  it('takes fractions of a day', () => {
    const seconds: IdlePolicy = { steps: [{ afterDays: 2 / 86_400, maxWorkers: 0 }] };
    expect(idleDecision(endpoint(), seconds, T0 + 1999)).toBeUndefined();
    expect(idleDecision(endpoint(), seconds, T0 + 2000)).toMatchObject({ to: 0 });
  });
});

describe('idleEventMessage', () => {
  it('says the step, from what to what, since when, and the command that raises it again', () => {
    const decision = idleDecision(endpoint(), RUNPOD, T0 + 3 * DAY_MS);
    expect(decision && idleEventMessage('ep-1', decision)).toBe(
      'idle policy: no traffic since 2026-11-01T00:00:00.000Z (3 days or more), maxWorkers lowered from 5 to 2 ' +
        '(step 1: 2 after 3 days); traffic does not raise it again: corral endpoints update ep-1 --max-workers 5',
    );
  });
});
