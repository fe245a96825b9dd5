/**
 * What every command that talks to the API shares: the --api-url, --api-key and --json options, their resolution
 * (flag, then environment, then default), and `runWithClient`, which hands an action a client and reports its
 * failure.
 */
import { Command } from 'commander';
import type { CorralClient } from '../client/index.js';
import type { CliDeps } from './deps.js';
import { CliError, printJson, runAction } from './output.js';

export const DEFAULT_API_URL = 'http://127.0.0.1:8080';

/** Options every client command accepts (commander's camel-cased names). */
export interface ClientOptionValues {
  apiUrl?: string;
  apiKey?: string;
  json?: boolean;
}

export interface ClientContext<O> {
  client: CorralClient;
  opts: O & ClientOptionValues;
  json: boolean;
  /** Prints `data` as JSON under --json, else the text `render` returns. */
  output: (data: unknown, render: () => string) => void;
}

/** A command whose help and usage errors go to the injected streams; subcommands inherit this. */
export function newCommand(name: string, deps: CliDeps): Command {
  return new Command(name).configureOutput({
    writeOut: (text) => deps.stdout(text),
    writeErr: (text) => deps.stderr(text),
  });
}

export function addClientOptions(command: Command): Command {
  return command
    .option('--api-url <url>', `Corral API base URL (env CORRAL_API_URL, default ${DEFAULT_API_URL})`)
    .option('--api-key <key>', 'API key (env CORRAL_API_KEY)')
    .option('--json', 'print the JSON answer of the API as is');
}

/** Resolves flag, then environment, then default. Throws CliError when no API key is set. */
export function resolveConnection(
  deps: CliDeps,
  opts: ClientOptionValues,
): { baseUrl: string; apiKey: string } {
  const baseUrl = nonEmpty(opts.apiUrl) ?? nonEmpty(deps.env.CORRAL_API_URL) ?? DEFAULT_API_URL;
  const apiKey = nonEmpty(opts.apiKey) ?? nonEmpty(deps.env.CORRAL_API_KEY);
  if (apiKey === undefined) {
    throw new CliError('no API key: pass --api-key or set CORRAL_API_KEY');
  }
  return { baseUrl, apiKey };
}

/** Runs an action of a command built with addClientOptions, with a client and error reporting. */
export function runWithClient<O extends object>(
  deps: CliDeps,
  command: Command,
  body: (ctx: ClientContext<O>) => Promise<void>,
): Promise<void> {
  const opts = command.opts<O & ClientOptionValues>();
  const json = opts.json === true;
  return runAction(
    deps,
    async () => {
      const client = deps.makeClient(resolveConnection(deps, opts));
      await body({
        client,
        opts,
        json,
        output: (data, render) => (json ? printJson(deps, data) : deps.stdout(render())),
      });
    },
    { json },
  );
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
