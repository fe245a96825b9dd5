import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { apiError, loadKubeConfig } from './client-api.js';

const dir = mkdtempSync(join(tmpdir(), 'corral-kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KUBECONFIG = JSON.stringify({
  apiVersion: 'v1',
  kind: 'Config',
  clusters: [{ name: 'c', cluster: { server: 'https://k8s.example.com:6443' } }],
  users: [{ name: 'u', user: { token: 't' } }],
  contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
  'current-context': 'x',
});

describe('loadKubeConfig', () => {
  it('reads the file it is given', () => {
    const path = join(dir, 'config');
    writeFileSync(path, KUBECONFIG);
    const loaded = loadKubeConfig(path, {});
    expect(loaded.source).toBe('file');
    expect(loaded.server).toBe('https://k8s.example.com:6443');
  });

  it('a missing file is an error naming it', () => {
    expect(() => loadKubeConfig(join(dir, 'nope'), {})).toThrow(/no kubeconfig at .*nope/);
  });

  it('without a file: the in-cluster account where there is one, else ~/.kube/config, else an error', () => {
    const home = mkdtempSync(join(dir, 'home-'));
    expect(() => loadKubeConfig(undefined, { HOME: home })).toThrow(/no kubeconfig: not in a cluster/);
    const kube = join(home, '.kube');
    mkdirSync(kube, { recursive: true });
    writeFileSync(join(kube, 'config'), KUBECONFIG);
    const loaded = loadKubeConfig(undefined, { HOME: home });
    expect(loaded.source).toBe('home');
    // KUBERNETES_SERVICE_HOST alone (no mounted token here) is not a cluster.
    expect(loadKubeConfig(undefined, { HOME: home, KUBERNETES_SERVICE_HOST: '10.0.0.1' }).source).toBe(
      'home',
    );
  });
});

describe('apiError', () => {
  it('an answer keeps its status and the Status reason and message', () => {
    const status = { kind: 'Status', code: 404, reason: 'NotFound', message: 'pods "corral-w1" not found' };
    const error = apiError(
      new ApiException(404, 'Unknown API Status Code!', JSON.stringify(status), {}),
      'read',
    );
    expect(error).toMatchObject({ status: 404, reason: 'NotFound', unreachable: false });
    expect(error.message).toBe('read: pods "corral-w1" not found');
  });

  it('a 401 without a body says Unauthorized', () => {
    const error = apiError(new ApiException(401, 'Unauthorized', undefined, {}), 'list');
    expect(error).toMatchObject({ status: 401, unreachable: false, message: 'list: Unauthorized' });
  });

  it('no answer (refused, reset, timed out) is unreachable', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND']) {
      const cause = Object.assign(new Error(`connect ${code}`), { code });
      expect(apiError(cause, 'list')).toMatchObject({ status: undefined, unreachable: true });
    }
    expect(apiError(new Error('something else'), 'list').unreachable).toBe(false);
  });

  it('a watch refused with a status is an answer', () => {
    const error = apiError(Object.assign(new Error('Forbidden'), { statusCode: 403 }), 'watch');
    expect(error).toMatchObject({ status: 403, unreachable: false });
  });
});
