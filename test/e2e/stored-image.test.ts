/**
 * A stored endpoint whose image no longer reads as a reference (issue 20, item 1), end to end: `corral serve` on
 * the Docker runtime (through an engine proxy the test owns) with such a row written into its database by hand.
 * The server starts, marks that endpoint failed with the reason, serves the other one, never exits, and the
 * host:port the name climbs to (a server of the test's on 127.0.0.1) receives nothing. And `corral apply` with such
 * an image gets the API's 400 naming image.image.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { EngineProxy } from '../support/engine-proxy.js';
import { integrationAvailable } from '../support/integration.js';
import { printServeLog, runCorral, type ServeProcess, startServe } from '../support/process.js';
import {
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../support/test-image.js';
import { closeServer } from '../support/test-servers.js';

const KEY = 'e2e-operator-key-0123456789';
const PREFIX = '/gpu-instance/openapi/v1';
const RUN = randomUUID().slice(0, 8);
const RUN_LABEL: [string, string] = ['corral-test-run', `stored-image-${RUN}`];
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

describe.runIf(withDocker)(
  'a stored endpoint whose image is not a reference, with corral serve as a process',
  () => {
    let dataDir: string;
    let image: string;
    let server: ServeProcess | undefined;
    let engine: EngineProxy;
    let probe: Server;
    const probed: string[] = [];
    beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

    const serve = () =>
      startServe(['--runtime', 'docker', '--gpus', 'h100-80g:4'], {
        CORRAL_DATA_DIR: dataDir,
        CORRAL_API_KEY: KEY,
        DOCKER_HOST: engine.dockerHost,
      });
    const call = async (path: string, body?: unknown) => {
      if (!server) throw new Error('no server');
      const response = await fetch(`${server.apiUrl}${PREFIX}/${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as any };
    };

    beforeAll(async () => {
      image = await ensureTestImage();
      dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-stored-image-'));
      engine = new EngineProxy({ socketPath: join(tmpdir(), `corral-stored-${RUN}.sock`), label: RUN_LABEL });
      await engine.start();
      probe = createServer((req, res) => {
        probed.push(`${req.method} ${req.url}`);
        res.end('{}');
      });
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    }, 180_000);

    afterAll(async () => {
      await server?.stop();
      await engine?.stop();
      if (server) removeInstallationResources(server.installationId);
      const hidden = `${RUN_LABEL[0]}=${RUN_LABEL[1]}`;
      const left = execFileSync('docker', ['ps', '-a', '-q', '--filter', `label=${hidden}`], {
        encoding: 'utf8',
      })
        .split('\n')
        .filter((line) => line !== '');
      if (left.length > 0) execFileSync('docker', ['rm', '-f', '-v', ...left], { stdio: 'ignore' });
      await closeServer(probe);
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('starts, fails that endpoint with the reason, serves the other, and sends nothing to the host in the name', async () => {
      server = await serve();
      const endpoint = (name: string) => ({ endpoint: { ...testWorkerEndpoint(image), name } });
      const good = await call('endpoint/create', endpoint(`good-${RUN}`));
      expect(good.status, JSON.stringify(good.body)).toBe(200);
      const bad = await call('endpoint/create', endpoint(`bad-${RUN}`));
      expect(bad.status, JSON.stringify(bad.body)).toBe(200);
      await server.stop();
      server = undefined;

      // As a row from before references were checked, or one edited by hand: the image climbs to the probe's port.
      const name = `../../../../127.0.0.1:${(probe.address() as AddressInfo).port}/ssrf-probe?x=`;
      const db = new Database(join(dataDir, 'corral.db'));
      const row = db.prepare('select spec from endpoints where id = ?').get(bad.body.id) as { spec: string };
      const spec = JSON.parse(row.spec) as { image: { ref: string } };
      spec.image.ref = name;
      db.prepare('update endpoints set spec = ?, version = version + 1 where id = ?').run(
        JSON.stringify(spec),
        bad.body.id,
      );
      db.close();

      server = await serve();
      const started = server;
      const failed = await vi.waitFor(
        async () => {
          const { body } = await call(`endpoint?id=${bad.body.id}`);
          expect(body.endpoint.state).toMatchObject({ state: 'failed', error: 'IMAGE_PULL_FAILED' });
          return body.endpoint.state;
        },
        { timeout: 60_000, interval: 250 },
      );
      expect(failed.message).toContain(`image ${JSON.stringify(name)} is not an image reference`);
      // The other endpoint serves through the gateway.
      const { body: goodBody } = await call(`endpoint?id=${good.body.id}`);
      await vi.waitFor(
        async () => {
          const response = await fetch(`${started.gatewayUrl}/e/${goodBody.endpoint.appName}/health`, {
            headers: { authorization: `Bearer ${KEY}` },
            signal: AbortSignal.timeout(10_000),
          });
          expect(response.status).toBe(200);
        },
        { timeout: 90_000, interval: 500 },
      );
      // Several passes later (retries of the failed endpoint included) the process still runs.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(started.child.exitCode).toBeNull();
      expect((await fetch(`${started.apiUrl}/healthz`)).status).toBe(200);
      expect(probed).toEqual([]);
      // Listed with the others, as any failed endpoint is.
      const listed = await call('endpoints');
      expect(listed.body.endpoints.map((e: any) => e.id).sort()).toEqual([bad.body.id, good.body.id].sort());
    }, 240_000);

    it('corral apply goes through the same check: a 400 naming image.image, nothing stored', async () => {
      if (!server) throw new Error('no server');
      const before = (await call('endpoints')).body.total as number;
      const spec = JSON.stringify({
        ...testWorkerEndpoint(image),
        name: `cli-${RUN}`,
        image: { image: 'bars//node:1' },
      });
      const applied = await runCorral(
        ['apply', '-f', '-', '--api-url', server.apiUrl],
        { CORRAL_API_KEY: KEY },
        spec,
      );
      expect(applied.code).not.toBe(0);
      expect(applied.stderr).toContain('image.image');
      expect(applied.stderr).toContain('a path component is empty');
      expect((await call('endpoints')).body.total).toBe(before);
      expect(server.child.exitCode).toBeNull();
    }, 60_000);
  },
);
