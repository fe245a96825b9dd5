import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from './index.js';

const doc = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');

/** Every runnable command, by its full name (`corral endpoints list`); groups are not commands of their own. */
function commands(command: Command, prefix: string): string[] {
  const name = `${prefix} ${command.name()}`.trim();
  const subs = command.commands.filter((sub) => sub.name() !== 'help');
  if (subs.length === 0) return [name];
  return subs.flatMap((sub) => commands(sub, name));
}

describe('docs/cli.md', () => {
  it('has a row for every command, and none for a command that does not exist', () => {
    const documented = [...doc.matchAll(/^\| `(corral [a-z-]+(?: [a-z][a-z-]*){0,2})\b[^`]*` +\|/gm)].map(
      (m) => m[1],
    );
    const program = buildProgram();
    const real = program.commands.flatMap((command) => commands(command, 'corral'));
    expect(new Set(documented)).toEqual(new Set(real));
  });
});
