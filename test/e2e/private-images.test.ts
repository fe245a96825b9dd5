/**
 * Private images stay private (issue 10, item 4), end to end: a registry of Debian's `docker-registry` package with
 * htpasswd auth on 127.0.0.1, owner A's private image pushed to it (so present on the engine), and `corral serve`
 * on Docker. A runs it with its credentials; B, with none, with wrong ones or through a local alias, is refused
 * with the reason; B's endpoint accepted while the registry was down fails its worker start once the registry
 * answers; the registry's access log shows the manifest checks (HEAD, no pull).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, runCorral, type ServeProcess, startServe } from '../support/process.js';
import { dockerAvailable, ensureTestImage, removeInstallationResources } from '../support/test-image.js';
import { commandExists, REGISTRY_BIN, type TestRegistry, testRegistry } from '../support/test-registry.js';

const KEY = 'e2e-private-images-operator-key-0123';
const withRegistry =
  integrationAvailable('Docker', dockerAvailable(), 'start dockerd (scripts/provision.sh does)') &&
  integrationAvailable(
    'docker-registry',
    existsSync(REGISTRY_BIN) && commandExists('htpasswd'),
    `${REGISTRY_BIN} or htpasswd is missing: apt-get install -y docker-registry apache2-utils (scripts/provision.sh does)`,
  );

const call = callApi;

const endpointBody = (image: string, authId = '', workerConfig = { minNum: 1, maxNum: 1, gpuNum: 1 }) => ({
  endpoint: {
    image: { image, authId },
    ports: [{ port: 8000 }],
    workerConfig,
    healthy: { path: '/health' },
    products: [{ id: 'h100-80g' }],
  },
});

describe.runIf(withRegistry)(
  'private images on a registry with htpasswd auth, with corral serve on Docker',
  () => {
    const run = Math.random().toString(36).slice(2, 8);
    const alice = `alice-${run}`;
    const bob = `bob-${run}`;
    let dir: string;
    let registry: TestRegistry;
    let image: string;
    let alias: string;
    let server: ServeProcess;
    let aliceKey: string;
    let bobKey: string;
    const docker = (args: string[], input?: string) =>
      execFileSync('docker', args, {
        encoding: 'utf8',
        env: { ...process.env, DOCKER_CONFIG: join(dir, 'docker-config') },
        ...(input === undefined ? {} : { input }),
      });
    beforeEach(({ onTestFailed }) =>
      onTestFailed(() => {
        printServeLog(server);
        process.stderr.write(`--- docker-registry ---\n${registry?.log.slice(-4000)}\n`);
      }),
    );

    beforeAll(async () => {
      const base = await ensureTestImage();
      dir = mkdtempSync(join(tmpdir(), 'corral-e2e-private-images-'));
      mkdirSync(join(dir, 'docker-config'));
      writeFileSync(join(dir, 'htpasswd'), execFileSync('htpasswd', ['-Bbn', 'alice', 'alice-password']));
      registry = await testRegistry(dir, { htpasswd: join(dir, 'htpasswd') });
      const { address } = registry;
      await registry.start();

      // A's private image: the test worker with a label of this run (a new image id, so the test worker image itself
      // stays local-only), pushed with A's login; the push leaves it present on the engine with its RepoDigest.
      image = `${address}/team-a/worker:${run}`;
      alias = `innocent-alias-${run}:latest`;
      docker(['build', '-q', '-t', image, '-'], `FROM ${base}\nLABEL corral.test.private=${run}\n`);
      docker(['login', address, '-u', 'alice', '--password-stdin'], 'alice-password');
      docker(['push', '-q', image]);
      docker(['logout', address]);
      docker(['tag', image, alias]);

      // The registry is on loopback: only a listed one may be pulled from (docs/security.md, Registries).
      writeFileSync(
        join(dir, 'corral.yaml'),
        `controller: { reconcileIntervalMs: 200 }\nregistries: { allowPrivate: ["${registry.address}"] }\n`,
      );
      const env = { CORRAL_DATA_DIR: join(dir, 'data'), CORRAL_API_KEY: KEY };
      server = await startServe(
        ['--runtime', 'docker', '--gpus', 'h100-80g:4', '--config', join(dir, 'corral.yaml')],
        env,
      );
      const keyFor = async (owner: string) => {
        const created = await runCorral(['keys', 'create', '--owner', owner, '--name', owner], env);
        expect(created.code, created.stderr).toBe(0);
        return created.stdout.trim();
      };
      aliceKey = await keyFor(alice);
      bobKey = await keyFor(bob);
    }, 180_000);

    afterAll(async () => {
      await server?.stop();
      if (server) removeInstallationResources(server.installationId);
      for (const owner of [alice, bob]) {
        const ids = execFileSync('docker', ['ps', '-aq', '--filter', `label=corral.dev/owner=${owner}`], {
          encoding: 'utf8',
        });
        for (const id of ids.split('\n').filter(Boolean)) execFileSync('docker', ['rm', '-f', '-v', id]);
      }
      for (const tag of [image, alias]) {
        if (tag) execFileSync('docker', ['rmi', '-f', tag], { stdio: 'ignore' });
      }
      await registry?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('A runs its private image with its own credentials and is served through the gateway; the check was a manifest HEAD', async () => {
      const saved = await call(server, aliceKey, 'repository/auth/save', {
        name: 'team-a',
        username: 'alice',
        password: 'alice-password',
      });
      const created = await call(server, aliceKey, 'endpoint/create', endpointBody(image, saved.body.id));
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const { body } = await call(server, aliceKey, `endpoint?id=${created.body.id}`);
      const appName = body.endpoint.appName as string;
      // The key is A's own: the gateway asks for it once endpoint URLs need a key (issue 10, item 2).
      const answer = await vi.waitFor(
        async () => {
          const response = await fetch(`${server.gatewayUrl}/e/${appName}/health`, {
            headers: { authorization: `Bearer ${aliceKey}` },
          });
          expect(response.status).toBe(200);
          return response.json();
        },
        { timeout: 30_000, interval: 200 },
      );
      expect(answer).toEqual({ ok: true });
      const path = `/v2/team-a/worker/manifests/${run}`;
      // Anonymous first (401, Basic challenge), then with A's login (200); never a pull (GET) of the manifest.
      expect(registry.manifestRequests()).toEqual(
        expect.arrayContaining([`HEAD ${path} 401`, `HEAD ${path} 200`]),
      );
      expect(registry.manifestRequests().filter((r) => r.startsWith('GET'))).toEqual([]);
    });

    it('B without credentials, with wrong ones, or through a local alias is refused, naming the image and why', async () => {
      const none = await call(server, bobKey, 'endpoint/create', endpointBody(image));
      expect(none.status).toBe(400);
      expect(none.body).toMatchObject({
        code: 400,
        reason: 'IMAGE_ACCESS_DENIED',
        metadata: { image, cause: 'unauthorized' },
      });
      expect(none.body.message).toContain(
        `image ${image} is private: the registry refused an anonymous pull (HTTP 401`,
      );

      const wrong = await call(server, bobKey, 'repository/auth/save', {
        name: 'guess',
        username: 'alice',
        password: 'not-the-password',
      });
      const guessed = await call(server, bobKey, 'endpoint/create', endpointBody(image, wrong.body.id));
      expect(guessed.status).toBe(400);
      expect(guessed.body.reason).toBe('IMAGE_ACCESS_DENIED');
      expect(guessed.body.message).toContain(
        `registry refused owner's credentials for image ${image} (HTTP 401`,
      );

      const aliased = await call(server, bobKey, 'endpoint/create', endpointBody(alias));
      expect(aliased.status).toBe(400);
      expect(aliased.body.metadata).toMatchObject({ image: alias, cause: 'unauthorized' });

      expect((await call(server, bobKey, 'endpoints')).body.total).toBe(0);
      expect(
        execFileSync('docker', ['ps', '-aq', '--filter', `label=corral.dev/owner=${bob}`], {
          encoding: 'utf8',
        }),
      ).toBe('');
    });

    it("B's endpoint accepted while the registry was down fails its worker start with the reason once it answers", async () => {
      await registry.stop();
      const created = await call(
        server,
        bobKey,
        'endpoint/create',
        endpointBody(image, '', { minNum: 0, maxNum: 1, gpuNum: 1 }),
      );
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      await registry.start();
      const scaled = await call(server, bobKey, 'endpoint/update', {
        id: created.body.id,
        workerConfig: { minNum: 1, maxNum: 1 },
      });
      expect(scaled.status).toBe(200);
      const failed = await vi.waitFor(
        async () => {
          const { body } = await call(server, bobKey, `endpoint?id=${created.body.id}`);
          const worker = body.endpoint.workers.find((w: any) => w.state.state === 'failed');
          expect(worker, JSON.stringify(body.endpoint.workers)).toBeDefined();
          return worker.state;
        },
        { timeout: 20_000, interval: 200 },
      );
      expect(failed.error).toBe('IMAGE_PULL_FAILED');
      expect(failed.message).toContain(`image ${image} is private: the registry refused an anonymous pull`);
      expect(
        execFileSync('docker', ['ps', '-aq', '--filter', `label=corral.dev/owner=${bob}`], {
          encoding: 'utf8',
        }),
      ).toBe('');
    });
  },
);
