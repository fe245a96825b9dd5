/**
 * The program's entry (bin/corral.js runs the built copy): the command line is parsed by cli/, whose `serve`
 * command calls the composition root in app/ (app/serve.ts). Nothing is built here.
 */
import { runCli } from './cli/index.js';

/** Runs the `corral` command line with the process's arguments (argv[0] is node, argv[1] the script). */
export async function main(argv: readonly string[]): Promise<void> {
  await runCli([...argv]);
}
