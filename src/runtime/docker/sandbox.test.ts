/** The sandbox's HostConfig fields and the worker network, as tables. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SANDBOX, type WorkerSandbox } from '../../config/config.js';
import { bridgeName, ISOLATION_LABEL, sandboxHostConfig, workerNetwork } from './sandbox.js';

const sandbox = (overrides: Partial<WorkerSandbox> = {}): WorkerSandbox => ({
  ...DEFAULT_SANDBOX,
  ...overrides,
});

describe('sandboxHostConfig', () => {
  it('drops every capability but the allowed ones, forbids new privileges, limits pids and rotates logs', () => {
    expect(sandboxHostConfig(sandbox(), 'corral-owner-a-1234')).toEqual({
      CapDrop: ['ALL'],
      CapAdd: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETGID', 'SETUID', 'KILL', 'NET_BIND_SERVICE'],
      SecurityOpt: ['no-new-privileges:true'],
      PidsLimit: 4096,
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
      NetworkMode: 'corral-owner-a-1234',
    });
  });

  it.each([
    ['NET_RAW'],
    ['MKNOD'],
    ['SYS_ADMIN'],
    ['SYS_PTRACE'],
    ['SYS_CHROOT'],
    ['SETFCAP'],
    ['AUDIT_WRITE'],
  ])('keeps no %s by default', (capability) => {
    expect(sandboxHostConfig(sandbox(), undefined).CapAdd).not.toContain(capability);
  });

  it.each<[string, Partial<WorkerSandbox>, Record<string, unknown>]>([
    ['capAdd from the config', { capAdd: ['SYS_PTRACE'] }, { CapAdd: ['SYS_PTRACE'], CapDrop: ['ALL'] }],
    [
      'larger logs',
      { log: { maxSizeMB: 100, maxFiles: 5 } },
      { LogConfig: { Type: 'json-file', Config: { 'max-size': '100m', 'max-file': '5' } } },
    ],
  ])('%s', (_what, overrides, expected) => {
    expect(sandboxHostConfig(sandbox(overrides), undefined)).toMatchObject(expected);
  });

  it('pidsLimit 0: no limit (the engine is not sent one)', () => {
    expect('PidsLimit' in sandboxHostConfig(sandbox({ pidsLimit: 0 }), undefined)).toBe(false);
  });

  it("without a network of its own the worker stays on Docker's default bridge", () => {
    expect('NetworkMode' in sandboxHostConfig(sandbox(), undefined)).toBe(false);
  });
});

describe('workerNetwork', () => {
  const a1 = { ownerId: 'alice', endpointId: 'ep1' };
  const a2 = { ownerId: 'alice', endpointId: 'ep2' };
  const b1 = { ownerId: 'bob', endpointId: 'ep3' };
  const name = (spec: typeof a1, isolation: WorkerSandbox['networkIsolation']) =>
    workerNetwork(spec, { networkIsolation: isolation }, 'corral-')?.Name;

  it('owner: one network per owner, shared by its endpoints, apart from every other owner', () => {
    expect(name(a1, 'owner')).toBe(name(a2, 'owner'));
    expect(name(a1, 'owner')).not.toBe(name(b1, 'owner'));
    expect(name(a1, 'owner')).toMatch(/^corral-owner-alice-[0-9a-f]{8}$/);
  });

  it('endpoint: one network per endpoint', () => {
    expect(name(a1, 'endpoint')).not.toBe(name(a2, 'endpoint'));
    expect(name(a1, 'endpoint')).toMatch(/^corral-endpoint-ep1-[0-9a-f]{8}$/);
  });

  it("none: no network of its own (Docker's default bridge)", () => {
    expect(workerNetwork(a1, { networkIsolation: 'none' }, 'corral-')).toBeUndefined();
  });

  it.each([
    ['Team A/x', /^corral-owner-team-a-x-[0-9a-f]{8}$/],
    ['..', /^corral-owner-x-[0-9a-f]{8}$/],
    ['a'.repeat(100), /^corral-owner-a{32}-[0-9a-f]{8}$/],
  ])('owner id %j gives a valid Docker network name', (ownerId, pattern) => {
    expect(name({ ownerId, endpointId: 'e' }, 'owner')).toMatch(pattern);
  });

  it('two owner ids that slug alike still get two networks', () => {
    expect(name({ ownerId: 'Team A', endpointId: 'e' }, 'owner')).not.toBe(
      name({ ownerId: 'team-a', endpointId: 'e' }, 'owner'),
    );
  });

  it('is labelled as Corral’s, with no traffic between its containers and a crl bridge', () => {
    const network = workerNetwork(a1, { networkIsolation: 'owner' }, 'corral-');
    expect(network).toMatchObject({
      Driver: 'bridge',
      Internal: false,
      Labels: { 'corral.dev/managed': 'true', 'corral.dev/owner': 'alice', [ISOLATION_LABEL]: 'owner' },
      Options: {
        'com.docker.network.bridge.enable_icc': 'false',
        'com.docker.network.bridge.name': bridgeName(network?.Name ?? ''),
      },
    });
    expect(bridgeName(network?.Name ?? '')).toMatch(/^crl[0-9a-f]{12}$/);
    expect(bridgeName(network?.Name ?? '').length).toBeLessThanOrEqual(15);
  });
});
