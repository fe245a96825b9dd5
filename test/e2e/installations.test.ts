/**
 * Two installations on one Docker engine (issue 9, item 5): two `corral serve` processes, each with its own data
 * dir, run side by side for a minute; neither adopts, stops or removes the other's worker, and both keep serving.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import {
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../support/test-image.js';

const KEY = 'e2e-installations-key-0123456789';
const SIDE_BY_SIDE_MS = 60_000;
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

const call = (server: ServeProcess, path: string, body?: unknown) => callApi(server, KEY, path, body);

/** Container ids (with their start times) carrying a label, so that a restart shows as a change too. */
function containersWith(label: string): string[] {
  return execFileSync(
    'docker',
    ['ps', '-a', '--no-trunc', '--filter', `label=${label}`, '--format', '{{.ID}} {{.Status}}'],
    { encoding: 'utf8' },
  )
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[0] ?? line)
    .sort();
}

function running(id: string): boolean {
  return (
    execFileSync('docker', ['inspect', '-f', '{{.State.Running}} {{.RestartCount}}', id], {
      encoding: 'utf8',
    }).trim() === 'true 0'
  );
}

describe.runIf(withDocker)('two installations on one Docker engine', () => {
  const dirs: string[] = [];
  const servers: ServeProcess[] = [];
  beforeEach(({ onTestFailed }) =>
    onTestFailed(() => {
      for (const server of servers) printServeLog(server, 60);
    }),
  );

  async function startInstallation(): Promise<ServeProcess> {
    const dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-installation-'));
    dirs.push(dataDir);
    writeFileSync(join(dataDir, 'corral.yaml'), 'controller: { reconcileIntervalMs: 200 }\n');
    const server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:2', '--config', join(dataDir, 'corral.yaml')],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );
    servers.push(server);
    return server;
  }

  beforeAll(async () => {
    await ensureTestImage();
  }, 180_000);

  afterAll(async () => {
    for (const server of servers) {
      await server.stop();
      removeInstallationResources(server.installationId);
    }
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it(
    "leaves the other's worker alone for a minute, and each serves its own endpoint",
    async () => {
      const image = await ensureTestImage();
      const first = await startInstallation();
      const second = await startInstallation();
      expect(first.installationId).not.toBe(second.installationId);

      const ids: string[] = [];
      for (const server of [first, second]) {
        const created = await call(server, 'endpoint/create', {
          endpoint: {
            ...testWorkerEndpoint(image),
          },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        ids.push(created.body.id);
      }
      const containersOf = (server: ServeProcess) =>
        containersWith(`corral.dev/installation=${server.installationId}`);
      await vi.waitFor(
        async () => {
          for (const [index, server] of [first, second].entries()) {
            const { body } = await call(server, `endpoint?id=${ids[index]}`);
            const ready = body.endpoint.workers.filter((w: any) => w.state.state === 'running' && w.healthy);
            expect(ready, JSON.stringify(body.endpoint.workers)).toHaveLength(1);
            expect(containersOf(server)).toHaveLength(1);
          }
        },
        { timeout: 60_000, interval: 250 },
      );
      const before = [containersOf(first), containersOf(second)];

      const until = Date.now() + SIDE_BY_SIDE_MS;
      while (Date.now() < until) {
        expect([containersOf(first), containersOf(second)]).toEqual(before);
        for (const id of before.flat())
          expect(running(id), `container ${id} stopped or restarted`).toBe(true);
        for (const [index, server] of [first, second].entries()) {
          const response = await fetch(`${server.gatewayUrl}/e/${ids[index]}/health`, {
            headers: { authorization: `Bearer ${KEY}` },
          });
          expect(response.status).toBe(200);
          await response.arrayBuffer();
        }
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      }
      // Each still reports its own worker as it was, and no other.
      for (const [index, server] of [first, second].entries()) {
        const { body } = await call(server, `endpoint?id=${ids[index]}`);
        expect(body.endpoint.workers).toHaveLength(1);
      }
    },
    SIDE_BY_SIDE_MS + 120_000,
  );
});
