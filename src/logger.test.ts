import { describe, expect, it } from 'vitest';
import { createLogger, prettyLine } from './logger.js';

function capture() {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => lines.push(line) } };
}

describe('createLogger', () => {
  it('writes JSON lines by default, with secrets redacted', () => {
    const { lines, destination } = capture();
    createLogger({ level: 'info', destination }).info({ apiKey: 'sk_secret', port: 8080 }, 'listening');
    const entry = JSON.parse(lines[0] ?? '');
    expect(entry).toMatchObject({ msg: 'listening', port: 8080, apiKey: '[redacted]', service: 'corral' });
  });

  it('writes readable lines in the pretty format, still redacted', () => {
    const { lines, destination } = capture();
    createLogger({ level: 'info', destination, format: 'pretty' }).warn(
      { apiKey: 'sk_secret', addr: '127.0.0.1:8080', note: 'two words' },
      'listening',
    );
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} WARN {2}listening apiKey=\[redacted\] addr=127\.0\.0\.1:8080 note="two words"\n$/,
    );
  });
});

describe('prettyLine', () => {
  it("puts an error's stack under the line, colours the level on a terminal, and passes other text through", () => {
    const line = JSON.stringify({
      level: 50,
      time: Date.UTC(2024, 0, 1, 10, 0, 0, 5),
      msg: 'pass failed',
      endpoint: 'ep-1',
      err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at run' },
    });
    expect(prettyLine(line, false)).toBe(
      '10:00:00.005 ERROR pass failed endpoint=ep-1\n    Error: boom\n        at run\n',
    );
    expect(prettyLine(line, true)).toContain('\x1b[31mERROR\x1b[0m');
    expect(prettyLine('not json\n', false)).toBe('not json\n');
  });
});

describe('prettyLine for a line written for a person', () => {
  it('does not repeat the fields the message already says; the JSON keeps them all', () => {
    const entry = {
      level: 40,
      time: Date.UTC(2026, 10, 29, 10, 0, 1, 250),
      service: 'corral',
      msg: 'endpoint sdxl (ep_1): worker w_1 exited with code 1: "ModuleNotFoundError: torch"',
      endpointId: 'ep_1',
      endpointName: 'sdxl',
      workerId: 'w_1',
      cause: 'RUNTIME_ERROR',
      reason: 'exited with code 1',
      exitCode: 1,
      output: ['  import torch', 'ModuleNotFoundError: torch'],
      failures: 2,
    };
    expect(prettyLine(JSON.stringify(entry), false)).toBe(
      '10:00:01.250 WARN  endpoint sdxl (ep_1): worker w_1 exited with code 1: "ModuleNotFoundError: torch" ' +
        'cause=RUNTIME_ERROR failures=2\n',
    );
  });

  it('shows a value the message holds only inside another word', () => {
    const line = JSON.stringify({ level: 30, time: 0, msg: 'endpoint ep_12 ready', id: 'ep_1', port: 12 });
    expect(prettyLine(line, false)).toBe('00:00:00.000 INFO  endpoint ep_12 ready id=ep_1 port=12\n');
  });
});
