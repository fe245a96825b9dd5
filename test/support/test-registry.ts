/**
 * A registry for tests: one process of Debian's `docker-registry` package on 127.0.0.1 (the only registry these
 * machines can reach), with its output (the access log among it) kept, so that tests can count manifest requests.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { expect, vi } from 'vitest';

export const REGISTRY_BIN = '/usr/bin/docker-registry';

export function commandExists(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** One docker-registry process; its output (the access log among it) is kept. */
export class TestRegistry {
  #child: ChildProcess | undefined;
  log = '';

  constructor(
    readonly configPath: string,
    readonly address: string,
  ) {}

  async start(): Promise<void> {
    const child = spawn(REGISTRY_BIN, ['serve', this.configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    const keep = (chunk: Buffer) => {
      this.log += chunk.toString();
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    await vi.waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`docker-registry exited:\n${this.log}`);
        const response = await fetch(`http://${this.address}/v2/`);
        // 401 with htpasswd auth, 200 without.
        expect([200, 401]).toContain(response.status);
      },
      { timeout: 15_000, interval: 100 },
    );
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  }

  /**
   * Manifest requests the Docker engine made (its user agent is `docker/...`): one or more per pull, none for
   * Corral's own access checks. A pull whose layers are all present may only HEAD the manifest.
   */
  enginePulls(): number {
    return [
      ...this.log.matchAll(
        /"(?:HEAD|GET) \/v2\/[^ ]+\/manifests\/[^ ]+ HTTP\/[\d.]+" \d{3} \d+ "[^"]*" "docker\//g,
      ),
    ].length;
  }

  /** The manifest requests it logged, as `METHOD path status`. */
  manifestRequests(): string[] {
    return [...this.log.matchAll(/"(HEAD|GET) (\/v2\/[^ ]+\/manifests\/[^ ]+) HTTP\/[\d.]+" (\d{3})/g)].map(
      (m) => `${m[1]} ${m[2]} ${m[3]}`,
    );
  }
}

/**
 * Writes a registry config under `dir` (its storage there too), with htpasswd auth when `htpasswd` names a file,
 * and returns the registry for it on a free port of 127.0.0.1 (not started).
 */
export async function testRegistry(dir: string, options: { htpasswd?: string } = {}): Promise<TestRegistry> {
  const address = `127.0.0.1:${await freePort()}`;
  mkdirSync(join(dir, 'storage'), { recursive: true });
  const configPath = join(dir, 'registry.yml');
  writeFileSync(
    configPath,
    [
      'version: 0.1',
      'log: { level: info, accesslog: { disabled: false } }',
      `storage: { filesystem: { rootdirectory: ${join(dir, 'storage')} } }`,
      `http: { addr: "${address}" }`,
      ...(options.htpasswd ? [`auth: { htpasswd: { realm: corral-test, path: ${options.htpasswd} } }`] : []),
      '',
    ].join('\n'),
  );
  return new TestRegistry(configPath, address);
}
