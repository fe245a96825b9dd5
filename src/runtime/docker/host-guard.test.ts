/** When Corral may change the host for the sandbox: only as root, next to the engine. */
import { describe, expect, it } from 'vitest';
import { hostGuardUnable } from './host-guard.js';

describe('hostGuardUnable', () => {
  it.each<[string, number | undefined, string | undefined]>([
    ['/var/run/docker.sock', 0, undefined],
    ['/var/run/docker.sock', 1000, 'corral runs as a user other than root'],
    ['/var/run/docker.sock', undefined, 'corral runs as a user other than root'],
    ['http://10.0.0.5:2375', 0, 'the Docker engine is at http://10.0.0.5:2375, not on this machine'],
  ])('engine %s, uid %s: %s', (engineAddress, uid, why) => {
    expect(hostGuardUnable({ engineAddress, uid })).toBe(why);
  });
});
