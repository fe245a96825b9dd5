import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORRAL_BIN, runCorral, type ServeProcess, startServe } from '../support/process.js';

const PREFIX = '/gpu-instance/openapi/v1';
const execFileAsync = promisify(execFile);

/**
 * Python's http.client, as a user's script sends a large body: it writes all of it before reading the answer, so a
 * server that closes after its 413 while the body still arrives resets the connection under it (a broken pipe).
 * Prints one line per attempt: the status and the start of the body, or the error's name.
 */
const PYTHON_UPLOADS = `
import http.client, sys
port, key, size, attempts = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
body = b"x" * size
for _ in range(attempts):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("POST", "/gpu-instance/openapi/v1/endpoint/create", body=body,
                  headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        r = c.getresponse()
        print(r.status, r.read().decode()[:40])
    except Exception as e:
        print(type(e).__name__)
    finally:
        c.close()
`;

async function api(server: ServeProcess, key: string, path: string, body?: unknown) {
  const response = await fetch(`${server.apiUrl}${PREFIX}/${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

describe('corral serve as a process', () => {
  let dataDir: string;

  /** A port another process holds, for the "address in use" cases: BUSY in their table stands for it. */
  const busy = createServer();

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-'));
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    // A cluster nobody answers for (port 1): `--runtime kubernetes` must stop start-up naming --kubeconfig.
    writeFileSync(
      join(dataDir, 'unreachable-kubeconfig'),
      JSON.stringify({
        clusters: [
          { name: 'c', cluster: { server: 'http://127.0.0.1:1', 'insecure-skip-tls-verify': true } },
        ],
        users: [{ name: 'u', user: {} }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
  });
  afterAll(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    await new Promise<void>((resolve) => busy.close(() => resolve()));
  });

  it('prints a first key once, and keeps data across restarts', async () => {
    const env = { CORRAL_DATA_DIR: dataDir };
    const first = await startServe(['--gpus', 'h100-80g:2'], env);
    const key = /\n {2}(sk_\S+)\n/.exec(first.stdout())?.[1] ?? '';
    expect(key).toMatch(/^sk_[a-z0-9]{12}_[A-Za-z0-9]{32}$/);
    // Ready to paste for the CLI (no CORRAL_API_URL line here: the test server listens on a port chosen at start).
    expect(first.stdout()).toContain(`For the corral CLI, paste:\n\n  export CORRAL_API_KEY=${key}\n`);
    // Its owner is the operator: minNum may hold every GPU (2) without a config file (issue 20, item 7).
    const created = await api(first, key, 'endpoint/create', {
      endpoint: {
        image: { image: 'registry.invalid/x/y:1' },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 2, maxNum: 2, gpuNum: 1 },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const quota = await api(first, key, 'quota');
    expect(quota.body).toMatchObject({
      quota: { minGpus: 'unlimited' },
      used: { minGpus: 2 },
      source: 'operator',
    });
    expect(await first.stop()).toBe(0);
    // The key appears in the banner only, in no log line.
    expect(
      first
        .stdout()
        .split('\n')
        .filter((line) => line.includes(key)),
    ).toEqual([`  ${key}`, `  export CORRAL_API_KEY=${key}`]);

    const second = await startServe(['--gpus', 'h100-80g:2'], env);
    try {
      expect(second.stdout()).not.toContain('sk_');
      const listed = await api(second, key, 'endpoints');
      expect(listed.body.endpoints.map((e: { id: string }) => e.id)).toEqual([created.body.id]);
    } finally {
      await second.stop();
    }
  }, 60_000);

  it('the CLI manages keys on the store while the server runs, and revocation applies at once', async () => {
    const env = { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: 'operator-key-0123456789abcdef' };
    const server = await startServe([], env);
    try {
      const created = await runCorral(['keys', 'create', '--owner', 'bob', '--name', 'laptop'], env);
      expect(created.code).toBe(0);
      const bobKey = created.stdout.trim();
      expect((await api(server, bobKey, 'endpoints')).body).toEqual({ endpoints: [], total: 0 });
      // The operator's key is an admin key of the default owner, which already has one endpoint.
      expect((await api(server, 'operator-key-0123456789abcdef', 'endpoints')).body.total).toBe(1);

      const listed = await runCorral(['keys', 'list', '--json'], env);
      const keys = JSON.parse(listed.stdout) as { id: string; owner: string }[];
      expect(listed.stdout).not.toContain(bobKey);
      const bob = keys.find((k) => k.owner === 'bob');
      expect(bob).toBeDefined();
      expect((await runCorral(['keys', 'revoke', bob?.id ?? ''], env)).code).toBe(0);
      const refused = await api(server, bobKey, 'endpoints');
      expect(refused.status).toBe(401);
      expect(refused.body.message).toContain('revoked');
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('refuses a second corral serve on the same SQLite database with one line, and starts once the first is gone', async () => {
    const env = { CORRAL_DATA_DIR: dataDir };
    const first = await startServe([], env);
    let firstStopped = false;
    try {
      const second = await runCorral(
        ['serve', '--api-addr', '127.0.0.1:0', '--gateway-addr', '127.0.0.1:0'],
        env,
      );
      expect(second.code, second.stderr).toBe(2);
      const lines = second.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^corral: cannot serve: the SQLite database .*corral\.db is in use by another corral serve/,
      );
      // The first one is untouched.
      expect((await fetch(`${first.apiUrl}/healthz`)).status).toBe(200);
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));
      firstStopped = true;
      // A SIGKILL leaves no stale lock: the kernel dropped it with the process.
      const third = await startServe([], env);
      expect(await third.stop()).toBe(0);
    } finally {
      if (!firstStopped) await first.stop();
    }
  }, 60_000);

  it("answers a body over the API limit with 413 every time, also to Python's http.client, which reads only once it has sent it all", async () => {
    const key = 'operator-key-0123456789abcdef';
    const server = await startServe(['--gpus', 'h100-80g:2'], {
      CORRAL_DATA_DIR: dataDir,
      CORRAL_API_KEY: key,
    });
    try {
      const attempts = 60;
      const { stdout } = await execFileAsync('python3', [
        '-c',
        PYTHON_UPLOADS,
        new URL(server.apiUrl).port,
        key,
        String(3 * 1024 * 1024),
        String(attempts),
      ]);
      const answers = stdout.trim().split('\n');
      expect(answers).toHaveLength(attempts);
      expect(answers.filter((line) => !line.startsWith('413 {"code":413,"reason":"BODY_TOO_LARGE"'))).toEqual(
        [],
      );
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('the endpoints CLI works against the server', async () => {
    const env = { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: 'operator-key-0123456789abcdef' };
    const server = await startServe(['--gpus', 'h100-80g:2'], env);
    const cli = (...args: string[]) => runCorral([...args, '--api-url', server.apiUrl], env);
    try {
      const spec = join(dataDir, 'endpoint.yaml');
      writeFileSync(
        spec,
        'endpoint:\n  name: cli-demo\n  appName: cli-demo\n  image: {image: "registry.invalid/x/y:2"}\n  ports: [{port: 8080}]\n  products: [{id: h100-80g}]\n',
      );
      const created = await cli('endpoints', 'create', '-f', spec);
      expect(created.code, created.stderr).toBe(0);
      const list = await cli('endpoints', 'list', '--json');
      const names = (JSON.parse(list.stdout).endpoints as { name: string }[]).map((e) => e.name);
      expect(names).toContain('cli-demo');
      const table = await cli('endpoints', 'list');
      expect(table.stdout).toContain('cli-demo');
      const bad = await cli('endpoints', 'update', 'missing-id', '--max-workers', '2');
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('ENDPOINT_NOT_FOUND');
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('apply creates, then changes nothing, then removes an env taken out of the file; --wait prints the URLs, as create does unasked on a terminal', async () => {
    const env = { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: 'operator-key-0123456789abcdef' };
    // The fake runtime: an endpoint scaled to zero is ready at once, with no container.
    const server = await startServe(['--runtime', 'fake', '--gpus', '1'], env);
    const cli = (...args: string[]) => runCorral([...args, '--api-url', server.apiUrl], env);
    const spec = join(dataDir, 'apply.yaml');
    const withEnv =
      'name: applied\nappName: applied\nimage: {image: "registry.invalid/x/y:1"}\nports: [{port: 8080}]\n' +
      'workerConfig: {minNum: 0, maxNum: 1}\n';
    try {
      writeFileSync(spec, `${withEnv}envs: [{key: MODEL, value: tiny}]\n`);
      const created = await cli('apply', '-f', spec, '--wait');
      expect(created.code, created.stderr).toBe(0);
      expect(created.stdout).toMatch(/^created endpoint \S+ \(applied\)\nendpoint applied is ready: serving/);
      expect(created.stdout).toContain('Path URL:  http://127.0.0.1:');
      expect(created.stdout).toMatch(/\/e\/applied\/\n/);
      expect((await cli('apply', '-f', spec)).stdout).toMatch(/^unchanged endpoint \S+ \(applied\)\n$/);
      writeFileSync(spec, withEnv);
      expect((await cli('apply', '-f', spec)).stdout).toMatch(/^updated endpoint \S+ \(applied\)\n$/);
      const got = await cli('endpoints', 'get', 'applied', '--json');
      expect(got.code, got.stderr).toBe(0);
      const endpoint = JSON.parse(got.stdout).endpoint;
      expect(endpoint.envs).toEqual([]);
      expect((await cli('endpoints', 'list', '--json')).stdout.match(/"name": "applied"/g)).toHaveLength(1);

      // On a real terminal (script(1) gives the command a pseudo-terminal), create waits without being asked.
      const ttySpec = join(dataDir, 'tty.yaml');
      writeFileSync(ttySpec, withEnv.replaceAll('applied', 'on-a-tty'));
      const command = [
        process.execPath,
        CORRAL_BIN,
        'endpoints',
        'create',
        '-f',
        ttySpec,
        '--api-url',
        server.apiUrl,
      ]
        .map((word) => `'${word}'`)
        .join(' ');
      const { stdout: onTty } = await execFileAsync('script', ['-qec', command, '/dev/null'], {
        env: { ...process.env, ...env },
        timeout: 60_000,
      });
      expect(onTty).toMatch(/endpoint on-a-tty is ready: serving/);
      expect(onTty).toMatch(/\/e\/on-a-tty\//);
    } finally {
      await server.stop();
    }
  }, 180_000);

  const withBusy = (text: string) =>
    text
      .replace('BUSY', `127.0.0.1:${(busy.address() as AddressInfo).port}`)
      .replace('@KUBECONFIG_FILE@', join(dataDir, 'unreachable-kubeconfig'));
  // The fake runtime and simulated GPUs keep Docker and nvidia-smi out of the cases that get that far.
  const quiet = ['--runtime', 'fake', '--gpus', '1'];

  it.each([
    [['--api-addr', 'nonsense'], '--api-addr (CORRAL_API_ADDR)'],
    [['--gpus', 'lots'], '--gpus (CORRAL_GPUS)'],
    [['--runtime', 'podman'], '--runtime (CORRAL_RUNTIME)'],
    [
      ['--runtime', 'kubernetes', '--gpus', '1', '--kubeconfig', '/nonexistent/kubeconfig'],
      'invalid --kubeconfig (CORRAL_KUBECONFIG): no kubeconfig at /nonexistent/kubeconfig',
    ],
    [
      ['--runtime', 'kubernetes', '--gpus', '1', '--kubeconfig', '@KUBECONFIG_FILE@'],
      '--kubeconfig (CORRAL_KUBECONFIG) (http://127.0.0.1:1, namespace corral-workers): cannot reach the Kubernetes API server at http://127.0.0.1:1',
    ],
    [['--config', '/nonexistent/corral.yaml'], '--config file /nonexistent/corral.yaml'],
    [['--database-url', 'mysql://x'], '--database-url (CORRAL_DATABASE_URL)'],
    [
      [...quiet, '--database-url', 'postgres://corral:secret@127.0.0.1:1/x'],
      '--database-url (CORRAL_DATABASE_URL) postgres://corral:***@127.0.0.1:1/x: connect ECONNREFUSED',
    ],
    [
      [...quiet, '--api-addr', 'BUSY', '--gateway-addr', '127.0.0.1:0'],
      '--api-addr (CORRAL_API_ADDR) BUSY: the address is already in use',
    ],
    [
      [...quiet, '--api-addr', '127.0.0.1:0', '--gateway-addr', 'BUSY'],
      '--gateway-addr (CORRAL_GATEWAY_ADDR) BUSY: the address is already in use',
    ],
  ])('bad configuration %j stops start-up with one line naming the setting', async (args, named) => {
    const result = await runCorral(['serve', ...args.map(withBusy)], { CORRAL_DATA_DIR: dataDir });
    expect(result.code, result.stderr).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^corral: /);
    expect(lines[0]).toContain(withBusy(named));
    // The database URL's password is shown nowhere, not even in the logs.
    expect(`${result.stdout}${result.stderr}`).not.toContain('secret');
  });

  it.each([
    [{ CORRAL_SECRET_KEY: 'c2hvcnQ=' }, 'invalid CORRAL_SECRET_KEY'],
    [{ CORRAL_API_KEY: 'short' }, 'invalid CORRAL_API_KEY'],
  ])('bad secrets %j stop start-up before anything is written', async (env, named) => {
    const fresh = mkdtempSync(join(tmpdir(), 'corral-e2e-fresh-'));
    const result = await runCorral(['serve'], { CORRAL_DATA_DIR: fresh, ...env });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toContain(named);
    expect(result.stdout).not.toContain('sk_');
    rmSync(fresh, { recursive: true, force: true });
  });
});
