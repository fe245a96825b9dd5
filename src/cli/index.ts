import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/settings.js';
import { makeKeysCommand } from './keys.js';
import { makeServeCommand } from './serve.js';

export function buildProgram(): Command {
  const program = new Command('corral')
    .description('Corral: serverless GPU endpoints you run yourself')
    .version('0.1.0')
    .exitOverride();
  program.addCommand(makeServeCommand());
  program.addCommand(makeKeysCommand({ stdout: (text) => process.stdout.write(text), env: process.env }));
  return program;
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
