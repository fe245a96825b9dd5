import { PassThrough } from 'node:stream';
import pino, { type Logger } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LABELS, type RuntimeEvent } from '../types.js';
import { EventWatch } from './event-watch.js';

const logger = pino({ level: 'silent' });

function message(
  action: string,
  workerId: string,
  timeNano: number,
  attributes: Record<string, string> = {},
) {
  return `${JSON.stringify({
    Type: 'container',
    Action: action,
    timeNano,
    Actor: {
      ID: `c-${workerId}`,
      Attributes: { [LABELS.managed]: 'true', [LABELS.worker]: workerId, ...attributes },
    },
  })}\n`;
}

describe('EventWatch', () => {
  const watches: EventWatch[] = [];
  afterEach(() => {
    for (const watch of watches) watch.close();
  });

  it('maps events, reconnects when the stream ends, resumes from the last event and drops replays', async () => {
    const streams: PassThrough[] = [];
    const sinces: (number | undefined)[] = [];
    const events: RuntimeEvent[] = [];
    const watch = new EventWatch({
      open: async (since) => {
        sinces.push(since);
        const stream = new PassThrough();
        streams.push(stream);
        return stream;
      },
      onEvent: (event) => events.push(event),
      logger,
      clock: () => 1_000_000,
      initialBackoffMs: 1,
      maxBackoffMs: 5,
    });
    watches.push(watch);
    await vi.waitFor(() => expect(streams).toHaveLength(1));
    const first = streams[0] as PassThrough;
    // One event split across two chunks, then a second one.
    const start = message('start', 'w1', 2_000_000_000_000_000_000);
    first.write(start.slice(0, 20));
    first.write(start.slice(20) + message('die', 'w1', 2_000_000_001_000_000_000, { exitCode: '3' }));
    await vi.waitFor(() => expect(events).toHaveLength(2));
    first.end();
    await vi.waitFor(() => expect(streams).toHaveLength(2));
    expect(sinces[0]).toBeUndefined();
    expect(sinces[1]).toBeCloseTo(2_000_000_001, 3);
    const second = streams[1] as PassThrough;
    // The engine replays the last event (since is inclusive), then a new one.
    second.write(message('die', 'w1', 2_000_000_001_000_000_000, { exitCode: '3' }));
    second.write(message('destroy', 'w1', 2_000_000_002_000_000_000));
    await vi.waitFor(() => expect(events).toHaveLength(3));
    expect(events).toEqual([
      { type: 'started', workerId: 'w1' },
      { type: 'exited', workerId: 'w1', exitCode: 3 },
      { type: 'removed', workerId: 'w1' },
    ]);
  });

  it('retries with backoff while the engine refuses, and stops when closed', async () => {
    let attempts = 0;
    const watch = new EventWatch({
      open: async () => {
        attempts += 1;
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
      onEvent: () => undefined,
      logger,
      clock: () => 0,
      initialBackoffMs: 1,
      maxBackoffMs: 4,
    });
    watches.push(watch);
    await vi.waitFor(() => expect(attempts).toBeGreaterThanOrEqual(3));
    watch.close();
    const after = attempts;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(attempts).toBeLessThanOrEqual(after + 1);
  });

  it('says once that the stream is lost and once that it is back, however many attempts it takes', async () => {
    const lines: { level: string; message: string }[] = [];
    const record = (level: string) => (first: unknown, second?: unknown) =>
      lines.push({ level, message: String(typeof first === 'string' ? first : second) });
    const captured = {
      warn: record('warn'),
      info: record('info'),
      debug: record('debug'),
      error: record('error'),
    } as unknown as Logger;
    let refusing = true;
    let attempts = 0;
    const opened: PassThrough[] = [];
    const watch = new EventWatch({
      open: async () => {
        attempts += 1;
        if (refusing) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        const stream = new PassThrough();
        opened.push(stream);
        return stream;
      },
      onEvent: () => undefined,
      logger: captured,
      clock: () => 0,
      initialBackoffMs: 1,
      maxBackoffMs: 2,
    });
    watches.push(watch);
    await vi.waitFor(() => expect(attempts).toBeGreaterThanOrEqual(5));
    refusing = false;
    await vi.waitFor(() => expect(opened).toHaveLength(1));
    const loud = lines.filter((line) => line.level !== 'debug');
    expect(loud).toEqual([
      { level: 'warn', message: 'docker event stream failed; reconnecting' },
      { level: 'info', message: 'docker event stream reconnected' },
    ]);
    expect(lines.filter((line) => line.level === 'debug').length).toBeGreaterThanOrEqual(3);
  });

  it('a throwing handler does not stop the stream', async () => {
    const stream = new PassThrough();
    const seen: RuntimeEvent[] = [];
    const watch = new EventWatch({
      open: async () => stream,
      onEvent: (event) => {
        seen.push(event);
        throw new Error('boom');
      },
      logger,
      clock: () => 0,
    });
    watches.push(watch);
    stream.write(message('start', 'w1', 1));
    stream.write('not json\n');
    stream.write(message('start', 'w2', 2));
    await vi.waitFor(() => expect(seen).toHaveLength(2));
  });
});
