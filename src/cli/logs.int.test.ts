import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type CannedAnswer,
  makeHarness,
  type RecordedRequest,
  runCommand,
} from '../../test/support/cli-harness.js';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import type { WireWorker } from '../client/index.js';
import { type InterruptListener, makeLogsCommand } from './logs.js';

const PREFIX = '/gpu-instance/openapi/v1/';

afterEach(() => {
  process.exitCode = undefined;
});

function worker(id: string, state = 'running'): WireWorker {
  return { id, state: { state, error: '', message: '' }, log: '', metrics: '', healthy: state === 'running' };
}

function ended(id: string) {
  return {
    id,
    endedAt: '2026-11-21T23:30:09.871Z',
    failed: true,
    reason: 'worker exited with code 3',
    truncated: false,
    log: '',
  };
}

const endpointNotFound = {
  code: 404,
  reason: 'ENDPOINT_NOT_FOUND',
  message: 'no endpoint "ep-1"',
  metadata: {},
};

function endpointRequests(requests: RecordedRequest[]): number {
  return requests.filter((r) => r.path === `${PREFIX}endpoint`).length;
}

function endpointWith(ids: string[]): CannedAnswer {
  return { body: { endpoint: sampleWireEndpoint(8000, { workers: ids.map((id) => worker(id)) }) } };
}

/**
 * A text/plain answer sending `lines` a few ms apart; then it ends, or with `hold` stays open (like
 * a followed log) until fetch's signal aborts, which errors the body as real fetch does.
 */
function textLines(lines: string[], signal: AbortSignal | undefined, hold = false): Response {
  const encoder = new TextEncoder();
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      signal?.addEventListener(
        'abort',
        () => {
          try {
            controller.error(new DOMException('This operation was aborted', 'AbortError'));
          } catch {
            // already closed
          }
        },
        { once: true },
      );
    },
    async pull(controller) {
      const line = lines[next];
      if (line !== undefined) {
        next += 1;
        await new Promise((resolve) => setTimeout(resolve, 2));
        controller.enqueue(encoder.encode(`${line}\n`));
      } else if (hold) {
        await new Promise<void>(() => undefined);
      } else {
        controller.close();
      }
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' } });
}

/** The log route, answering per worker id; `hold` keeps every stream open until aborted. */
function logRoute(byWorker: Record<string, string[] | CannedAnswer>, hold = false): CannedAnswer {
  return {
    respond: (request: RecordedRequest, signal) => {
      const answer = byWorker[request.query.worker ?? ''];
      if (answer === undefined || !Array.isArray(answer)) {
        const error = answer ?? workerNotFound;
        return new Response(JSON.stringify(error.body), { status: error.status ?? 200 });
      }
      return textLines(answer, signal, hold);
    },
  };
}

const workerNotFound = {
  status: 404,
  body: { code: 404, reason: 'WORKER_NOT_FOUND', message: 'endpoint ep-1 has no worker "w-9"', metadata: {} },
};

function logRequests(requests: RecordedRequest[]): RecordedRequest[] {
  return requests.filter((r) => r.path === `${PREFIX}endpoint/worker/log`);
}

/** An interrupt the test fires by hand, in place of Ctrl-C. */
function fakeInterrupt(): { listener: InterruptListener; fire: () => void; listening: () => boolean } {
  let stop: (() => void) | undefined;
  let listening = false;
  return {
    listener: (onStop) => {
      stop = onStop;
      listening = true;
      return () => {
        listening = false;
      };
    },
    fire: () => stop?.(),
    listening: () => listening,
  };
}

describe('corral logs', () => {
  it("prints the single worker's lines without a prefix", async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint': endpointWith(['w-1']),
        'GET endpoint/worker/log': logRoute({ 'w-1': ['a', 'b'] }),
      },
    });
    await runCommand(makeLogsCommand(h.deps), ['ep-1', '--tail', '20']);
    expect(h.err()).toBe('');
    expect(process.exitCode).toBeUndefined();
    expect(h.out()).toBe('a\nb\n');
    // One read finds the endpoint the argument names (an id, appName or name) and its workers.
    expect(h.requests.map((r) => r.path)).toEqual([`${PREFIX}endpoint`, `${PREFIX}endpoint/worker/log`]);
    expect(h.requests[1]).toMatchObject({
      query: { id: 'ep-1', worker: 'w-1', tail: '20' },
      authorization: 'Bearer sk_env_key',
    });
  });

  it('prefixes each line with its worker when the endpoint has several', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint': endpointWith(['w-1', 'w-2']),
        'GET endpoint/worker/log': logRoute({ 'w-1': ['one', 'two'], 'w-2': ['three', ''] }),
      },
    });
    await runCommand(makeLogsCommand(h.deps), ['ep-1']);
    expect(h.err()).toBe('');
    const lines = h.out().split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.sort()).toEqual(['[w-1] one', '[w-1] two', '[w-2] ', '[w-2] three']);
    // Each worker's own lines keep their order.
    expect(lines.filter((l) => l.startsWith('[w-1]'))).toEqual(['[w-1] one', '[w-1] two']);
    expect(logRequests(h.requests).map((r) => r.query)).toEqual([
      { id: 'ep-1', worker: 'w-1' },
      { id: 'ep-1', worker: 'w-2' },
    ]);
  });

  it('follows every worker at once until interrupted, then ends cleanly', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint': endpointWith(['w-1', 'w-2']),
        'GET endpoint/worker/log': logRoute({ 'w-1': ['from one'], 'w-2': ['from two'] }, true),
      },
    });
    const interrupt = fakeInterrupt();
    const done = runCommand(makeLogsCommand(h.deps, interrupt.listener), ['ep-1', '-f']);
    // Both streams stay open: both lines can only arrive if they are read concurrently.
    await vi.waitFor(() => {
      expect(h.out()).toContain('[w-1] from one\n');
      expect(h.out()).toContain('[w-2] from two\n');
    });
    expect(interrupt.listening()).toBe(true);
    interrupt.fire();
    await done;
    expect(h.err()).toBe('');
    expect(process.exitCode).toBeUndefined();
    expect(interrupt.listening()).toBe(false);
    expect(logRequests(h.requests).map((r) => r.query.follow)).toEqual(['1', '1']);
  });

  it('streams only --worker, without asking for the endpoint, and prints lines as they arrive', async () => {
    const h = makeHarness({
      routes: { 'GET endpoint/worker/log': logRoute({ 'w-7': ['ready', 'serving'] }, true) },
    });
    const interrupt = fakeInterrupt();
    const done = runCommand(makeLogsCommand(h.deps, interrupt.listener), [
      'ep-1',
      '--worker',
      'w-7',
      '--follow',
    ]);
    await vi.waitFor(() => expect(h.out()).toBe('ready\nserving\n'));
    interrupt.fire();
    await done;
    expect(h.requests).toHaveLength(1);
    expect(h.requests[0]?.query).toEqual({ id: 'ep-1', worker: 'w-7', follow: '1' });
    expect(process.exitCode).toBeUndefined();
  });

  it('says clearly that an endpoint without workers, running or ended, has no log, and exits 1', async () => {
    for (const ended of [{ body: { workers: [] } }, undefined]) {
      // undefined: a server older than GET endpoint/worker/ended (the harness answers 404 NOT_FOUND).
      const h = makeHarness({
        routes: {
          'GET endpoint': endpointWith([]),
          ...(ended ? { 'GET endpoint/worker/ended': ended } : {}),
        },
      });
      await runCommand(makeLogsCommand(h.deps), ['ep-1']);
      expect(h.out()).toBe('');
      expect(h.err()).toBe(
        'error: endpoint ep-1 has no workers, so there is no log to show (endpoint state: serving); ' +
          'its events: corral endpoints log ep-1\n',
      );
      expect(process.exitCode).toBe(1);
      expect(logRequests(h.requests)).toEqual([]);
      process.exitCode = undefined;
    }
  });

  it('shows the kept output of the worker that ended last when none is left, and says so', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint': endpointWith([]),
        'GET endpoint/worker/ended': { body: { workers: [ended('w-3'), ended('w-2')] } },
        'GET endpoint/worker/log': logRoute({
          'w-3': [
            '[corral] worker w-3 ended at 2026-11-21T23:30:09.871Z (worker exited with code 3); its output:',
            'EXIT_ON_START: exiting with code 3',
          ],
        }),
      },
    });
    await runCommand(makeLogsCommand(h.deps), ['ep-1', '--tail', '5']);
    expect(h.err()).toBe(
      'endpoint ep-1 has no workers (endpoint state: serving); the output of worker w-3, which ended last; ' +
        'other ended workers: w-2\n',
    );
    expect(h.out()).toBe(
      '[corral] worker w-3 ended at 2026-11-21T23:30:09.871Z (worker exited with code 3); its output:\n' +
        'EXIT_ON_START: exiting with code 3\n',
    );
    expect(process.exitCode).toBeUndefined();
    expect(logRequests(h.requests).map((r) => r.query)).toEqual([{ id: 'ep-1', worker: 'w-3', tail: '5' }]);
  });

  it('follows the endpoint across scaling: waits for workers, attaches to each new one, until interrupted', async () => {
    let workers: WireWorker[] = [];
    const h = makeHarness({
      routes: {
        'GET endpoint': { respond: () => Response.json({ endpoint: sampleWireEndpoint(8000, { workers }) }) },
        'GET endpoint/worker/log': logRoute({ 'w-1': ['one ready'], 'w-2': ['two ready'] }, true),
      },
    });
    const interrupt = fakeInterrupt();
    const done = runCommand(makeLogsCommand(h.deps, interrupt.listener, 5), ['ep-1', '-f', '--tail', '10']);
    await vi.waitFor(() =>
      expect(h.err()).toBe('waiting for a worker of endpoint ep-1 (endpoint state: serving)\n'),
    );
    // A worker without a container yet is not attached to; once it starts, it is.
    workers = [worker('w-1', 'pending')];
    await vi.waitFor(() => expect(endpointRequests(h.requests)).toBeGreaterThan(3));
    expect(logRequests(h.requests)).toEqual([]);
    workers = [worker('w-1', 'starting')];
    await vi.waitFor(() => expect(h.out()).toBe('[w-1] one ready\n'));
    workers = [worker('w-1'), worker('w-2', 'starting')];
    await vi.waitFor(() => expect(h.out()).toBe('[w-1] one ready\n[w-2] two ready\n'));
    // Scaled down: w-1 goes; its stream is not opened again.
    workers = [worker('w-2')];
    const seen = endpointRequests(h.requests);
    await vi.waitFor(() => expect(endpointRequests(h.requests)).toBeGreaterThan(seen + 2));
    interrupt.fire();
    await done;
    expect(h.err()).toBe('waiting for a worker of endpoint ep-1 (endpoint state: serving)\n');
    expect(process.exitCode).toBeUndefined();
    expect(interrupt.listening()).toBe(false);
    // The workers there when it started would get the last 10 lines; w-1 and w-2 came later: all their lines.
    expect(logRequests(h.requests).map((r) => r.query)).toEqual([
      { id: 'ep-1', worker: 'w-1', follow: '1' },
      { id: 'ep-1', worker: 'w-2', follow: '1' },
    ]);
  });

  it('follows with --tail for the workers there at the start, and stops when the endpoint is deleted', async () => {
    let deleted = false;
    const h = makeHarness({
      routes: {
        'GET endpoint': {
          respond: () =>
            deleted
              ? new Response(JSON.stringify(endpointNotFound), { status: 404 })
              : Response.json({ endpoint: sampleWireEndpoint(8000, { workers: [worker('w-1')] }) }),
        },
        'GET endpoint/worker/log': logRoute({ 'w-1': ['serving'] }, true),
      },
    });
    const done = runCommand(makeLogsCommand(h.deps, fakeInterrupt().listener, 5), [
      'ep-1',
      '-f',
      '--tail',
      '10',
    ]);
    await vi.waitFor(() => expect(h.out()).toBe('[w-1] serving\n'));
    deleted = true;
    await done;
    expect(h.err()).toBe('error: ENDPOINT_NOT_FOUND: no endpoint "ep-1"\n');
    expect(process.exitCode).toBe(1);
    expect(logRequests(h.requests).map((r) => r.query)).toEqual([
      { id: 'ep-1', worker: 'w-1', follow: '1', tail: '10' },
    ]);
  });

  it('follows an unknown endpoint by saying so, and exits 1', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint': { status: 404, body: endpointNotFound },
        'GET endpoints': { body: { endpoints: [], total: 0 } },
      },
    });
    await runCommand(makeLogsCommand(h.deps, fakeInterrupt().listener, 5), ['ep-1', '-f']);
    expect(h.err()).toBe('error: ENDPOINT_NOT_FOUND: no endpoint has the id, appName or name "ep-1"\n');
    expect(process.exitCode).toBe(1);
  });

  it('reports an API error for the worker and exits 1', async () => {
    const h = makeHarness({ routes: { 'GET endpoint/worker/log': logRoute({}) } });
    await runCommand(makeLogsCommand(h.deps), ['ep-1', '--worker', 'w-9']);
    expect(h.out()).toBe('');
    expect(h.err()).toBe('error: WORKER_NOT_FOUND: endpoint ep-1 has no worker "w-9"\n');
    expect(process.exitCode).toBe(1);
  });

  it('reports an unknown endpoint', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint': {
          status: 404,
          body: { code: 404, reason: 'ENDPOINT_NOT_FOUND', message: 'no endpoint "ep-9"', metadata: {} },
        },
        'GET endpoints': { body: { endpoints: [], total: 0 } },
      },
    });
    await runCommand(makeLogsCommand(h.deps), ['ep-9']);
    expect(h.err()).toBe('error: ENDPOINT_NOT_FOUND: no endpoint has the id, appName or name "ep-9"\n');
    expect(process.exitCode).toBe(1);
  });

  it('takes the endpoint by its appName', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint': {
          respond: (request) =>
            request.query.id === 'ep-1'
              ? Response.json({ endpoint: sampleWireEndpoint(8000, { workers: [worker('w-1')] }) })
              : Response.json(endpointNotFound, { status: 404 }),
        },
        'GET endpoints': {
          body: { endpoints: [sampleWireEndpoint(8000, { id: 'ep-1', appName: 'chat' })], total: 1 },
        },
        'GET endpoint/worker/log': logRoute({ 'w-1': ['from chat'] }),
      },
    });
    await runCommand(makeLogsCommand(h.deps), ['chat']);
    expect(h.err()).toBe('');
    expect(h.out()).toBe('from chat\n');
    expect(process.exitCode).toBeUndefined();
  });

  it("keeps printing the other workers' lines when one fails, then exits 1", async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint': endpointWith(['w-1', 'w-9']),
        'GET endpoint/worker/log': logRoute({ 'w-1': ['still here'], 'w-9': workerNotFound }),
      },
    });
    await runCommand(makeLogsCommand(h.deps), ['ep-1']);
    expect(h.out()).toBe('[w-1] still here\n');
    expect(h.err()).toBe('error: worker w-9: WORKER_NOT_FOUND: endpoint ep-1 has no worker "w-9"\n');
    expect(process.exitCode).toBe(1);
  });

  it('rejects a --tail that is not a count before calling the API', async () => {
    const h = makeHarness();
    await runCommand(makeLogsCommand(h.deps), ['ep-1', '--tail', 'ten']);
    expect(h.err()).toBe('error: --tail must be a non-negative integer, got "ten"\n');
    expect(process.exitCode).toBe(1);
    expect(h.requests).toEqual([]);
  });
});
