import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CLIENT_LIMITS } from '../gateway/server.js';
import { advertisedGatewayUrl, loadConfig } from './config.js';
import { DEFAULT_CONNECTION_LIMITS } from './connection-limits.js';

const load = (flags: Record<string, string> = {}, env: NodeJS.ProcessEnv = {}, file = '') =>
  loadConfig({ flags, env, readFile: () => file });

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = load({ dataDir: '/var/lib/corral' });
    expect(config.apiAddr).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(config.gatewayAddr).toEqual({ host: '127.0.0.1', port: 8000 });
    expect(config.domain).toBe('localhost');
    expect(config.runtime).toBe('auto');
    expect(config.gpus).toEqual({ kind: 'auto' });
    expect(config.apiUrl).toBe('http://127.0.0.1:8080');
    expect(config.dataDir).toBe('/var/lib/corral');
    expect(config.limits.workers).toEqual({ min: 0, max: 20 });
  });

  it('flags win over environment variables, which win over defaults', () => {
    const env = { CORRAL_API_ADDR: '0.0.0.0:9000', CORRAL_DOMAIN: 'Corral.Example.com' };
    expect(load({}, env).apiAddr).toEqual({ host: '0.0.0.0', port: 9000 });
    expect(load({}, env).domain).toBe('corral.example.com');
    expect(load({ apiAddr: '[::1]:7000' }, env).apiAddr).toEqual({ host: '::1', port: 7000 });
    expect(load({ apiAddr: '[::1]:7000' }, env).apiUrl).toBe('http://[::1]:7000');
  });

  it.each([
    [{ apiAddr: '8080' }, 'invalid --api-addr (CORRAL_API_ADDR): expected host:port'],
    [{ gatewayAddr: 'x:99999' }, 'invalid --gateway-addr (CORRAL_GATEWAY_ADDR)'],
    [
      { runtime: 'podman' },
      'invalid --runtime (CORRAL_RUNTIME): expected auto, docker, kubernetes, local or fake',
    ],
    [{ namespace: 'Corral_Workers' }, 'invalid --namespace (CORRAL_NAMESPACE): expected a namespace name'],
    [{ gpus: 'many' }, 'invalid --gpus (CORRAL_GPUS)'],
    [{ domain: 'bad domain' }, 'invalid --domain (CORRAL_DOMAIN)'],
    [{ logLevel: 'loud' }, 'invalid --log-level (CORRAL_LOG_LEVEL)'],
    [{ publicUrl: 'ftp://x' }, 'invalid --public-url (CORRAL_PUBLIC_URL)'],
    [{ allowLocalImages: 'Admins' }, 'invalid --allow-local-images (CORRAL_ALLOW_LOCAL_IMAGES)'],
    [{ allowLocalImages: 'app,Bad Name' }, 'got "Bad Name"'],
  ])('rejects %j naming the setting', (flags, message) => {
    expect(() => load(flags)).toThrow(message);
  });

  it.each([
    [undefined, 'admins'],
    ['all', 'all'],
    ['corral-test-worker:latest', ['corral-test-worker:latest']],
    [' app , team/app:1 ', ['app', 'team/app:1']],
  ])('--allow-local-images %j: %j (default: admins only)', (value, allowance) => {
    const env = value === undefined ? {} : { CORRAL_ALLOW_LOCAL_IMAGES: value };
    expect(load({}, env).allowLocalImages).toEqual(allowance);
  });

  it('reads limits by their wire names, products, storages and rate limits from the file', () => {
    const config = load(
      { config: '/etc/corral.yaml' },
      {},
      `
limits: { maxWorkerNum: 50, maxGPUNum: 4 }
products: [{ id: h100-80g, name: "H100 80GB" }]
networkStorages:
  - { id: models, clusterID: c1, hostPath: /srv/models, owners: all }
  - { id: team, clusterID: c1, hostPath: /srv/team, owners: [alice, bob], readOnly: true }
rateLimit: { requestsPerSecond: 5, burst: 10 }
bodyLimitBytes: 2048
`,
    );
    expect(config.limits.workers).toEqual({ min: 0, max: 50 });
    expect(config.limits.gpus).toEqual({ min: 1, max: 4 });
    expect(config.products).toEqual([{ id: 'h100-80g', name: 'H100 80GB' }]);
    expect(config.networkStorages).toEqual([
      { id: 'models', clusterId: 'c1', hostPath: '/srv/models', owners: 'all', readOnly: false },
      { id: 'team', clusterId: 'c1', hostPath: '/srv/team', owners: ['alice', 'bob'], readOnly: true },
    ]);
    expect(config.rateLimit).toEqual({ requestsPerSecond: 5, burst: 10 });
    expect(config.bodyLimitBytes).toBe(2048);
  });

  it("reads the kubernetes runtime settings: kubeconfig, namespace, products' node labels, claims, pods", () => {
    const defaults = load();
    expect(defaults.kubeconfig).toBeUndefined();
    expect(defaults.namespace).toBe('corral-workers');
    expect(defaults.kubernetes).toEqual({ gpuResource: 'nvidia.com/gpu', terminationGraceSeconds: 10 });
    const config = load(
      { runtime: 'kubernetes', config: '/etc/corral.yaml' },
      { CORRAL_KUBECONFIG: '/etc/kube/config', CORRAL_NAMESPACE: 'gpu-workers' },
      `
products: [{ id: h100-80g, nodeLabel: "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" }]
networkStorages:
  - { id: models, clusterID: c1, hostPath: /srv/models, owners: all, claimName: models-pvc }
kubernetes: { gpuResource: nvidia.com/mig-1g.10gb, terminationGraceSeconds: 30, imagePullPolicy: IfNotPresent }
`,
    );
    expect(config.runtime).toBe('kubernetes');
    expect(config.kubeconfig).toBe('/etc/kube/config');
    expect(config.namespace).toBe('gpu-workers');
    expect(config.products).toEqual([
      { id: 'h100-80g', nodeLabel: 'nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3' },
    ]);
    expect(config.networkStorages[0]?.claimName).toBe('models-pvc');
    expect(config.kubernetes).toEqual({
      gpuResource: 'nvidia.com/mig-1g.10gb',
      terminationGraceSeconds: 30,
      imagePullPolicy: 'IfNotPresent',
    });
  });

  it("turns the node agents on from CORRAL_NODE_AGENT_TOKEN_FILE alone (a deployment without a config file), over the file's token file", () => {
    const token = '/var/run/secrets/corral-node/token';
    expect(load({}, { CORRAL_NODE_AGENT_TOKEN_FILE: token }).kubernetes.nodeAgent).toEqual({
      tokenFile: token,
    });
    expect(load({ nodeAgentTokenFile: token }).kubernetes.nodeAgent).toEqual({ tokenFile: token });
    const file = 'kubernetes: { nodeAgent: { tokenFile: /etc/agent-token, port: 9500, suspend: true } }\n';
    expect(
      load({ config: '/etc/corral.yaml' }, { CORRAL_NODE_AGENT_TOKEN_FILE: token }, file).kubernetes
        .nodeAgent,
    ).toEqual({ tokenFile: token, port: 9500, suspend: true });
    expect(load({ config: '/etc/corral.yaml' }, {}, file).kubernetes.nodeAgent?.tokenFile).toBe(
      '/etc/agent-token',
    );
    expect(load().kubernetes.nodeAgent).toBeUndefined();
  });

  it("reads the gateway's settings, the idle keep-alive of worker connections defaulting to 4 s", () => {
    expect(load().gateway).toEqual({
      maxQueueLength: 1000,
      queueTimeoutSeconds: 300,
      bodyLimitBytes: 100 * 1024 * 1024,
      workerKeepAliveMs: 4000,
    });
    const config = load(
      { config: '/etc/corral.yaml' },
      {},
      'gateway: { queueTimeoutSeconds: 60, workerKeepAliveMs: 1500 }',
    );
    expect(config.gateway).toMatchObject({ queueTimeoutSeconds: 60, workerKeepAliveMs: 1500 });
  });

  it("reads both listeners' connection limits, each key over its default; the gateway's deadlines are its server's", () => {
    expect(load().connections).toEqual(DEFAULT_CONNECTION_LIMITS);
    expect(DEFAULT_CONNECTION_LIMITS.gateway).toMatchObject(DEFAULT_CLIENT_LIMITS);
    const config = load(
      { config: '/etc/corral.yaml' },
      {},
      'connections: { reservedFiles: 2048, api: { maxConnections: 100, headersTimeoutMs: 5000 }, gateway: { maxRequestsPerSocket: 1000 } }',
    );
    expect(config.connections).toEqual({
      reservedFiles: 2048,
      api: {
        ...DEFAULT_CONNECTION_LIMITS.api,
        maxConnections: 100,
        maxConnectionsPerClient: 100,
        headersTimeoutMs: 5000,
      },
      gateway: { ...DEFAULT_CONNECTION_LIMITS.gateway, maxRequestsPerSocket: 1000 },
    });
  });

  it("reads the history's settings: one hour at 10 s for at most 500 endpoints by default, 0 samples for none", () => {
    expect(load().history).toEqual({ intervalSeconds: 10, samples: 360, maxEndpoints: 500 });
    const config = load({ config: '/etc/corral.yaml' }, {}, 'history: { intervalSeconds: 1, samples: 0 }');
    expect(config.history).toEqual({ intervalSeconds: 1, samples: 0, maxEndpoints: 500 });
  });

  it('fetches models from the hub unless the config file names a mirror, with no disk budget unless given', () => {
    expect(load().models).toEqual({ hubUrl: 'https://huggingface.co', diskBudgetBytes: null });
    const file = 'models: { hubUrl: "http://mirror.internal:8080/", diskBudgetGB: 1.5 }';
    expect(load({ config: '/c.yaml' }, {}, file).models).toEqual({
      hubUrl: 'http://mirror.internal:8080',
      diskBudgetBytes: 1_500_000_000,
    });
    expect(() => load({ config: '/c.yaml' }, {}, 'models: { diskBudgetGB: 0 }')).toThrow('diskBudgetGB');
  });

  it('allows private webhook targets only with both the setting and the config key, and says which is missing', () => {
    expect(load().webhooks).toEqual({ allowPrivate: false });
    const file = 'webhooks: { allowPrivate: true }';
    expect(load({ config: '/c.yaml' }, { CORRAL_WEBHOOK_ALLOW_PRIVATE: 'true' }, file).webhooks).toEqual({
      allowPrivate: true,
    });
    expect(load({ config: '/c.yaml', webhookAllowPrivate: '1' }, {}, file).webhooks.allowPrivate).toBe(true);
    expect(() => load({}, { CORRAL_WEBHOOK_ALLOW_PRIVATE: 'true' })).toThrow(
      '--webhook-allow-private (CORRAL_WEBHOOK_ALLOW_PRIVATE) also needs webhooks.allowPrivate: true in the config file',
    );
    expect(() => load({ config: '/c.yaml' }, {}, file)).toThrow(
      'config file: webhooks.allowPrivate also needs --webhook-allow-private (CORRAL_WEBHOOK_ALLOW_PRIVATE) set to true',
    );
    expect(load({ config: '/c.yaml' }, {}, 'webhooks: { allowPrivate: false }').webhooks.allowPrivate).toBe(
      false,
    );
  });

  it('lists private registries from the flag and the config file together, and refuses what is not a host', () => {
    expect(load().registries).toEqual({ allowPrivate: [] });
    const file = 'registries: { allowPrivate: ["registry.internal", "10.0.0.5:5000"] }';
    expect(
      load({ config: '/c.yaml' }, { CORRAL_PRIVATE_REGISTRIES: '127.0.0.1:5000, registry.internal' }, file)
        .registries.allowPrivate,
    ).toEqual(['127.0.0.1:5000', 'registry.internal', '10.0.0.5:5000']);
    expect(() => load({ privateRegistries: 'http://x/y' })).toThrow(
      'invalid --private-registries (CORRAL_PRIVATE_REGISTRIES): expected registries such as 127.0.0.1:5000,registry.internal: "http://x/y" is not a host or host:port',
    );
    expect(() => load({ config: '/c.yaml' }, {}, 'registries: { allowPrivate: ["a/b"] }')).toThrow(
      '"a/b" is not a host',
    );
  });

  it('accepts the config file example of docs/configuration.md, with every gateway key', () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    const example = /## The config file[\s\S]*?```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
    const config = load({ config: '/etc/corral.yaml' }, {}, example);
    expect(config.gateway).toEqual({
      maxQueueLength: 1000,
      queueTimeoutSeconds: 300,
      bodyLimitBytes: 104857600,
      workerKeepAliveMs: 4000,
    });
    expect(config.specBodyLimitBytes).toBe(65536);
    expect(config.jobs).toEqual({
      retentionSeconds: 1800,
      submissionRate: { requestsPerSecond: 100, burst: 1000 },
      stream: { maxBytes: 20 * 1024 * 1024, maxChunks: 100_000, readBytes: 2 * 1024 * 1024 },
      syncRetentionSeconds: 60,
      maxAttempts: 3,
      lostAfterSeconds: 35,
      stopGraceSeconds: 30,
      takeHoldSeconds: 60,
    });
    expect(config.workers).toMatchObject({
      listen: { host: '127.0.0.1', port: 8082 },
      advertiseUrl: undefined,
    });
    expect(config.connections).toEqual(DEFAULT_CONNECTION_LIMITS);
    expect(config.history).toEqual({ intervalSeconds: 10, samples: 360, maxEndpoints: 500 });
    expect(config.quotas).toEqual({
      defaults: {
        endpoints: 100,
        minGpus: 4,
        maxGpus: 32,
        workers: 100,
        credentials: 50,
        secrets: 100,
        invokeKeys: 200,
        queuedJobs: 10_000,
        jobBytes: 1024 ** 3,
      },
      owners: { research: { minGpus: 6, maxGpus: Number.POSITIVE_INFINITY } },
    });
  });

  it('reads budgets for every owner and by owner (fractions allowed) and the spend per hour, apart from the quotas', () => {
    const config = load(
      { config: '/etc/corral.yaml' },
      {},
      [
        'quotas:',
        '  endpoints: 5',
        '  budget: { perMonth: 250 }',
        '  spendPerHour: 80',
        '  owners:',
        '    lab: { workers: 3, budget: { gpuHoursPerMonth: 0.5, perMonth: 12.5 } }',
      ].join('\n'),
    );
    expect(config.quotas).toEqual({ defaults: { endpoints: 5 }, owners: { lab: { workers: 3 } } });
    expect(config.budgets).toEqual({
      defaults: { perMonth: 250 },
      owners: { lab: { gpuHoursPerMonth: 0.5, perMonth: 12.5 } },
      spendPerHour: 80,
    });
  });

  it('reads the idle policy for every owner and by owner (off, fractions of days), apart from the quotas', () => {
    const config = load(
      { config: '/etc/corral.yaml' },
      {},
      [
        'quotas:',
        '  idlePolicy: { steps: [{ afterDays: 3, maxWorkers: 2 }, { afterDays: 7, maxWorkers: 0 }] }',
        '  owners:',
        '    lab: { workers: 3, idlePolicy: off }',
        '    ci: { idlePolicy: { steps: [{ afterDays: 0.5, maxWorkers: 0 }] } }',
      ].join('\n'),
    );
    expect(config.quotas).toEqual({ defaults: {}, owners: { lab: { workers: 3 }, ci: {} } });
    expect(config.idlePolicies).toEqual({
      defaults: {
        steps: [
          { afterDays: 3, maxWorkers: 2 },
          { afterDays: 7, maxWorkers: 0 },
        ],
      },
      owners: { lab: 'off', ci: { steps: [{ afterDays: 0.5, maxWorkers: 0 }] } },
    });
    expect(load().idlePolicies).toEqual({ owners: {} });
  });

  it('has no configured quotas and a 64 KiB spec body limit by default (quotas then follow the GPUs)', () => {
    const config = load();
    expect(config.quotas).toEqual({ defaults: {}, owners: {} });
    expect(config.budgets).toEqual({ owners: {} });
    expect(config.specBodyLimitBytes).toBe(65536);
    expect(load({ config: '/etc/corral.yaml' }, {}, 'bodyLimitBytes: 16384').specBodyLimitBytes).toBe(16384);
  });

  it.each([
    ['', undefined],
    ['workers: {}', undefined],
    ['workers: { memoryGBPerGpu: 64 }', 64],
    ['workers: { memoryGBPerGpu: 7.5 }', 7.5],
    ['workers: { memoryGBPerGpu: 0 }', 0],
  ])(
    'workers.memoryGBPerGpu from %j: %s (unset: each GPU gets its share of the machine; 0: no limit)',
    (file, memoryGBPerGpu) => {
      expect(load({ config: '/etc/corral.yaml' }, {}, file).workers.memoryGBPerGpu).toBe(memoryGBPerGpu);
    },
  );

  it('confines workers by default: capabilities, pids, log rotation, a network per owner, the host guarded', () => {
    expect(load({}, {}, '').workers.sandbox).toEqual({
      capAdd: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETGID', 'SETUID', 'KILL', 'NET_BIND_SERVICE'],
      pidsLimit: 4096,
      log: { maxSizeMB: 10, maxFiles: 3 },
      networkIsolation: 'owner',
      subnets: { pool: '172.31.0.0/16', prefixLength: 24 },
      blockHost: true,
      storageNosuid: true,
    });
  });

  it('reads every sandbox setting from the file', () => {
    const file = `
workers:
  sandbox:
    capAdd: [NET_BIND_SERVICE, SYS_PTRACE]
    pidsLimit: 0
    log: { maxSizeMB: 50, maxFiles: 5 }
    network: { isolation: endpoint, blockHost: false, subnetPool: 10.200.0.0/16, subnetPrefixLength: 26 }
    storage: { nosuid: false }
`;
    expect(load({ config: '/etc/corral.yaml' }, {}, file).workers.sandbox).toEqual({
      capAdd: ['NET_BIND_SERVICE', 'SYS_PTRACE'],
      pidsLimit: 0,
      log: { maxSizeMB: 50, maxFiles: 5 },
      networkIsolation: 'endpoint',
      subnets: { pool: '10.200.0.0/16', prefixLength: 26 },
      blockHost: false,
      storageNosuid: false,
    });
  });

  it('subnetPool docker leaves worker subnets to Docker', () => {
    const file = 'workers: { sandbox: { network: { subnetPool: docker } } }';
    expect(load({ config: '/etc/corral.yaml' }, {}, file).workers.sandbox.subnets).toBeUndefined();
  });

  it.each([
    ['', 600],
    ['controller: { crashResetSeconds: 120 }', 120],
  ])('controller.crashResetSeconds from %j: %s (default: 10 min, as the kubelet)', (file, seconds) => {
    expect(load({ config: '/etc/corral.yaml' }, {}, file).controller.crashResetSeconds).toBe(seconds);
  });

  it.each([
    ['', 60],
    ['controller: { unhealthyTimeoutSeconds: 5 }', 5],
  ])('controller.unhealthyTimeoutSeconds from %j: %s (default: one minute)', (file, seconds) => {
    expect(load({ config: '/etc/corral.yaml' }, {}, file).controller.unhealthyTimeoutSeconds).toBe(seconds);
  });

  it.each([
    ['limits: { maxWorkerNum: -1 }', 'limits.maxWorkerNum'],
    ['limits: { minWorkerNum: 5, maxWorkerNum: 2 }', 'minWorkerNum (5) is above maxWorkerNum (2)'],
    ['limits: { freeLocalVolumeSize: 500 }', 'freeLocalVolumeSize (500) is outside 0..100'],
    ['limts: {}', 'Unrecognized key'],
    ['networkStorages: [{ id: x, clusterID: c, hostPath: relative }]', 'networkStorages.0.hostPath'],
    ['{ not yaml', 'not valid YAML or JSON'],
    ['networkStorages: [{ id: x, clusterID: c, hostPath: /x }]', 'networkStorages.0.owners: name the owners'],
    ['networkStorages: [{ id: x, clusterID: c, hostPath: /x, owners: [] }]', 'networkStorages.0.owners'],
    [
      'networkStorages: [{ id: x, clusterID: c, hostPath: /x, owners: everyone }]',
      'networkStorages.0.owners',
    ],
    ['workers: { sandbox: { capAdd: [cap_net_raw] } }', 'workers.sandbox.capAdd.0'],
    ['workers: { sandbox: { network: { isolation: tenant } } }', 'workers.sandbox.network.isolation'],
    ['workers: { sandbox: { log: { maxSizeMB: 0 } } }', 'workers.sandbox.log.maxSizeMB'],
    ['workers: { sandbox: { network: { subnetPool: 10.200.0.0 } } }', 'workers.sandbox.network.subnetPool'],
    [
      'workers: { sandbox: { network: { subnetPool: fd00::/64 } } }',
      'expected an IPv4 CIDR such as 172.31.0.0/16',
    ],
    [
      'workers: { sandbox: { network: { subnetPrefixLength: 30 } } }',
      'workers.sandbox.network.subnetPrefixLength',
    ],
    ['workers: { sandbox: { pidsLimit: -1 } }', 'workers.sandbox.pidsLimit'],
    ['workers: { memoryGBPerGpu: -8 }', 'workers.memoryGBPerGpu'],
    ['workers: { memoryGbPerGpu: 8 }', 'Unrecognized key'],
    ['gateway: { workerKeepAliveMs: 0 }', 'gateway.workerKeepAliveMs'],
    ['history: { intervalSeconds: 0 }', 'history.intervalSeconds'],
    ['history: { samples: 100000 }', 'history.samples'],
    ['gateway: { workerKeepAliveMs: 2.5 }', 'gateway.workerKeepAliveMs'],
    ['quotas: { minGpus: -1 }', 'quotas.minGpus: expected an integer >= 0 or "unlimited"'],
    ['quotas: { minGpus: lots }', 'quotas.minGpus'],
    ['quotas: { gpus: 4 }', 'Unrecognized key'],
    ['quotas: { budget: { perMonth: -1 } }', 'quotas.budget.perMonth'],
    ['quotas: { owners: { a: { budget: { gpuHours: 1 } } } }', 'quotas.owners.a.budget'],
    ['quotas: { spendPerHour: lots }', 'quotas.spendPerHour'],
    ['quotas: { idlePolicy: { steps: [] } }', 'quotas.idlePolicy.steps'],
    ['quotas: { idlePolicy: sometimes }', 'quotas.idlePolicy: expected off or { steps'],
    [
      'quotas: { owners: { a: { idlePolicy: { steps: [{ afterDays: 0, maxWorkers: 1 }] } } } }',
      'quotas.owners.a.idlePolicy.steps.0.afterDays',
    ],
    [
      'quotas: { idlePolicy: { steps: [{ afterDays: 1, maxWorkers: -1 }] } }',
      'quotas.idlePolicy.steps.0.maxWorkers',
    ],
    [
      'quotas: { idlePolicy: { steps: [{ afterDays: 7, maxWorkers: 0 }, { afterDays: 3, maxWorkers: 2 }] } }',
      'quotas.idlePolicy.steps: expected steps in ascending afterDays',
    ],
    [
      'quotas: { idlePolicy: { steps: [{ afterDays: 3, maxWorkers: 2 }, { afterDays: 7, maxWorkers: 2 }] } }',
      'quotas.idlePolicy.steps: expected each step to lower maxWorkers below the step before it',
    ],
    ['quotas: { owners: { a: { endpoint: 4 } } }', 'quotas.owners.a'],
    ['specBodyLimitBytes: 2000000', 'specBodyLimitBytes (2000000) is above bodyLimitBytes (1048576)'],
    ['connections: { api: { maxConnections: 0 } }', 'connections.api.maxConnections'],
    ['connections: { gateway: { headersTimeoutMs: 10 } }', 'connections.gateway.headersTimeoutMs'],
    ['connections: { gateway: { idleTimeoutMs: 10 } }', 'Unrecognized key'],
    [
      'connections: { gateway: { maxConnections: 10, maxConnectionsPerClient: 20 } }',
      'connections.gateway.maxConnectionsPerClient (20) is above its maxConnections (10)',
    ],
  ])('rejects the file %j', (file, message) => {
    expect(() => load({ config: '/etc/corral.yaml' }, {}, file)).toThrow(message);
  });
});

describe('advertisedGatewayUrl', () => {
  it('is the setting when given, else the bound address with a wildcard host replaced by the machine name', () => {
    const addr = (host: string) => ({ host, port: 8000 });
    expect(
      advertisedGatewayUrl(
        { advertiseGatewayUrl: 'http://gw-1.internal:80/', gatewayAddr: addr('0.0.0.0') },
        8000,
        'm',
      ),
    ).toBe('http://gw-1.internal:80');
    expect(advertisedGatewayUrl({ gatewayAddr: addr('10.1.2.3') }, 8123, 'm')).toBe('http://10.1.2.3:8123');
    expect(advertisedGatewayUrl({ gatewayAddr: addr('0.0.0.0') }, 8000, 'node-7')).toBe('http://node-7:8000');
    expect(advertisedGatewayUrl({ gatewayAddr: addr('::') }, 8000, 'node-7')).toBe('http://node-7:8000');
    expect(advertisedGatewayUrl({ gatewayAddr: addr('::1') }, 8000, 'node-7')).toBe('http://[::1]:8000');
  });
});
