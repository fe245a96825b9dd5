/**
 * `corral serve`: loads the configuration from flags, environment and config file, runs app/serve.ts's `serve`, and
 * closes it on SIGINT or SIGTERM.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import type { serve } from '../app/serve.js';
import { loadConfig } from '../config/config.js';
import { SERVE_SETTINGS, type ServeSettingName } from '../config/settings.js';
import { createLogger } from '../logger.js';
import { givenFlags, settingOptions } from './settings-options.js';

export function makeServeCommand(): Command {
  const command = new Command('serve').description(
    'run the Corral API, the controller that runs workers, and the gateway that serves endpoints',
  );
  for (const option of settingOptions(Object.keys(SERVE_SETTINGS) as ServeSettingName[]))
    command.addOption(option);
  command.action(async (options: Record<string, unknown>) => {
    const config = loadConfig({
      flags: givenFlags(options),
      env: process.env,
      readFile: (path) => readFileSync(path, 'utf8'),
    });
    // Readable lines on a terminal, JSON lines for a log collector (or as --log-format says).
    const terminal = process.stdout.isTTY === true;
    const logger = createLogger({
      level: config.logLevel,
      format: config.logFormat ?? (terminal ? 'pretty' : 'json'),
      colors: terminal,
    });
    // The handlers come first: a signal that arrives while the server starts (after its "listening" line, before
    // `serve` has returned) would otherwise end the process at once, with nothing closed. It is acted on once the
    // server has started.
    let server: Awaited<ReturnType<typeof serve>> | undefined;
    let requested: string | undefined;
    let closing = false;
    const shutdown = (signal: string) => {
      if (!server) {
        requested ??= signal;
        return;
      }
      if (closing) return;
      closing = true;
      logger.info({ signal }, 'shutting down');
      server.close().then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.on('SIGINT', () => shutdown('SIGINT'));
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    // Loaded here, not at the top: every other command (and `--help`) would load the whole server for nothing.
    const { serve: start } = await import('../app/serve.js');
    server = await start(config, {
      logger,
      env: process.env,
      stdout: (text) => process.stdout.write(text),
    });
    if (requested) shutdown(requested);
  });
  return command;
}
