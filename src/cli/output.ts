/** How the client commands report: `CliError` for the CLI's own failures, `error: ...` lines, JSON printing. */
import { CorralApiError } from '../client/index.js';
import type { CliDeps } from './deps.js';

/** A failure the CLI itself detected (bad flag, unreadable file); printed as `error: <message>`. */
export class CliError extends Error {
  override name = 'CliError';
}

export function printJson(deps: CliDeps, value: unknown): void {
  deps.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

/** `error: <reason>: <message> (field: <field>)` for API errors, `error: <message>` for the rest. */
export function formatError(error: unknown): string {
  if (error instanceof CorralApiError) {
    const field = error.field === undefined ? '' : ` (field: ${error.field})`;
    return `error: ${error.reason}: ${error.message}${field}`;
  }
  if (error instanceof Error) return `error: ${error.message}`;
  return `error: ${String(error)}`;
}

/** Runs a command body; any failure is printed to stderr and sets a non-zero exit code. */
export async function runAction(deps: CliDeps, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    deps.stderr(`${formatError(error)}\n`);
    process.exitCode = 1;
  }
}
