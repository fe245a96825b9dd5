/** Test support for the CLI commands: injected deps over a canned API (no vitest import here). */
import type { Command } from 'commander';
import type { CliDeps } from '../../src/cli/deps.js';
import { CorralClient } from '../../src/client/index.js';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | null;
  body: unknown;
}

export interface CannedAnswer {
  status?: number;
  body?: unknown;
  /** Fail like fetch does when the connection is refused. */
  refuse?: boolean;
  /**
   * Answers in place of `status`/`body`: streamed or plain-text answers, or answers that depend on
   * the query. Gets the recorded request and the signal the client passed to fetch.
   */
  respond?: (request: RecordedRequest, signal: AbortSignal | undefined) => Response | Promise<Response>;
}

export interface TestHarness {
  deps: CliDeps;
  requests: RecordedRequest[];
  connections: { baseUrl: string; apiKey: string }[];
  out: () => string;
  err: () => string;
}

const PREFIX = '/gpu-instance/openapi/v1/';

/**
 * Deps whose client is a real CorralClient over a fake fetch answering `routes`
 * (keys like `GET endpoints`, paths relative to the API prefix).
 */
export function makeHarness(
  options: {
    routes?: Record<string, CannedAnswer>;
    env?: NodeJS.ProcessEnv;
    files?: Record<string, string>;
    stdin?: string;
    /** Pretend stdout/stderr are terminals (default: neither). */
    terminal?: { stdout: boolean; stderr: boolean; columns?: number };
  } = {},
): TestHarness {
  const requests: RecordedRequest[] = [];
  const connections: { baseUrl: string; apiKey: string }[] = [];
  let out = '';
  let err = '';
  let clock = 1_700_000_000_000;
  const fakeFetch: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const method = init?.method ?? 'GET';
    const headers = new Headers(init?.headers);
    const recorded: RecordedRequest = {
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      authorization: headers.get('authorization'),
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
    };
    requests.push(recorded);
    const route = url.pathname.startsWith(PREFIX) ? url.pathname.slice(PREFIX.length) : url.pathname;
    const answer = options.routes?.[`${method} ${route}`] ?? {
      status: 404,
      body: { code: 404, reason: 'NOT_FOUND', message: `no route ${method} ${route}`, metadata: {} },
    };
    if (answer.refuse === true) {
      const cause = Object.assign(new Error(`connect ECONNREFUSED ${url.host}`), { code: 'ECONNREFUSED' });
      throw new TypeError('fetch failed', { cause });
    }
    if (answer.respond !== undefined) return answer.respond(recorded, init?.signal ?? undefined);
    return new Response(JSON.stringify(answer.body), {
      status: answer.status ?? 200,
      headers: { 'content-type': 'application/json' },
    });
  };
  const files = options.files ?? {};
  const deps: CliDeps = {
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      err += text;
    },
    env: options.env ?? { CORRAL_API_KEY: 'sk_env_key' },
    readFile: async (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      return text;
    },
    readStdin: async () => options.stdin ?? '',
    makeClient: (opts) => {
      connections.push(opts);
      return new CorralClient({ ...opts, fetch: fakeFetch });
    },
    terminal: { stdout: false, stderr: false, columns: 200, ...options.terminal },
    // No real waiting: a sleep moves the clock on.
    sleep: async (ms) => {
      clock += ms;
    },
    now: () => clock,
  };
  return { deps, requests, connections, out: () => out, err: () => err };
}

/** Parses `args` (user args, no program name) with commander exits turned into exceptions. */
export async function runCommand(command: Command, args: string[]): Promise<void> {
  throwOnExit(command);
  await command.parseAsync(args, { from: 'user' });
}

function throwOnExit(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) throwOnExit(sub);
}
