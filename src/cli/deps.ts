/** The client commands' outside world (output streams, environment, files, stdin, the API client), injectable. */
import { readFile } from 'node:fs/promises';
import { CorralClient } from '../client/index.js';

/** Everything the client-side commands touch outside themselves, injectable for tests. */
export interface CliDeps {
  /** Writes text as-is (callers add the newline). */
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  readFile: (path: string) => Promise<string>;
  readStdin: () => Promise<string>;
  makeClient: (opts: { baseUrl: string; apiKey: string }) => CorralClient;
  /**
   * Whether stdout and stderr are terminals (`create`/`update` wait by default, progress redraws one line), and
   * the width of stderr's.
   */
  terminal: { stdout: boolean; stderr: boolean; columns: number };
  /** Waits between polls (tests advance a clock instead). */
  sleep: (ms: number) => Promise<void>;
  /** Milliseconds since the epoch. */
  now: () => number;
}

export function defaultCliDeps(): CliDeps {
  return {
    stdout: (text) => {
      process.stdout.write(text);
    },
    stderr: (text) => {
      process.stderr.write(text);
    },
    env: process.env,
    readFile: (path) => readFile(path, 'utf8'),
    readStdin: readAllStdin,
    makeClient: (opts) => new CorralClient(opts),
    terminal: {
      stdout: process.stdout.isTTY === true,
      stderr: process.stderr.isTTY === true,
      columns: process.stderr.columns || 80,
    },
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    now: () => Date.now(),
  };
}

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) {
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  }
  return Buffer.concat(chunks).toString('utf8');
}
