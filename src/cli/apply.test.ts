import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, type RecordedRequest, runCommand } from '../../test/support/cli-harness.js';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import type { WireEndpoint } from '../client/index.js';
import { makeApplyCommand } from './apply.js';

afterEach(() => {
  process.exitCode = undefined;
});

const WITH_ENV =
  'name: echo\nimage: {image: corral/echo:1}\nports: [{port: 8000}]\nenvs: [{key: MODEL, value: tiny}]\n';
const WITHOUT_ENV = 'name: echo\nimage: {image: corral/echo:1}\nports: [{port: 8000}]\n';

/** What the fake create stores for what a file leaves out: the documented defaults, as an update sends them. */
const CREATE_DEFAULTS = {
  products: [],
  workerConfig: {
    minNum: 0,
    maxNum: 1,
    freeTimeout: 60,
    maxConcurrent: 1,
    gpuNum: 1,
    cudaVersion: 'any',
    requestTimeout: 300,
    keepFrozen: 0,
    keepSuspended: 0,
  },
  policy: { type: 'queue', value: 4 },
} as unknown as Partial<WireEndpoint<number>>;

/**
 * A small server in memory: create stores the endpoint; update lays the body over it one level deep, as the API
 * does (so an update that leaves `envs` out would keep them).
 */
function server(files: Record<string, string>) {
  const stored: WireEndpoint<number>[] = [];
  const merge = (request: RecordedRequest) => {
    const body = request.body as Record<string, unknown>;
    const current = stored.find((e) => e.id === body.id);
    if (current === undefined) return Response.json({ reason: 'ENDPOINT_NOT_FOUND' }, { status: 404 });
    for (const [key, value] of Object.entries(body)) {
      if (key === 'id') continue;
      const old = (current as unknown as Record<string, unknown>)[key];
      (current as unknown as Record<string, unknown>)[key] =
        typeof value === 'object' && value !== null && !Array.isArray(value) && typeof old === 'object'
          ? { ...old, ...value }
          : value;
    }
    return Response.json({ endpoint: current });
  };
  return {
    stored,
    harness: makeHarness({
      files,
      routes: {
        'GET endpoints': { respond: () => Response.json({ endpoints: stored, total: stored.length }) },
        'GET endpoint': {
          respond: (r) => {
            const found = stored.find((e) => e.id === r.query.id);
            return found === undefined
              ? Response.json({ reason: 'ENDPOINT_NOT_FOUND', message: 'none' }, { status: 404 })
              : Response.json({ endpoint: structuredClone(found) });
          },
        },
        'POST endpoint/create': {
          respond: (r) => {
            const fields = (r.body as { endpoint: Record<string, unknown> }).endpoint;
            stored.push(
              sampleWireEndpoint(8000, {
                id: `ep-${stored.length + 1}`,
                name: String(fields.name),
                envs: (fields.envs as WireEndpoint['envs'] | undefined) ?? [],
                ...CREATE_DEFAULTS,
              }),
            );
            return Response.json({ id: `ep-${stored.length}` });
          },
        },
        'POST endpoint/update': { respond: merge },
      },
    }),
  };
}

describe('corral apply', () => {
  it('creates by name, changes nothing the second time, and removes an env taken out of the file', async () => {
    const { stored, harness: h } = server({ 'a.yaml': WITH_ENV, 'b.yaml': WITHOUT_ENV });
    await runCommand(makeApplyCommand(h.deps), ['-f', 'a.yaml']);
    await runCommand(makeApplyCommand(h.deps), ['-f', 'a.yaml']);
    expect(stored).toHaveLength(1);
    expect(stored[0]?.envs).toEqual([{ key: 'MODEL', value: 'tiny' }]);
    await runCommand(makeApplyCommand(h.deps), ['-f', 'b.yaml']);
    expect(h.err()).toBe('');
    expect(h.out()).toBe(
      [
        'created endpoint ep-1 (echo)',
        'unchanged endpoint ep-1 (echo)',
        'updated endpoint ep-1 (echo)',
        '',
      ].join('\n'),
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]?.envs).toEqual([]);
  });

  it('sends the whole spec on update: what the file leaves out takes its default', async () => {
    const { harness: h } = server({ 'b.yaml': WITHOUT_ENV });
    await runCommand(makeApplyCommand(h.deps), ['-f', 'b.yaml']);
    await runCommand(makeApplyCommand(h.deps), ['-f', 'b.yaml']);
    const update = h.requests.find((r) => r.path.endsWith('endpoint/update'));
    expect(update?.body).toMatchObject({
      id: 'ep-1',
      envs: [],
      volumeMounts: [],
      products: [],
      public: false,
      image: { image: 'corral/echo:1', authId: '', command: '' },
      workerConfig: { minNum: 0, maxNum: 1 },
      healthy: { path: '/health' },
    });
  });

  it('needs a name, and refuses a name two endpoints share', async () => {
    const { stored, harness: h } = server({
      'n.yaml': 'image: {image: a:1}\nports: [{port: 80}]\n',
      'b.yaml': WITHOUT_ENV,
    });
    await runCommand(makeApplyCommand(h.deps), ['-f', 'n.yaml']);
    expect(h.err()).toBe('error: apply finds the endpoint by its name: give the file a name\n');
    stored.push(
      sampleWireEndpoint(8000, { id: 'ep-a', name: 'echo' }),
      sampleWireEndpoint(8000, { id: 'ep-b', name: 'echo' }),
    );
    await runCommand(makeApplyCommand(h.deps), ['-f', 'b.yaml']);
    expect(h.err()).toContain('2 endpoints are named "echo" (ep-a, ep-b): apply needs the name to be unique');
    expect(h.requests.filter((r) => r.method === 'POST')).toEqual([]);
  });
});
