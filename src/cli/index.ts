/**
 * The `corral` program: its commands, and how a failure ends it (one line on stderr; exit code 2 for bad
 * configuration, 1 otherwise).
 */
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/settings.js';
import { makeApiKeysCommand } from './api-keys.js';
import { makeApplyCommand } from './apply.js';
import { makeCleanupCommand } from './cleanup.js';
import { makeCredentialsCommand } from './credentials.js';
import { defaultCliDeps } from './deps.js';
import { makeEndpointsCommand } from './endpoints.js';
import { makeInvokeKeysCommand } from './invoke-keys.js';
import { makeJobsCommand } from './jobs.js';
import { makeKeysCommand } from './keys.js';
import { makeLimitsCommand } from './limits.js';
import { makeLogsCommand } from './logs.js';
import { makeModelsCommand } from './models.js';
import { makeNodeCommand } from './node.js';
import { makeProductsCommand } from './products.js';
import { makeSecretsCommand } from './secrets.js';
import { makeServeCommand } from './serve.js';
import { makeStatusCommand } from './status.js';
import { makeUsageCommand } from './usage.js';
import { makeWebhooksCommand } from './webhooks.js';
import { makeWorkersCommand } from './workers.js';

export function buildProgram(): Command {
  const deps = defaultCliDeps();
  const program = new Command('corral')
    .description('Corral: serverless GPU endpoints you run yourself')
    .version('0.1.0');
  program.addCommand(makeServeCommand());
  program.addCommand(makeKeysCommand({ stdout: deps.stdout, stderr: deps.stderr, env: deps.env }));
  program.addCommand(makeApiKeysCommand(deps));
  program.addCommand(makeEndpointsCommand(deps));
  program.addCommand(makeApplyCommand(deps));
  program.addCommand(makeLimitsCommand(deps));
  program.addCommand(makeProductsCommand(deps));
  program.addCommand(makeModelsCommand(deps));
  program.addCommand(makeUsageCommand(deps));
  program.addCommand(makeCredentialsCommand(deps));
  program.addCommand(makeInvokeKeysCommand(deps));
  program.addCommand(makeSecretsCommand(deps));
  program.addCommand(makeWebhooksCommand(deps));
  program.addCommand(makeJobsCommand(deps));
  program.addCommand(makeWorkersCommand(deps));
  program.addCommand(makeLogsCommand(deps));
  program.addCommand(makeStatusCommand(deps));
  program.addCommand(makeNodeCommand());
  program.addCommand(makeCleanupCommand({ stdout: deps.stdout, stderr: deps.stderr, env: deps.env }));
  throwInsteadOfExiting(program);
  return program;
}

/** Usage errors become CommanderError everywhere in the tree (addCommand does not copy the setting). */
function throwInsteadOfExiting(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) throwInsteadOfExiting(sub);
}

export async function runCli(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode;
      return;
    }
    // Bad configuration and expected failures end with one clear line, not a stack trace.
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`corral: ${message}\n`);
    process.exitCode = error instanceof ConfigError ? 2 : 1;
  }
}
