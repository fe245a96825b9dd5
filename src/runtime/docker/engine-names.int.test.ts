/**
 * DockerRuntime against the real engine with names no endpoint may store (issue 20, item 1) and an env that once
 * went into the create request's URL (item 4): the engine is never asked a path built from an unescaped name, a
 * redirect target on 127.0.0.1 receives nothing, the process goes on, and a worker with 12 envs of a 30 KB secret
 * starts and sees them.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../../../test/support/integration.js';
import { eventually, testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { dockerAvailable, ensureTestImage, removeLabelled } from '../../../test/support/test-image.js';
import { RuntimeError } from '../types.js';
import { DockerRuntime } from './docker-runtime.js';

const RUN_LABEL = 'corral.dev/test-run';

const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (or run scripts/provision.sh) so that `docker info` answers',
);

describe.runIf(withDocker)('DockerRuntime with hostile names and a large env (Docker engine)', () => {
  const run = randomUUID().slice(0, 8);
  const docker = new Docker();
  const runtime = new DockerRuntime({
    docker,
    logger: pino({ level: 'silent' }),
    namePrefix: `corral-names-${run}-`,
    requestGpuDevices: false,
  });
  const probed: string[] = [];
  let probe: Server;
  let port = 0;
  let image = '';

  beforeAll(async () => {
    probe = createServer((req, res) => {
      probed.push(`${req.method} ${req.url}`);
      res.end('{}');
    });
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    port = (probe.address() as AddressInfo).port;
    image = await ensureTestImage();
  }, 180_000);

  afterAll(async () => {
    await runtime.close();
    await removeLabelled(docker, `${RUN_LABEL}=${run}`);
    await new Promise((resolve) => probe.close(resolve));
  });

  it('asks the engine about no name but as one escaped segment: a bad name fails its call, and nothing else', async () => {
    const names = [
      'bars//node:1',
      '../../../etc/passwd',
      `../../../../127.0.0.1:${port}/ssrf-probe?x=`,
      `..%2F..%2F..%2F..%2F127.0.0.1:${port}/ssrf-probe?x=`,
    ];
    for (const name of names) {
      const inspected = await runtime.localImage(name).catch((error: unknown) => error);
      // Absent, or refused: never an image found elsewhere, and never a crash.
      if (inspected !== undefined) expect(inspected).toBeInstanceOf(RuntimeError);
      const prepared = await runtime.prepareImage({ image: name }).catch((error: unknown) => error);
      expect(prepared).toBeInstanceOf(RuntimeError);
    }
    // The engine's redirects (301 to the cleaned path) are not followed: the host:port a name chose hears nothing.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(probed).toEqual([]);
    // Still served: the test image is found under its name.
    expect(await runtime.localImage(image)).toMatchObject({ id: expect.stringMatching(/^sha256:/) });
  }, 60_000);

  it('starts a worker with 12 envs of one 30 KB secret, and the worker sees them', async () => {
    // A 30 KB secret of UTF-8 text outside ASCII: a query string escapes each of its bytes (3 characters for 1), so
    // that in the create request's URL 12 copies went past the engine's 1 MiB limit of a request head (431).
    const secret = '証明書'.repeat(3_333);
    expect(Buffer.byteLength(secret)).toBe(29_997);
    const envs = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`CORRAL_CERT_${i}`, secret]));
    const spec = testWorkerSpec(
      { image, workerId: `names${run}w1`, endpointId: `names${run}e` },
      { [RUN_LABEL]: run },
    );
    const worker = await runtime.create({ ...spec, env: { ...spec.env, ...envs } });
    const address = worker.address;
    if (!address) throw new Error('no address');
    const seen = await eventually(async () => {
      const response = await fetch(`http://${address.host}:${address.port}/env`, {
        signal: AbortSignal.timeout(2_000),
      });
      expect(response.status).toBe(200);
      return (await response.json()) as Record<string, unknown>;
    }, 30_000);
    for (let i = 0; i < 12; i += 1) expect(seen[`CORRAL_CERT_${i}`]).toBe(secret);
    await runtime.remove(spec.workerId, { graceSeconds: 1 });
  }, 120_000);
});
