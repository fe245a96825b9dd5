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
  };
}

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) {
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  }
  return Buffer.concat(chunks).toString('utf8');
}
