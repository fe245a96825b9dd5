/**
 * Opt-in: the real runpod-python SDK, unmodified, in the image scripts/build-runpod-image.sh builds
 * (corral-runpod-worker:latest). Skipped, saying why, when the image is not there: CI cannot reach PyPI or GitHub.
 * What it shows: the SDK's local run (no RUNPOD_WEBHOOK_GET_JOB: test_input.json, then exit, as every RunPod image
 * did on Corral before jobs), and the SDK's worker protocol against Corral's worker-facing listener on a worker
 * network behind the host guard, with a stand-in for the jobs core's worker routes (the wire it records is what
 * those routes must accept). The SDK's job loop through a real `corral serve` is runpod-sdk-serve.test.ts.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerFacingBaseUrl } from '../../src/app/worker-facing-url.js';
import { type RunningWorkerListener, startWorkerListener } from '../../src/app/worker-listener.js';
import { HostGuard } from '../../src/runtime/docker/host-guard.js';
import { ensureListenerNetwork, listenerNetworkName } from '../../src/runtime/docker/listener-network.js';
import { canChangeFirewall } from '../support/host-guard.js';
import { RUNPOD_IMAGE, runpodImagePresent, runpodJobLoopRuns } from '../support/runpod-image.js';
import { createWorkerNetwork, removeNetworks } from '../support/worker-network.js';

const IMAGE = RUNPOD_IMAGE;
const imagePresent = runpodImagePresent();
const canGuard = canChangeFirewall();
const jobLoopRuns = imagePresent && runpodJobLoopRuns();

const logger = pino({ level: 'silent' });

function docker(args: string[], timeout = 120_000): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('docker', args, { encoding: 'utf8', timeout }, (error, stdout, stderr) =>
      resolve({
        code: error ? Number((error as { code?: number }).code ?? 1) : 0,
        out: `${stdout}${stderr}`,
      }),
    );
  });
}

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

describe.skipIf(!imagePresent)('the unmodified runpod-python SDK', () => {
  it('without RUNPOD_WEBHOOK_GET_JOB runs test_input.json and exits 0', async () => {
    const run = await docker(['run', '--rm', IMAGE]);
    expect(run.code, run.out).toBe(0);
    expect(run.out).toContain("Job result: {'output': {'echo': {'hello': 'corral'}, 'job': 'local_test'}}");
    expect(run.out).toContain('Local testing complete, exiting.');
  });

  describe.skipIf(!canGuard || !jobLoopRuns)(
    'against the worker-facing listener, behind the host guard',
    () => {
      const engine = new Docker();
      const installationId = `sdk${randomBytes(5).toString('hex')}`;
      const network = `corral-test-sdk-${installationId}`;
      const container = `corral-test-sdk-${installationId}`;
      let guard: HostGuard | undefined;
      const seen: Seen[] = [];
      let handed = false;
      let listener: RunningWorkerListener;
      let base: string;

      beforeAll(async () => {
        const address = await ensureListenerNetwork({
          docker: engine,
          installationId,
          subnets: undefined,
          logger,
        });
        // A stand-in for the jobs core's worker routes: one job on the first take, then nothing (a held 204).
        listener = await startWorkerListener({
          address: { host: address, port: 0 },
          logger,
          handler: async (request, response) => {
            let body = '';
            for await (const chunk of request) body += chunk;
            const url = request.url ?? '';
            seen.push({
              method: request.method ?? '',
              url,
              authorization: request.headers.authorization,
              contentType: request.headers['content-type'],
              body,
            });
            if (url.includes('/job-take/')) {
              if (!handed) {
                handed = true;
                response.writeHead(200, { 'content-type': 'application/json' });
                response.end(JSON.stringify({ id: 'job-1', input: { hello: 'sdk', progress: true } }));
              } else {
                await new Promise((resolve) => setTimeout(resolve, 1000));
                response.writeHead(204).end();
              }
              return true;
            }
            if (url.includes('/job-done/') || url.includes('/ping/')) {
              response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
              return true;
            }
            return false;
          },
        });
        base = workerFacingBaseUrl({ runtime: 'docker', address, port: listener.address.port });
        guard = new HostGuard({
          logger,
          blockHost: true,
          storageNosuid: false,
          workerListener: { address, port: listener.address.port, installationId },
        });
        await guard.firewall();
        await createWorkerNetwork(engine, network);
      }, 120_000);

      afterAll(async () => {
        await docker(['rm', '-f', container]);
        // This listener's hole goes with it; other installations' stay.
        await guard?.release();
        await listener?.close();
        await removeNetworks(engine, [network, listenerNetworkName(installationId)]);
      });

      it('takes the job, posts progress and its result (JSON labelled form-urlencoded) with the worker token', async () => {
        const started = await docker([
          'run',
          '-d',
          '--name',
          container,
          '--network',
          network,
          '-e',
          `RUNPOD_WEBHOOK_GET_JOB=${base}/v2/job-take/w-1?token=t`,
          '-e',
          `RUNPOD_WEBHOOK_POST_OUTPUT=${base}/v2/job-done/w-1/$ID?token=t`,
          '-e',
          `RUNPOD_WEBHOOK_PING=${base}/v2/ping/w-1?token=t`,
          '-e',
          'RUNPOD_AI_API_KEY=wt_test_worker_token',
          '-e',
          'RUNPOD_POD_ID=w-1',
          '-e',
          'RUNPOD_SKIP_AUTO_SYSTEM_CHECKS=true',
          IMAGE,
        ]);
        expect(started.code, started.out).toBe(0);
        const deadline = Date.now() + 60_000;
        // The result, not the progress update (also posted to the result URL, with "status": "IN_PROGRESS").
        const result = () =>
          seen.find(
            (s) =>
              s.url.includes('/job-done/') && s.body.includes('"output"') && !s.body.includes('IN_PROGRESS'),
          );
        while (!result() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
        const take = seen.find((s) => s.url.includes('/job-take/'));
        const logs = (await docker(['logs', container])).out;
        expect(String(take?.url), logs).toMatch(/^\/v2\/job-take\/w-1\?token=t&job_in_progress=0/);
        expect(take?.authorization).toBe('wt_test_worker_token');
        const done = result();
        expect(done?.url).toMatch(/^\/v2\/job-done\/w-1\/job-1\?token=t&isStream=false/);
        expect(done?.contentType).toBe('application/x-www-form-urlencoded');
        expect(JSON.parse(done?.body ?? '{}')).toEqual({
          output: { echo: { hello: 'sdk', progress: true }, job: 'job-1' },
        });
        const progress = seen.find((s) => s.url.includes('/job-done/') && s.body.includes('IN_PROGRESS'));
        expect(JSON.parse(progress?.body ?? '{}')).toMatchObject({
          status: 'IN_PROGRESS',
          output: 'half way',
        });
      }, 120_000);
    },
  );
});
