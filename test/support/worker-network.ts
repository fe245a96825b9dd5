/**
 * A worker network for tests of the worker-facing listener on Docker: a bridge named like Corral's (`crl` + hex,
 * so the host guard's chain applies to it), inter-container traffic off; and its gateway address. What a container on
 * it gets from URLs.
 */
import { execFile } from 'node:child_process';
import type Docker from 'dockerode';
import { corralBridge } from '../../src/runtime/docker/sandbox.js';
import { firstHost } from '../../src/runtime/docker/subnet-pool.js';
import { LABELS } from '../../src/runtime/types.js';

export async function createWorkerNetwork(docker: Docker, name: string): Promise<{ gateway: string }> {
  await docker.createNetwork(corralBridge(name, { [LABELS.managed]: 'true' }));
  const inspected = (await docker.getNetwork(name).inspect()) as {
    IPAM: { Config: { Subnet: string; Gateway?: string }[] };
  };
  const config = inspected.IPAM.Config[0];
  return { gateway: config?.Gateway ?? firstHost(config?.Subnet ?? '') ?? '' };
}

export async function removeNetworks(docker: Docker, names: string[]): Promise<void> {
  for (const name of names) {
    await docker
      .getNetwork(name)
      .remove()
      .catch(() => undefined);
  }
}

/**
 * What a container on the worker network gets from each URL: `status body`, or `error CODE`. Asynchronous: the
 * listener answering it runs in this process.
 */
export async function fromWorker(image: string, network: string, urls: string[]): Promise<string[]> {
  const script = `const t = async (u) => { try { const r = await fetch(u, { signal: AbortSignal.timeout(5000) }); return r.status + ' ' + (await r.text()); } catch (e) { return 'error ' + (e.cause?.code ?? e.name); } };
(async () => { const out = []; for (const u of JSON.parse(process.argv[1])) out.push(await t(u)); console.log(JSON.stringify(out)); })();`;
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        network,
        '--entrypoint',
        '/node',
        image,
        '-e',
        script,
        JSON.stringify(urls),
      ],
      { encoding: 'utf8', timeout: 60_000 },
      (error, out) => (error ? reject(error) : resolve(out)),
    ),
  );
  return JSON.parse(stdout.trim().split('\n').pop() ?? '[]') as string[];
}
