import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import type { WireEndpoint, WireWorker } from '../client/index.js';
import { makeEndpointsCommand } from './endpoints.js';

afterEach(() => {
  process.exitCode = undefined;
});

const SPEC = 'name: echo\nappName: echo\nimage: {image: corral/echo:1}\nports: [{port: 8000}]\n';

function worker(state: string, message: string, healthy = false, error = ''): WireWorker {
  return { id: 'w-1', state: { state, error, message }, log: '', metrics: '', healthy };
}

function endpoint(state: string, message: string, workers: WireWorker[], error = ''): WireEndpoint<number> {
  return sampleWireEndpoint(8000, {
    state: { state, error, message },
    workers,
    workerConfig: { ...sampleWireEndpoint(8000).workerConfig, minNum: 1 },
  });
}

/** A harness whose GET endpoint answers each of `looks` in turn (the last one from then on). */
function polled(
  looks: WireEndpoint<number>[],
  terminal: { stdout: boolean; stderr: boolean; columns?: number } = { stdout: true, stderr: false },
) {
  let n = 0;
  return makeHarness({
    files: { 'spec.yaml': SPEC },
    terminal,
    routes: {
      'POST endpoint/create': { body: { id: 'ep-1' } },
      'GET endpoint': {
        respond: () => {
          const look = looks[Math.min(n++, looks.length - 1)];
          return Response.json({ endpoint: look });
        },
      },
    },
  });
}

const progress = [
  endpoint('deploying', 'waiting for workers', []),
  endpoint('deploying', '1 pulling', [worker('pulling', 'pulling corral/echo:1: 40%')]),
  endpoint('deploying', '1 pulling', [worker('pulling', 'pulling corral/echo:1: 40%')]),
  endpoint('deploying', '1 starting', [worker('starting', 'health check: connection refused')]),
  endpoint('serving', '1 running', [worker('running', '', true)]),
];

describe('corral endpoints create on a terminal', () => {
  it('waits, printing each change once, then the URLs and a request to paste', async () => {
    const h = polled(progress);
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml']);
    expect(process.exitCode).toBeUndefined();
    expect(h.err()).toBe(
      [
        'deploying: waiting for workers (0 of 1 running)',
        'deploying: 1 pulling (0 of 1 running)',
        'worker w-1: pulling: pulling corral/echo:1: 40%',
        'deploying: 1 starting (0 of 1 running)',
        'worker w-1: starting: health check: connection refused',
        'serving: 1 running (1 of 1 running)',
        'worker w-1: running',
        '',
      ].join('\n'),
    );
    expect(h.out()).toBe(
      [
        'created endpoint ep-1',
        'endpoint echo is ready: serving: 1 running',
        'URL:       http://echo.localhost:8081',
        'Path URL:  http://127.0.0.1:8081/e/echo/',
        'Call:      curl -H "Authorization: Bearer $CORRAL_API_KEY" http://echo.localhost:8081/',
        '           curl -H "Authorization: Bearer $CORRAL_API_KEY" http://127.0.0.1:8081/e/echo/',
        '',
      ].join('\n'),
    );
  });

  it('redraws one line when stderr is a terminal, and ends it', async () => {
    const h = polled(progress, { stdout: true, stderr: true });
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml']);
    const draws = h.err().split('\r\x1b[K');
    expect(draws[0]).toBe('');
    expect(draws.at(-1)).toBe('serving: 1 running (1 of 1 running) | worker w-1: running\n');
    expect(draws).toContain(
      'deploying: 1 starting (0 of 1 running) | worker w-1: starting: health check: connection refused',
    );
  });

  it('at 80 columns, prints each new cause whole on its own line once, and cuts only the progress line', async () => {
    const cause = 'waiting for /health to pass; last probe: connection closed on port 8000 before any answer';
    const starting = endpoint('deploying', '1 starting', [worker('starting', cause)]);
    const h = polled([starting, starting, endpoint('serving', '1 running', [worker('running', '', true)])], {
      stdout: true,
      stderr: true,
      columns: 80,
    });
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml']);
    const whole = `worker w-1: starting: ${cause}`;
    expect(whole.length).toBeGreaterThan(80);
    const lines = h.err().split('\r\x1b[K');
    expect(lines.filter((line) => line === `${whole}\n`)).toHaveLength(1);
    for (const line of lines.filter((l) => !l.endsWith('\n'))) expect(line.length).toBeLessThan(80);
  });

  it('a timeout ends with the last cause, whole, and the commands that show more', async () => {
    const cause = 'waiting for /health to pass; last probe: HTTP 404 from /health, HTTP 502 from /';
    const h = polled([endpoint('deploying', '1 starting', [worker('starting', cause)])], {
      stdout: true,
      stderr: true,
      columns: 80,
    });
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml', '--timeout', '3']);
    expect(process.exitCode).toBe(1);
    expect(h.err()).toContain(
      'error: endpoint echo is not ready after 3s: deploying: 1 starting\n' +
        `last cause: worker w-1: starting: ${cause}\n` +
        'it goes on; see: corral logs echo, corral workers list echo, corral endpoints get ep-1\n',
    );
  });

  it('waits no longer by default than the startup deadline it waits on (300 s)', async () => {
    const h = polled([endpoint('deploying', 'waiting for workers', [])]);
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml']);
    expect(h.err()).toContain('error: endpoint echo is not ready after 300s');
  });

  it('exits non-zero with the reason when the endpoint fails', async () => {
    const h = polled([
      endpoint('deploying', 'waiting for workers', []),
      endpoint('failed', 'pull access denied for corral/echo', [], 'IMAGE_PULL_FAILED'),
    ]);
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml']);
    expect(process.exitCode).toBe(1);
    expect(h.err()).toContain(
      'error: endpoint echo failed (IMAGE_PULL_FAILED): pull access denied for corral/echo\n',
    );
    expect(h.out()).toBe('created endpoint ep-1\n');
  });

  it('gives up after --timeout with the last state', async () => {
    const h = polled([endpoint('deploying', 'waiting for workers', [])]);
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml', '--timeout', '5']);
    expect(process.exitCode).toBe(1);
    expect(h.err()).toContain('error: endpoint echo is not ready after 5s: deploying: waiting for workers');
    // One look a second: the first, then one after each of five seconds.
    expect(h.requests.filter((r) => r.method === 'GET')).toHaveLength(6);
  });

  it('does not wait with --no-wait, nor when stdout is not a terminal', async () => {
    for (const [args, terminal] of [
      [['--no-wait'], true],
      [[], false],
    ] as const) {
      const h = polled(progress, { stdout: terminal, stderr: terminal });
      await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml', ...args]);
      expect(h.out()).toBe('created endpoint ep-1\n');
      expect(h.requests.map((r) => r.method)).toEqual(['POST']);
    }
  });

  it('waits with --wait off a terminal too, and --json then prints the ready endpoint', async () => {
    const h = polled(progress, { stdout: false, stderr: false });
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml', '--wait', '--json']);
    const printed = JSON.parse(h.out());
    expect(printed.id).toBe('ep-1');
    expect(printed.endpoint.state.state).toBe('serving');
  });
});

describe('corral endpoints update --wait', () => {
  it('waits for the rollout and the minimum of healthy workers', async () => {
    const updating = endpoint('updating', 'rolling out revision 2', [worker('running', '', true)]);
    let looks = 0;
    const h = makeHarness({
      routes: {
        'POST endpoint/update': { body: { endpoint: updating } },
        'GET endpoint': {
          respond: () =>
            Response.json({
              endpoint:
                looks++ === 0 ? updating : endpoint('serving', '1 running', [worker('running', '', true)]),
            }),
        },
      },
    });
    await runCommand(makeEndpointsCommand(h.deps), ['update', 'ep-1', '--image', 'corral/echo:2', '--wait']);
    expect(h.out()).toContain('updated endpoint ep-1 (state updating)\n');
    expect(h.out()).toContain('endpoint echo is ready: serving: 1 running\n');
    expect(h.err()).toContain('updating: rolling out revision 2 (1 of 1 running)\n');
  });
});
