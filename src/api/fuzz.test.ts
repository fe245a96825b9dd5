/**
 * Property tests: random and malformed bodies thrown at `endpoint/create` and `endpoint/update` of the real
 * API (wired as `corral serve` wires it) over every store. Whatever arrives, the answer is a 2xx or a 4xx
 * from the error catalogue (never a 5xx), and nothing invalid reaches the store.
 *
 * Reproduce a failure with the seed fast-check prints: FUZZ_SEED=<seed> npx vitest run src/api/fuzz.test.ts
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, PREFIX, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Endpoint, EndpointSpec } from '../domain/endpoint.js';
import type { Limits } from '../domain/limits.js';
import { type ValidationCatalog, validateSpec } from '../domain/validate.js';
import { API_ERROR_CATALOGUE } from '../errors/api-catalogue.js';
import { simulatedInventory, supportedCudaVersions } from '../gpu/inventory.js';
import type { Store } from '../store/store.js';

/** Runs per property: SQLite is fast enough for many; Postgres gets fewer so the suite stays short. */
const RUNS = { sqlite: 150, 'sqlite-thread': 30, postgres: 30 } as const;
/** A failing property shrinks its counterexample, which takes longer than a passing run. */
const TIMEOUT_MS = 90_000;
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

const CONFIG_TEXT = [
  // The fuzzer sends far more than the default 50 requests/s of one key; 429s would hide everything else.
  'rateLimit: {requestsPerSecond: 1000000, burst: 1000000}',
  'networkStorages:',
  '  - {id: shared, clusterID: c1, hostPath: /srv/shared, owners: all}',
].join('\n');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = (string | number)[];

interface Request {
  /** Raw body text; undefined sends no body at all. */
  payload: string | undefined;
  contentType: string | undefined;
}

interface Answer {
  status: number;
  body: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------------
// The oracle

/** Every answer is a 2xx, or a 4xx `{code, reason, message, metadata}` whose reason is in the catalogue. */
function checkAnswer({ status, body }: Answer): void {
  if (status >= 200 && status < 300) return;
  if (status < 400 || status >= 500) throw new Error(`status ${status} is neither a 2xx nor a 4xx`);
  if (!isRecord(body)) throw new Error(`a ${status} without an error object: ${JSON.stringify(body)}`);
  expect(Object.keys(body).sort()).toEqual(['code', 'message', 'metadata', 'reason']);
  const reason = body.reason;
  if (typeof reason !== 'string' || !Object.hasOwn(API_ERROR_CATALOGUE, reason)) {
    throw new Error(`reason ${JSON.stringify(reason)} is not in API_ERROR_CATALOGUE`);
  }
  expect(API_ERROR_CATALOGUE[reason as keyof typeof API_ERROR_CATALOGUE].status).toBe(status);
  expect(body.code).toBe(status);
  expect(typeof body.message === 'string' && body.message !== '').toBe(true);
  expect(isRecord(body.metadata)).toBe(true);
}

interface Oracle {
  limits: Limits;
  catalog: ValidationCatalog;
  /** GET endpoint/limit as the server answers it. */
  wireLimits: Record<string, number | string[]>;
  productIds: Set<string>;
}

/** The stored spec passes the app's own validation with the limits and catalogue the app has. */
function checkStoredSpec(spec: EndpointSpec, oracle: Oracle): void {
  const issues = validateSpec(spec, oracle.limits, oracle.catalog);
  if (issues.length > 0) throw new Error(`stored an invalid spec: ${JSON.stringify(issues)}`);
}

/** Independent of validate.ts: the endpoint as GET returns it is within what GET endpoint/limit reports. */
function checkWireEndpoint(wire: Record<string, unknown>, oracle: Oracle): void {
  const lim = oracle.wireLimits;
  const num = (key: string) => lim[key] as number;
  const within = (label: string, value: unknown, min: number, max: number) => {
    const n = typeof value === 'string' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
      throw new Error(`${label} = ${JSON.stringify(value)} is outside ${min}..${max}`);
    }
    return n;
  };
  const w = wire.workerConfig as Record<string, unknown>;
  const minNum = within('minNum', w.minNum, num('minWorkerNum'), num('maxWorkerNum'));
  const maxNum = within('maxNum', w.maxNum, num('minWorkerNum'), num('maxWorkerNum'));
  if (minNum > maxNum) throw new Error(`minNum ${minNum} > maxNum ${maxNum}`);
  within('freeTimeout', w.freeTimeout, num('minFreeTimeout'), num('maxFreeTimeout'));
  within('maxConcurrent', w.maxConcurrent, num('minConcurrencyNum'), num('maxConcurrencyNum'));
  within('gpuNum', w.gpuNum, num('minGPUNum'), num('maxGPUNum'));
  within('requestTimeout', w.requestTimeout, num('minRequestTimeout'), num('maxRequestTimeout'));
  const cuda = lim.cudaVersionList as string[];
  if (w.cudaVersion !== 'any' && !cuda.includes(w.cudaVersion as string)) {
    throw new Error(`cudaVersion ${JSON.stringify(w.cudaVersion)} is not in ${JSON.stringify(cuda)}`);
  }

  const ports = wire.ports as { port: unknown }[];
  if (ports.length !== 1) throw new Error(`${ports.length} ports`);
  const port = within('port', ports[0]?.port, 1, 65535);
  if (port >= 2222 && port <= 2224) throw new Error(`reserved port ${port}`);

  const policy = wire.policy as { type: unknown; value: unknown };
  if (policy.type === 'queue')
    within('policy.value', policy.value, num('minQueueWaitTime'), num('maxQueueWaitTime'));
  else if (policy.type === 'concurrency')
    within('policy.value', policy.value, num('minRequestNum'), num('maxRequestNum'));
  else throw new Error(`policy.type ${JSON.stringify(policy.type)}`);

  within('rootfsSize', wire.rootfsSize, num('minRootfsSize'), num('maxRootfsSize'));
  for (const v of wire.volumeMounts as { type: string; size: unknown; mountPath: string }[]) {
    if (v.type === 'local')
      within('volume size', v.size, num('minLocalVolumeSize'), num('maxLocalVolumeSize'));
    if (!v.mountPath.startsWith('/')) throw new Error(`mountPath ${JSON.stringify(v.mountPath)}`);
  }
  for (const p of wire.products as { id: string }[]) {
    if (!oracle.productIds.has(p.id)) throw new Error(`unknown product ${JSON.stringify(p.id)}`);
  }
  const appName = wire.appName as string;
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(appName) || appName.length > 63) {
    throw new Error(`appName ${JSON.stringify(appName)} is not a DNS label`);
  }
  const image = (wire.image as { image: string }).image;
  if (image.trim() === '' || /\s/.test(image)) throw new Error(`image ${JSON.stringify(image)}`);
  const keys = (wire.envs as { key: string }[]).map((e) => e.key);
  if (new Set(keys).size !== keys.length || keys.some((k) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))) {
    throw new Error(`env keys ${JSON.stringify(keys)}`);
  }
  if (!(wire.healthy as { path: string }).path.startsWith('/')) throw new Error('health path');
}

// ---------------------------------------------------------------------------------------------------
// Building bodies: a JSON value, optionally with one spot replaced by raw text that JSON.stringify cannot
// produce (a __proto__ key, NaN, a trailing comma...).

const RAW_VALUE = '@@raw-value@@';
const RAW_KEY = '@@raw-key@@';

/** The JSON value with one spot spliced as raw text. */
function toText(value: Json | undefined, raw?: string): string | undefined {
  if (value === undefined) return undefined;
  const text = JSON.stringify(value);
  if (raw === undefined) return text;
  return text
    .replace(JSON.stringify(RAW_VALUE), () => raw)
    .replace(`${JSON.stringify(RAW_KEY)}:0`, () => raw);
}

/** Every path in the value: the root, each object member and each array element. */
function pathsOf(value: Json, prefix: Path = []): Path[] {
  const paths: Path[] = [prefix];
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) paths.push(...pathsOf(v, [...prefix, i]));
  } else if (isRecord(value)) {
    for (const [key, v] of Object.entries(value)) paths.push(...pathsOf(v as Json, [...prefix, key]));
  }
  return paths;
}

const DELETE = Symbol('delete');

/** A deep copy of `root` with the value at `path` replaced (or removed). */
function setAt(root: Json, path: Path, value: Json | typeof DELETE): Json | undefined {
  if (path.length === 0) return value === DELETE ? undefined : value;
  const copy = structuredClone(root);
  let parent: Json = copy;
  for (const key of path.slice(0, -1)) parent = (parent as Record<string | number, Json>)[key] as Json;
  const last = path.at(-1) as string | number;
  if (value !== DELETE) (parent as Record<string | number, Json>)[last] = value;
  else if (Array.isArray(parent)) parent.splice(last as number, 1);
  else delete (parent as Record<string, Json>)[last];
  return copy;
}

/** Adds the raw-key marker to the object at `path` (or to the nearest enclosing object). */
function addRawKey(root: Json, path: Path): Json {
  for (let length = path.length; length >= 0; length--) {
    const prefix = path.slice(0, length);
    let target: Json | undefined = root;
    for (const key of prefix) target = (target as Record<string | number, Json>)[key];
    if (isRecord(target)) {
      return setAt(root, [...prefix, RAW_KEY], 0) as Json;
    }
  }
  return root;
}

// ---------------------------------------------------------------------------------------------------
// Arbitraries

const hugeString = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 64, max: 20_000 }).map((n) => 'x'.repeat(n)) },
  // Over the 1 MiB body limit: 413.
  { weight: 1, arbitrary: fc.constant('y'.repeat(1_100_000)) },
);

const edgeNumbers = fc.constantFrom(
  -1,
  0,
  1,
  2,
  8,
  9,
  20,
  21,
  100,
  101,
  255,
  256,
  257,
  300,
  301,
  1000,
  1001,
  2222,
  2223,
  2224,
  3600,
  3601,
  65535,
  65536,
  2 ** 31,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  1e21,
  1e308,
  -0,
  0.5,
  1.5,
  -2.5,
  Number.MIN_VALUE,
);

const numericStrings = fc.oneof(
  fc.integer({ min: -5, max: 70_000 }).map(String),
  fc.constantFrom(
    ' 5 ',
    '+3',
    '-1',
    '1e3',
    '0x10',
    '012',
    '',
    ' ',
    '5.0',
    '1_000',
    '８',
    '٣',
    '999999999999999',
    '9999999999999999',
    '99999999999999999999',
    'Infinity',
    'NaN',
    '8000\u0000',
    '\t8000\n',
  ),
);

const edgeStrings = fc.constantFrom(
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\uffff',
  '../etc',
  '/',
  '/a/../b',
  'A',
  'a',
  '-a',
  'a-',
  'any',
  '11.8',
  '12.4',
  'h100-80g',
  'shared',
  'c1',
  'queue',
  'concurrency',
  'local',
  'network',
  'CORRAL_WORKER_ID',
  '__proto__',
  'constructor',
  'a b',
  '\n',
  '😀',
);

/** Raw JSON text for one value: some valid (but unusual), most not. */
const rawValues = fc.constantFrom(
  '{"__proto__": {"minNum": 5}}',
  '{"__proto__": null}',
  '{"constructor": {"prototype": {"polluted": true}}}',
  '{"constructor": 1}',
  '{"a": 1, "a": 2}',
  'NaN',
  'Infinity',
  '-Infinity',
  'undefined',
  '01',
  '1.',
  '.5',
  "'x'",
  '[1,]',
  '{"a":1,}',
  '1e999',
  '-1e999',
  '"\\u0000"',
  '"\\ud800"',
  'tru',
  '{',
  '[',
  '"unterminated',
  '0x10',
  '[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
);

/** Raw text for one member added to an object. */
const rawMembers = fc.constantFrom(
  '"__proto__": {"minNum": 5}',
  '"__proto__": []',
  '"constructor": {"prototype": {"polluted": true}}',
  '"constructor": {}',
  '"prototype": {}',
  '"hasOwnProperty": 1',
  '"toString": "x"',
  '"id": 1',
  'unquoted: 1',
  '"dangling":',
);

/** A value of the wrong type, out of range or otherwise odd, for any spot of a body. */
const badValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json> },
  {
    weight: 2,
    arbitrary: fc.constantFrom<Json>(true, false, null, {}, [], [[]], [[1]], [{}], { a: 1 }, [null]),
  },
  { weight: 3, arbitrary: edgeNumbers },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 3, arbitrary: numericStrings },
  { weight: 3, arbitrary: edgeStrings },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: hugeString },
  {
    weight: 2,
    arbitrary: fc.array(fc.array(fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<Json>, { maxLength: 3 }), {
      maxLength: 3,
    }),
  },
);

type Mutation =
  | { kind: 'set'; at: number; value: Json }
  | { kind: 'delete'; at: number }
  | { kind: 'wrap'; at: number; depth: number }
  | { kind: 'rawValue'; at: number; raw: string }
  | { kind: 'rawMember'; at: number; raw: string };

/** One change to a valid body; `at` picks the path (modulo the number of paths the body has). */
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: badValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('wrap' as const),
      at: fc.nat(),
      depth: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('rawValue' as const), at: fc.nat(), raw: rawValues }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('rawMember' as const), at: fc.nat(), raw: rawMembers }),
  },
);

function applyMutation(body: Json, m: Mutation): string | undefined {
  const paths = pathsOf(body);
  const path = paths[m.at % paths.length] as Path;
  switch (m.kind) {
    case 'set':
      return toText(setAt(body, path, m.value));
    case 'delete':
      return toText(setAt(body, path, DELETE));
    case 'wrap': {
      let current = path.reduce<Json | undefined>(
        (v, key) => (v as Record<string | number, Json>)[key],
        body,
      ) as Json;
      for (let i = 0; i < m.depth; i++) current = [current];
      return toText(setAt(body, path, current));
    }
    case 'rawValue':
      return toText(setAt(body, path, RAW_VALUE), m.raw);
    case 'rawMember':
      return toText(addRawKey(body, path), m.raw);
  }
}

const contentType = fc.constantFrom<string | undefined>(
  'application/json',
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  undefined,
);

/** Whole bodies that are not a JSON object, or not JSON at all. */
const oddPayload = fc.oneof(
  fc.constantFrom<string | undefined>(
    undefined,
    '',
    ' ',
    '\n\t',
    'null',
    'true',
    '0',
    '-1',
    '"x"',
    '[]',
    '[{}]',
    '{}',
  ),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: 'binary-ascii', maxLength: 60 }),
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
  rawValues,
  fc.constantFrom(
    '{"__proto__": {}}',
    '{"constructor": {"prototype": {}}}',
    '{"endpoint": {"__proto__": {}}}',
  ),
  // Valid JSON cut short.
  fc.nat().map((n) => {
    const text = JSON.stringify(originalClientCreateBody());
    return text.slice(0, n % text.length);
  }),
);

/** A value or, now and then, omitted (undefined) or null (which the contract reads as omitted). */
function maybe<T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined | null> {
  return fc.oneof(
    { weight: 8, arbitrary },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(null) },
  );
}

/** Usually a valid value, now and then an odd one: with a dozen fields, about half the bodies succeed. */
function mostly<T, U>(valid: fc.Arbitrary<T>, odd: fc.Arbitrary<U>): fc.Arbitrary<T | U> {
  return fc.oneof({ weight: 30, arbitrary: valid }, { weight: 1, arbitrary: odd });
}

/**
 * An integer in the range in one of the forms clients send (number, numeric string, padded string), or
 * now and then one just outside it or an odd number.
 */
function intish(min: number, max: number): fc.Arbitrary<Json> {
  const inside = fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max));
  const forms = fc.oneof(
    { weight: 6, arbitrary: inside as fc.Arbitrary<Json> },
    { weight: 2, arbitrary: inside.map(String) },
    { weight: 1, arbitrary: inside.map((n) => ` ${n} `) },
  );
  return mostly(forms, fc.oneof(fc.constantFrom(min - 1, max + 1, String(max + 1)), edgeNumbers));
}

/** An object, or (as older clients send it) a one-element array holding it, or a bad two-element one. */
function single(arbitrary: fc.Arbitrary<Json>): fc.Arbitrary<Json> {
  return mostly(
    fc.oneof(
      arbitrary,
      arbitrary.map((v) => [v]),
    ),
    arbitrary.map((v) => [v, v]),
  );
}

function partial(shape: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Json> {
  return fc.record(shape, { requiredKeys: [] }) as fc.Arbitrary<Json>;
}

/** Endpoint fields that are mostly plausible: each usually valid, so that many bodies succeed. */
function plausibleFields(authId: string): fc.Arbitrary<Record<string, Json>> {
  const port = mostly(
    fc.oneof(
      fc.integer({ min: 1, max: 2221 }),
      fc.integer({ min: 2225, max: 65535 }),
      fc.constantFrom(8000, '8000', 1, 65535),
    ),
    fc.oneof(fc.constantFrom(0, 2222, 2223, 2224, 65536, '2222', -1), edgeNumbers),
  );
  return fc.record(
    {
      name: maybe(
        mostly(
          fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 30 })),
          fc.oneof(hugeString, fc.constant('n'.repeat(221))),
        ),
      ),
      appName: maybe(
        mostly(
          fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?$/),
          fc.oneof(fc.stringMatching(/^[a-z0-9-]{0,70}$/), edgeStrings),
        ),
      ),
      workerConfig: maybe(
        single(
          partial({
            // minNum mostly small, so that minNum > maxNum happens now and then rather than half the time.
            minNum: fc.oneof({ weight: 4, arbitrary: intish(0, 2) }, { weight: 1, arbitrary: intish(0, 20) }),
            maxNum: intish(2, 20),
            freeTimeout: intish(1, 3600),
            maxConcurrent: intish(1, 256),
            gpuNum: intish(1, 8),
            cudaVersion: mostly(
              fc.constantFrom('any', '11.8', '12.4'),
              fc.constantFrom('12.9', '', 'ANY', 12.4),
            ),
            requestTimeout: intish(1, 3600),
          }),
        ),
      ),
      ports: mostly(
        fc.tuple(fc.oneof(fc.record({ port }), port)),
        fc.array(fc.record({ port }), { maxLength: 3 }),
      ),
      policy: maybe(
        single(
          partial({
            type: mostly(fc.constantFrom('queue', 'concurrency'), fc.constantFrom('QUEUE', 'other', '')),
            value: intish(1, 300),
          }),
        ),
      ),
      image: single(
        fc.record(
          {
            image: mostly(
              fc.constantFrom(
                'corral/worker:1',
                'registry.example.com/sdxl:1.0',
                'localhost:5000/a/b@sha256:00',
              ),
              fc.constantFrom('a b', '', ' ', 'x\n'),
            ),
            authId: mostly(fc.constantFrom('', authId), fc.constantFrom('nope', 'a\u0000')),
            command: fc.string({ maxLength: 20 }),
          },
          { requiredKeys: ['image'] },
        ),
      ),
      products: maybe(
        fc.array(
          mostly(
            fc.oneof(
              fc.record({ id: fc.constantFrom('h100-80g', 'a100-40g') }),
              fc.constantFrom('h100-80g', 'a100-40g'),
            ),
            fc.oneof(fc.record({ id: fc.constantFrom('nope', '') }), fc.constant('nope')),
          ),
          { maxLength: 2 },
        ),
      ),
      rootfsSize: maybe(intish(100, 100)),
      volumeMounts: maybe(
        fc.uniqueArray(
          mostly(
            fc.oneof(
              {
                weight: 4,
                arbitrary: fc.record(
                  {
                    type: fc.constant('local'),
                    size: intish(0, 100),
                    mountPath: fc.constantFrom('/data', '/models', '/a/b'),
                  },
                  { requiredKeys: ['type', 'mountPath'] },
                ),
              },
              {
                weight: 1,
                arbitrary: fc.record({
                  type: fc.constant('network'),
                  id: fc.constant('shared'),
                  mountPath: fc.constant('/shared'),
                }),
              },
            ),
            partial({
              type: fc.constantFrom('local', 'network', 'nfs'),
              size: intish(0, 100),
              id: fc.constantFrom('', 'shared', 'other'),
              mountPath: fc.constantFrom('/data', 'data', '/a/../b', ''),
            }),
          ),
          // Mostly distinct mount paths; a repeated one is rejected, which the odd branch still produces.
          { maxLength: 2, selector: (v) => (v as { mountPath?: unknown }).mountPath },
        ),
      ),
      clusterID: maybe(mostly(fc.constantFrom('', 'c1'), fc.constantFrom('c2', 'x'.repeat(256)))),
      envs: maybe(
        fc.uniqueArray(
          fc.record(
            {
              key: mostly(
                fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/),
                fc.constantFrom('1X', 'CORRAL_WORKER_ID', '', 'a b'),
              ),
              value: fc.string({ maxLength: 20 }),
            },
            { requiredKeys: ['key'] },
          ),
          { maxLength: 3, selector: (e) => e.key },
        ),
      ),
      healthy: maybe(
        single(
          partial({
            path: mostly(fc.constantFrom('/health', '/', '/ready?x=1'), fc.constantFrom('health', '')),
            initialDelay: intish(0, 3600),
            period: intish(1, 300),
            timeout: intish(1, 300),
            successThreshold: intish(1, 100),
            failureThreshold: intish(1, 100),
          }),
        ),
      ),
    },
    { requiredKeys: ['ports', 'image'] },
  ) as fc.Arbitrary<Record<string, Json>>;
}

// ---------------------------------------------------------------------------------------------------

describe.each(storeTargets())('create and update under fuzzing on $name', (target) => {
  const numRuns = RUNS[target.name];
  let api: TestApi;
  let store: Store;
  let dispose: () => Promise<void>;
  let oracle: Oracle;
  let authId: string;
  /** Owner A's endpoint that update bodies aim at; owner B's must never change. */
  let targetId: string;
  let otherOwnersId: string;

  beforeAll(async () => {
    const opened = await target.open();
    store = opened.store;
    dispose = opened.dispose;
    api = await createTestApi(store, { configText: CONFIG_TEXT });
    const saved = await api.call('POST', 'repository/auth/save', { name: 'r', username: 'u', password: 'p' });
    authId = saved.body.id;
    targetId = (await api.call('POST', 'endpoint/create', originalClientCreateBody())).body.id;
    otherOwnersId = (await api.call('POST', 'endpoint/create', originalClientCreateBody(), api.keyB)).body.id;
    const wireLimits = (await api.call('GET', 'endpoint/limit')).body;
    const products = (await api.call('GET', 'products')).body.products as { id: string }[];
    const gpus = api.config.gpus.kind === 'simulated' ? simulatedInventory(api.config.gpus.groups) : [];
    oracle = {
      limits: { ...api.config.limits, cudaVersions: supportedCudaVersions(gpus) },
      catalog: {
        productIds: new Set(products.map((p) => p.id)),
        networkStorages: new Map(api.config.networkStorages.map((s) => [s.id, s.clusterId])),
        credentialIds: new Set([authId]),
      },
      wireLimits,
      productIds: new Set(products.map((p) => p.id)),
    };
    expect(targetId).toBeTypeOf('string');
    expect(otherOwnersId).toBeTypeOf('string');
  });
  afterAll(async () => {
    await api?.app.close();
    await dispose?.();
  });

  async function send(path: string, request: Request): Promise<Answer> {
    const response = await api.app.inject({
      method: 'POST',
      url: `${PREFIX}/${path}`,
      headers: {
        authorization: `Bearer ${api.keyA}`,
        ...(request.contentType === undefined ? {} : { 'content-type': request.contentType }),
      },
      ...(request.payload === undefined ? {} : { payload: request.payload }),
    });
    let body: unknown;
    try {
      body = response.body === '' ? undefined : JSON.parse(response.body);
    } catch {
      throw new Error(
        `answered ${response.statusCode} with a body that is not JSON: ${response.body.slice(0, 300)}`,
      );
    }
    return { status: response.statusCode, body };
  }

  const snapshot = async () =>
    new Map((await store.endpoints.listAll()).map((e): [string, Endpoint] => [e.id, e]));

  /** Sends the request and checks the answer and the store; a failure names the body that caused it. */
  async function exercise(operation: 'create' | 'update', request: Request): Promise<Answer> {
    const before = await snapshot();
    const answer = await send(`endpoint/${operation}`, request);
    if (answer.status < 300) tally.accepted += 1;
    else tally.rejected += 1;
    try {
      checkAnswer(answer);
      const after = await snapshot();
      const changed = [...after.keys()].filter(
        (id) => !before.has(id) || JSON.stringify(before.get(id)) !== JSON.stringify(after.get(id)),
      );
      const removed = [...before.keys()].filter((id) => !after.has(id));
      expect(removed).toEqual([]);
      if (answer.status >= 400) {
        // Nothing reached the store: same endpoints, each exactly as it was.
        expect(changed).toEqual([]);
        return answer;
      }
      const body = answer.body as Record<string, unknown>;
      const id = operation === 'create' ? (body.id as string) : targetId;
      if (operation === 'create') {
        expect(body.id).toBeTypeOf('string');
        expect(before.has(id)).toBe(false);
      } else {
        expect((body.endpoint as Record<string, unknown>).id).toBe(targetId);
      }
      // Only the created or updated endpoint may differ, and only owner A's.
      expect(changed.filter((c) => c !== id)).toEqual([]);
      const stored = after.get(id);
      if (!stored) throw new Error(`endpoint ${id} is not in the store after a ${answer.status}`);
      expect(stored.ownerId).toBe('owner-a');
      checkStoredSpec(stored.spec, oracle);
      const got = await api.call('GET', `endpoint?id=${id}`);
      expect(got.status).toBe(200);
      checkWireEndpoint(got.body.endpoint, oracle);
      if (operation === 'update') expect(body.endpoint).toEqual(got.body.endpoint);
      return answer;
    } catch (error) {
      const shown =
        request.payload === undefined ? '(no body)' : JSON.stringify(request.payload.slice(0, 600));
      throw new Error(
        `${operation} with content-type ${request.contentType ?? '(none)'} and body ${shown}` +
          `${(request.payload?.length ?? 0) > 600 ? ` (${request.payload?.length} chars)` : ''}` +
          ` answered ${answer.status} ${JSON.stringify(answer.body)?.slice(0, 600)}: ${(error as Error).message}`,
      );
    }
  }

  /** Answers of the property being run: a property that only ever sees 400s would prove little. */
  let tally = { accepted: 0, rejected: 0 };

  const run = async <Ts extends unknown[]>(
    property: fc.IAsyncProperty<Ts>,
    options: { examples?: Ts[]; expectBoth?: boolean } = {},
  ) => {
    tally = { accepted: 0, rejected: 0 };
    await fc.assert(property, { numRuns, seed: SEED, examples: options.examples ?? [] });
    // With SQLite's many runs, a property meant to produce both outcomes does so with near certainty.
    if (options.expectBoth && target.name === 'sqlite') {
      expect(tally.accepted, 'bodies accepted').toBeGreaterThan(0);
      expect(tally.rejected, 'bodies rejected').toBeGreaterThan(0);
    }
  };

  const createBase = (): Json[] => [
    originalClientCreateBody() as Json,
    {
      endpoint: {
        name: 'object-form',
        workerConfig: { minNum: '0', maxNum: '3', freeTimeout: '60', maxConcurrent: '4', gpuNum: '1' },
        ports: [8080],
        policy: { type: 'concurrency', value: '10' },
        image: { image: 'corral/worker:1', authId, command: '' },
        products: ['a100-40g'],
        volumeMounts: [{ type: 'network', id: 'shared', mountPath: '/shared' }],
        clusterID: 'c1',
        envs: [{ key: 'A', value: '1' }],
        healthy: [{ path: '/ready', period: '5' }],
      },
    },
  ];

  const updateBase = async (): Promise<Json[]> => {
    const echo = (await api.call('GET', `endpoint?id=${targetId}`)).body.endpoint as Json;
    return [
      echo,
      { id: targetId, workerConfig: {}, ports: [{ port: 8000 }], policy: {}, image: {} },
      {
        id: targetId,
        workerConfig: [{ maxNum: 2 }],
        ports: ['8000'],
        policy: [{}],
        image: [{ authId }],
        envs: [],
      },
    ];
  };

  it(
    'rejects a deliberately invalid body, and its checks catch a 5xx and an invalid spec',
    async () => {
      const invalid = originalClientCreateBody({
        workerConfig: [{ minNum: 3, maxNum: 1, freeTimeout: 300, maxConcurrent: 2, gpuNum: 1 }],
      });
      const answer = await exercise('create', {
        payload: JSON.stringify(invalid),
        contentType: 'application/json',
      });
      expect(answer.status).toBe(400);
      expect((answer.body as { reason: string }).reason).toBe('MIN_ABOVE_MAX');

      // The oracle itself can fail: a 500, an unknown reason, a bad shape and an invalid spec are all caught.
      const internal = { code: 500, reason: 'INTERNAL', message: 'x', metadata: {} };
      expect(() => checkAnswer({ status: 500, body: internal })).toThrow();
      expect(() => checkAnswer({ status: 400, body: { ...internal, code: 400, reason: 'NOPE' } })).toThrow();
      expect(() =>
        checkAnswer({ status: 400, body: { code: 400, reason: 'INVALID_FIELD', message: 'x' } }),
      ).toThrow();
      expect(() =>
        checkAnswer({ status: 404, body: { ...internal, code: 404, reason: 'INVALID_FIELD' } }),
      ).toThrow();
      const stored = await store.endpoints.get('owner-a', targetId);
      if (!stored) throw new Error('the target endpoint is missing');
      checkStoredSpec(stored.spec, oracle);
      expect(() => checkStoredSpec({ ...stored.spec, port: 2222 }, oracle)).toThrow();
      const wire = (await api.call('GET', `endpoint?id=${targetId}`)).body.endpoint;
      checkWireEndpoint(wire, oracle);
      expect(() =>
        checkWireEndpoint({ ...wire, workerConfig: { ...wire.workerConfig, minNum: 3 } }, oracle),
      ).toThrow();
      expect(() => checkWireEndpoint({ ...wire, ports: [{ port: 2223 }] }, oracle)).toThrow();
    },
    TIMEOUT_MS,
  );

  it(
    'create: random JSON values as the body and as the endpoint',
    async () => {
      await run(
        fc.asyncProperty(
          fc.jsonValue({ maxDepth: 4 }),
          fc.boolean(),
          contentType,
          async (value, wrapped, type) => {
            const body = wrapped ? { endpoint: value } : value;
            await exercise('create', { payload: JSON.stringify(body), contentType: type });
          },
        ),
      );
    },
    TIMEOUT_MS,
  );

  it(
    'create: a valid body with one field mutated',
    async () => {
      const bases = createBase();
      await run(
        fc.asyncProperty(fc.nat(bases.length - 1), mutation, contentType, async (which, m, type) => {
          await exercise('create', { payload: applyMutation(bases[which] as Json, m), contentType: type });
        }),
        {
          expectBoth: true,
          examples: [
            [
              0,
              {
                kind: 'set',
                at: pathIndex(bases[0] as Json, ['endpoint', 'image', 0, 'authId']),
                value: 'a\u0000',
              },
              'application/json',
            ],
            [
              0,
              { kind: 'set', at: pathIndex(bases[0] as Json, ['endpoint', 'name']), value: 'a\u0000b' },
              'application/json',
            ],
          ],
        },
      );
    },
    TIMEOUT_MS,
  );

  it(
    'create: plausible bodies near the limits',
    async () => {
      await run(
        fc.asyncProperty(plausibleFields(authId), fc.boolean(), async (fields, asRaw) => {
          const payload = JSON.stringify({ endpoint: fields });
          await exercise('create', { payload, contentType: asRaw ? 'text/plain' : 'application/json' });
        }),
        { expectBoth: true },
      );
    },
    TIMEOUT_MS,
  );

  it(
    'create: no body, non-object bodies and text that is not JSON',
    async () => {
      await run(
        fc.asyncProperty(oddPayload, contentType, async (payload, type) => {
          await exercise('create', { payload, contentType: type });
        }),
      );
    },
    TIMEOUT_MS,
  );

  it(
    'update: a valid body (as clients echo it) with one field mutated',
    async () => {
      const bases = await updateBase();
      await run(
        fc.asyncProperty(fc.nat(bases.length - 1), mutation, contentType, async (which, m, type) => {
          await exercise('update', { payload: applyMutation(bases[which] as Json, m), contentType: type });
        }),
        {
          expectBoth: true,
          examples: [
            [
              1,
              { kind: 'set', at: pathIndex(bases[1] as Json, ['id']), value: 'a\u0000b' },
              'application/json',
            ],
            [
              1,
              { kind: 'set', at: pathIndex(bases[1] as Json, ['id']), value: otherOwnersId },
              'application/json',
            ],
          ],
        },
      );
    },
    TIMEOUT_MS,
  );

  it(
    'update: random fields, ids and bodies',
    async () => {
      const ids = fc.oneof(
        { weight: 6, arbitrary: fc.constant<Json>(targetId) },
        { weight: 1, arbitrary: fc.constant<Json>(otherOwnersId) },
        {
          weight: 1,
          arbitrary: fc.constantFrom<Json>('nope', '', ' ', 0, null, targetId.toUpperCase(), ` ${targetId} `),
        },
        { weight: 1, arbitrary: badValue },
      );
      const body = fc.oneof(
        {
          weight: 5,
          arbitrary: fc
            .tuple(ids, plausibleFields(authId))
            .map(([id, fields]) => JSON.stringify({ id, ...fields }) as string | undefined),
        },
        {
          weight: 2,
          arbitrary: fc
            .tuple(
              ids,
              fc.dictionary(
                fc.constantFrom(
                  'name',
                  'appName',
                  'workerConfig',
                  'ports',
                  'policy',
                  'image',
                  'products',
                  'rootfsSize',
                  'volumeMounts',
                  'clusterID',
                  'envs',
                  'healthy',
                ),
                badValue,
                { maxKeys: 3 },
              ),
            )
            .map(([id, fields]) => JSON.stringify({ id, ...fields }) as string | undefined),
        },
        {
          weight: 1,
          arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) as string | undefined),
        },
        { weight: 1, arbitrary: oddPayload },
      );
      await run(
        fc.asyncProperty(body, contentType, async (payload, type) => {
          await exercise('update', { payload, contentType: type });
        }),
        { expectBoth: true },
      );
    },
    TIMEOUT_MS,
  );
});

function pathIndex(body: Json, path: Path): number {
  const index = pathsOf(body).findIndex((p) => JSON.stringify(p) === JSON.stringify(path));
  if (index < 0) throw new Error(`no path ${JSON.stringify(path)}`);
  return index;
}
