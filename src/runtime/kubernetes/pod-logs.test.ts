/**
 * PodLogs on the API stand-in: a container that has not started has written nothing (400: an empty log, opened); a
 * log is read line by line (CR LF too) with its tail; a followed log ends when its worker is gone or at close; a 404
 * is NOT_FOUND only once the pod is gone.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeStandIn } from '../../../test/support/kube-stand-in.js';
import type { LogOptions } from '../types.js';
import { clientApi } from './client-api.js';
import type { Pod } from './objects.js';
import { PodLogs } from './pod-logs.js';
import { WORKER_CONTAINER } from './pod-spec.js';
import { type PodWait, PodWaits } from './pod-waits.js';

const NS = 'corral-workers';
let standIn: KubeStandIn;
let logs: PodLogs;
let waits: PodWaits<Pod>;
const current = new Map<string, Pod>();

function workerPod(name: string): Pod {
  return {
    metadata: { name, namespace: NS },
    spec: { containers: [{ name: WORKER_CONTAINER, image: 'worker:1' }] },
  } as Pod;
}

/** A pod the stand-in's kubelet runs on node n1 (a Node the API server knows, so it serves the log). */
function runningPod(name: string): Pod {
  standIn.seedPod(workerPod(name), 'n1', '10.1.0.1');
  const pod = standIn.pod(NS, name) as Pod;
  current.set(name, pod);
  return pod;
}

function goneWait(workerId: string): PodWait {
  return waits.waitFor(workerId, (e) => e === undefined);
}

async function readAll(
  pod: Pod,
  options: LogOptions,
  gone = goneWait(pod.metadata?.name ?? ''),
  onLine: (line: string) => void = () => undefined,
) {
  const lines: string[] = [];
  for await (const line of logs.read(pod.metadata?.name ?? '', pod, options, gone)) {
    lines.push(line);
    onLine(line);
  }
  return lines;
}

/** A promise settled at the first line read, and the callback that settles it. */
function firstLine(): { onLine: () => void; read: Promise<void> } {
  let onLine: () => void = () => undefined;
  const read = new Promise<void>((resolve) => {
    onLine = resolve;
  });
  return { onLine, read };
}

beforeEach(async () => {
  standIn = new KubeStandIn();
  await standIn.start();
  standIn.addNode({ metadata: { name: 'n1' } });
  const config = new KubeConfig();
  config.loadFromString(standIn.kubeconfig());
  logs = new PodLogs({ api: clientApi(config), namespace: NS });
  current.clear();
  waits = new PodWaits<Pod>({ current: (id) => current.get(id) });
});

afterEach(async () => {
  logs.close();
  waits.close();
  await standIn.close();
});

describe('PodLogs', () => {
  it('a container that has not started yet has written nothing: an empty log, opened', async () => {
    const api = clientApi(
      (() => {
        const c = new KubeConfig();
        c.loadFromString(standIn.kubeconfig());
        return c;
      })(),
    );
    await api.createPod(NS, workerPod('p1') as Parameters<typeof api.createPod>[1]);
    let opened = false;
    const lines = await readAll(workerPod('p1'), { follow: false, onOpen: () => (opened = true) });
    expect(lines).toEqual([]);
    expect(opened).toBe(true);
  });

  it('reads the log line by line, CR LF as LF, its tail when asked', async () => {
    const pod = runningPod('p1');
    standIn.appendLog(NS, 'p1', 'one\r\ntwo\nthree\n');
    expect(await readAll(pod, { follow: false })).toEqual(['one', 'two', 'three']);
    expect(await readAll(pod, { follow: false, tail: 1 })).toEqual(['three']);
  });

  it.each([
    [
      'once its worker is gone',
      () => {
        current.delete('p1');
        waits.changed('p1', undefined);
      },
    ],
    ['at close', () => logs.close()],
  ])('a followed log ends %s', async (_name, end) => {
    const pod = runningPod('p1');
    standIn.appendLog(NS, 'p1', 'first\n');
    const { onLine, read } = firstLine();
    const following = readAll(pod, { follow: true }, goneWait('p1'), onLine);
    await read;
    end();
    expect(await following).toEqual(['first']);
    expect(waits.size).toBe(0);
  });

  it('a 404 is NOT_FOUND once the pod is gone', async () => {
    const pod = runningPod('p1');
    standIn.deletePodNow(NS, 'p1');
    await expect(readAll(pod, { follow: false })).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'worker p1 does not exist',
    });
  });
});
