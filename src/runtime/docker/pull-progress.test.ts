import { describe, expect, it } from 'vitest';
import { type PullMessage, PullProgressTracker, pullError } from './pull-progress.js';

function run(messages: PullMessage[]) {
  const tracker = new PullProgressTracker('app:1');
  const reported = messages.map((message) => tracker.update(message));
  return { tracker, reported };
}

describe('PullProgressTracker', () => {
  it('reports bytes downloaded over bytes known, scaled by the layers not yet sized', () => {
    const { reported } = run([
      { status: 'Pulling from library/app', id: '1' },
      { status: 'Pulling fs layer', id: 'a' },
      { status: 'Pulling fs layer', id: 'b' },
      { status: 'Downloading', id: 'a', progressDetail: { current: 50_000_000, total: 100_000_000 } },
    ]);
    expect(reported.at(-1)).toEqual({ percent: 25, message: 'pulling app:1: 25% (50/100 MB)' });
  });

  it('climbs to 100 when every layer is done, and never goes backwards', () => {
    const { reported, tracker } = run([
      { status: 'Pulling fs layer', id: 'a' },
      { status: 'Pulling fs layer', id: 'b' },
      { status: 'Downloading', id: 'a', progressDetail: { current: 90e6, total: 100e6 } },
      { status: 'Downloading', id: 'b', progressDetail: { current: 1e6, total: 1000e6 } },
      { status: 'Download complete', id: 'a' },
      { status: 'Downloading', id: 'b', progressDetail: { current: 1000e6, total: 1000e6 } },
      { status: 'Extracting', id: 'a', progressDetail: { current: 10, total: 100 } },
      { status: 'Pull complete', id: 'a' },
      { status: 'Pull complete', id: 'b' },
      { status: 'Digest: sha256:abc' },
      { status: 'Status: Downloaded newer image for app:1' },
    ]);
    const percents = reported.filter((p) => p !== undefined).map((p) => p?.percent ?? 0);
    expect(percents).toEqual([...percents].sort((x, y) => x - y));
    expect(tracker.current()).toEqual({ percent: 100, message: 'pulling app:1: 100% (1100/1100 MB)' });
  });

  it('layers already present count as done', () => {
    const { tracker } = run([
      { status: 'Already exists', id: 'a' },
      { status: 'Pulling fs layer', id: 'b' },
      { status: 'Downloading', id: 'b', progressDetail: { current: 3_400_000, total: 11_300_000 } },
    ]);
    expect(tracker.current()).toEqual({ percent: 30, message: 'pulling app:1: 30% (3.4/11 MB)' });
  });

  it('without sizes, no percent', () => {
    const { tracker } = run([
      { status: 'Pulling fs layer', id: 'a' },
      { status: 'Waiting', id: 'a' },
    ]);
    expect(tracker.current()).toEqual({ message: 'pulling app:1 (0/1 layers)' });
  });

  it('a pull of layers all present: 100% without sizes', () => {
    const { tracker } = run([
      { status: 'Already exists', id: 'a' },
      { status: 'Digest: sha256:abc' },
      { status: 'Status: Downloaded newer image for app:1' },
    ]);
    expect(tracker.current()).toEqual({ percent: 100, message: 'pulling app:1: 100%' });
  });

  it('reports only changes', () => {
    const { reported } = run([
      { status: 'Pulling fs layer', id: 'a' },
      { status: 'Waiting', id: 'a' },
      { status: 'Downloading', id: 'a', progressDetail: { current: 10, total: 1000 } },
      { status: 'Downloading', id: 'a', progressDetail: { current: 11, total: 1000 } },
    ]);
    expect(reported.map((p) => p?.percent)).toEqual([undefined, undefined, 1, undefined]);
    expect(reported[1]).toBeUndefined();
  });
});

describe('pullError', () => {
  it.each([
    [{ error: 'manifest unknown' }, 'manifest unknown'],
    [{ errorDetail: { message: 'unauthorized' } }, 'unauthorized'],
    [{ status: 'Downloading' }, undefined],
  ])('%j -> %j', (message, error) => {
    expect(pullError(message)).toBe(error);
  });
});
