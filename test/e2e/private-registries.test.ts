/**
 * Registries on private addresses (issue 29, item 7), end to end with `corral serve` on Docker: an image naming an
 * unlisted loopback registry, in any form, is refused at create with the same answer whatever listens there and no
 * connection to it; a listed registry whose answers carry a secret-looking text is pulled from by the engine, and
 * that text reaches no worker state, event, API answer or log line.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { dockerAvailable, removeInstallationResources, testWorkerEndpoint } from '../support/test-image.js';
import { closeServer } from '../support/test-servers.js';

const KEY = 'e2e-private-registries-key-0123456789';
const SECRET = 'secret-TOKEN-7f3a9c';
const DIGEST = `sha256:${'a'.repeat(64)}`;
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

function listen(server: Server | ReturnType<typeof createHttpServer>): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    }),
  );
}

describe.runIf(withDocker)('registries on private addresses, with corral serve on Docker', () => {
  let dir: string;
  let server: ServeProcess;
  let talkative: ReturnType<typeof createHttpServer>;
  let talkativePort: number;
  const talkativeRequests: string[] = [];
  let endpointId = '';
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'corral-e2e-private-registries-'));
    // A listed registry that says the manifest exists (Corral's HEAD) and answers the engine's GET of it with a
    // secret-looking text: the engine's error quotes it.
    talkative = createHttpServer((req, res) => {
      talkativeRequests.push(`${req.method} ${req.url} ${req.headers['user-agent'] ?? ''}`);
      if (req.url === '/v2/') return res.writeHead(200).end();
      if (req.method === 'HEAD')
        return res
          .writeHead(200, {
            'docker-content-digest': DIGEST,
            'content-type': 'application/vnd.docker.distribution.manifest.v2+json',
            // The engine refuses a HEAD answer without one.
            'content-length': '2',
          })
          .end();
      res.writeHead(418, { 'content-type': 'text/plain' }).end(`${SECRET} (the registry's own words)`);
    });
    talkativePort = await listen(talkative);
    writeFileSync(
      join(dir, 'corral.yaml'),
      `controller: { reconcileIntervalMs: 200 }\nregistries: { allowPrivate: ["127.0.0.1:${talkativePort}"] }\n`,
    );
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:2', '--config', join(dir, 'corral.yaml')],
      {
        CORRAL_DATA_DIR: join(dir, 'data'),
        CORRAL_API_KEY: KEY,
      },
    );
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    if (endpointId !== '') {
      const ids = execFileSync(
        'docker',
        ['ps', '-aq', '--filter', `label=corral.dev/endpoint=${endpointId}`],
        {
          encoding: 'utf8',
        },
      );
      for (const id of ids.split('\n').filter(Boolean)) execFileSync('docker', ['rm', '-f', '-v', id]);
    }
    await closeServer(talkative);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('an unlisted loopback registry, in every form, is refused at create alike, and nothing connects to it', async () => {
    let connections = 0;
    const socket = createServer((s) => {
      connections += 1;
      s.destroy();
    });
    const port = await listen(socket);
    const forms = [
      `127.0.0.1:${port}`,
      `2130706433:${port}`,
      `0x7f.1:${port}`,
      `localhost:${port}`,
      `[::ffff:7f00:1]:${port}`,
    ];
    const answers = [];
    for (const form of forms) {
      const created = await callApi(server, KEY, 'endpoint/create', {
        endpoint: testWorkerEndpoint(`${form}/x:1`),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(400);
      expect(created.body).toMatchObject({
        reason: 'IMAGE_ACCESS_DENIED',
        metadata: { cause: 'private-registry' },
      });
      answers.push(created.body);
    }
    // The same answer with nothing listening there.
    await new Promise((resolve) => socket.close(resolve));
    const closed = await callApi(server, KEY, 'endpoint/create', {
      endpoint: testWorkerEndpoint(`127.0.0.1:${port}/x:1`),
    });
    expect(closed.body).toEqual(answers[0]);
    expect(connections).toBe(0);
  });

  it("a listed registry's answer text reaches no state, event, answer or log line", async () => {
    const image = `127.0.0.1:${talkativePort}/team/app:1`;
    const created = await callApi(server, KEY, 'endpoint/create', { endpoint: testWorkerEndpoint(image) });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    endpointId = created.body.id as string;
    const endpoint = await vi.waitFor(
      async () => {
        const answer = await callApi(server, KEY, `endpoint?id=${endpointId}`);
        expect(answer.body.endpoint.state).toMatchObject({ state: 'failed', error: 'IMAGE_PULL_FAILED' });
        return answer;
      },
      { timeout: 60_000, interval: 300 },
    );
    // The engine did ask, and was answered with the text.
    expect(
      talkativeRequests.some((r) => r.startsWith('GET /v2/team/app/manifests/') && r.includes('docker/')),
    ).toBe(true);
    const log = await callApi(server, KEY, `endpoint/log?id=${endpointId}&limit=1000`);
    const said = JSON.stringify([endpoint.body, log.body]);
    expect(said).toContain('the registry answered HTTP 418');
    expect(said).not.toContain(SECRET);
    expect(server.stdout()).not.toContain(SECRET);
  }, 90_000);
});
