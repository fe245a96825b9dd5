/**
 * How the client commands report: `CliError` for the CLI's own failures, `SpecProblems` for a spec file's, `error: ...`
 * lines (with a table when there are several problems), or under --json the error as a JSON object; JSON printing.
 */
import { CorralApiError } from '../client/index.js';
import type { CliDeps } from './deps.js';
import { formatTable } from './table.js';

/** A failure the CLI itself detected (bad flag, unreadable file); printed as `error: <message>`. */
export class CliError extends Error {
  override name = 'CliError';
}

/** One problem of a spec: the field's wire path, a stable reason and a sentence. */
export interface SpecIssue {
  field: string;
  reason: string;
  message: string;
}

/** A spec file with problems, found before anything was sent; every one is printed. */
export class SpecProblems extends CliError {
  override name = 'SpecProblems';

  constructor(
    readonly source: string,
    readonly issues: SpecIssue[],
  ) {
    super(`${source} has ${issues.length === 1 ? 'a problem' : `${issues.length} problems`}`);
  }
}

export function printJson(deps: CliDeps, value: unknown): void {
  deps.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * `error: <reason>: <message> (field: <field>)` for API errors, `error: <message>` for the rest; when the error
 * lists several problems (a spec file's, or the API's `metadata.issues`), a table of them all follows.
 */
export function formatError(error: unknown): string {
  const issues = issuesOf(error);
  if (error instanceof SpecProblems) return `error: ${error.message}:\n${issueTable(issues)}`;
  if (error instanceof CorralApiError) {
    if (issues.length > 1) {
      return `error: ${error.reason}: ${issues.length} problems:\n${issueTable(issues)}`;
    }
    const field = error.field === undefined ? '' : ` (field: ${error.field})`;
    return `error: ${error.reason}: ${error.message}${field}`;
  }
  if (error instanceof Error) return `error: ${error.message}`;
  return `error: ${String(error)}`;
}

/** The error as --json prints it: `{error: {reason, message, issues}}` (issues: every problem, maybe none). */
export function errorJson(error: unknown): {
  error: { reason: string; message: string; issues: SpecIssue[] };
} {
  const reason =
    error instanceof CorralApiError
      ? error.reason
      : error instanceof SpecProblems
        ? 'INVALID_SPEC'
        : 'CLI_ERROR';
  const message = error instanceof Error ? error.message : String(error);
  return { error: { reason, message, issues: issuesOf(error) } };
}

function issuesOf(error: unknown): SpecIssue[] {
  if (error instanceof SpecProblems) return error.issues;
  if (!(error instanceof CorralApiError) || !Array.isArray(error.metadata.issues)) return [];
  return error.metadata.issues.flatMap((item: unknown) => {
    if (typeof item !== 'object' || item === null) return [];
    const { field, reason, message } = item as Record<string, unknown>;
    return [{ field: String(field ?? ''), reason: String(reason ?? ''), message: String(message ?? '') }];
  });
}

function issueTable(issues: readonly SpecIssue[]): string {
  const table = formatTable(
    ['FIELD', 'REASON', 'PROBLEM'],
    issues.map((i) => [i.field, i.reason, i.message]),
  );
  return table
    .trimEnd()
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

/**
 * Runs a command body; any failure is printed to stderr (as JSON on stdout under `json`) and sets a non-zero exit
 * code.
 */
export async function runAction(
  deps: CliDeps,
  body: () => Promise<void>,
  options: { json?: boolean } = {},
): Promise<void> {
  try {
    await body();
  } catch (error) {
    if (options.json === true) printJson(deps, errorJson(error));
    else deps.stderr(`${formatError(error)}\n`);
    process.exitCode = 1;
  }
}
