/**
 * Runs the command blocks of one page in order, as a reader pastes them into one terminal: each block in bash with
 * `set -euo pipefail`, the variables it sets carried to the page's next blocks, in the page's own scratch folder.
 * A block passes when it exits 0 and its output has the fields the page shows; the ids the page showed are replaced
 * by the ones this run printed in the blocks after.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CommandBlock, HOST_CHANGING } from './extract.js';
import { findShape, jsonObjectsIn } from './shapes.js';

/** Sources the variables of the blocks before, runs the block, and keeps its variables for the next one. */
const WRAPPER = `set -a
source "$1"
set -euo pipefail
source "$2"
set +eu
export -p >"$1"
`;

export interface SessionOptions {
  /** The page's scratch folder: the working directory of its blocks. */
  dir: string;
  /** The environment of the session's shell. */
  env: NodeJS.ProcessEnv;
  /** The test's substitutions (images, addresses, placeholders) applied to a block's text before it runs. */
  substitute: (code: string) => string;
  /** How long one block may run. */
  timeoutMs: number;
}

export interface BlockRun {
  block: CommandBlock;
  /** The text that ran, after the substitutions. */
  ran: string;
  exitCode: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  ms: number;
  /** What is wrong with it: empty when it passed. */
  problems: string[];
}

const TAIL_CHARS = 2000;
const tail = (text: string) => (text.length > TAIL_CHARS ? `...${text.slice(-TAIL_CHARS)}` : text);

/** A failed block as a reader fixes it: page and line, what is wrong, the block as it ran, its output's ends. */
export function describeFailure(run: BlockRun): string {
  return [
    `${run.block.page}:${run.block.line} (${run.block.language}): ${run.problems.join('; ')}`,
    '--- the block, as run ---',
    run.ran,
    '--- stdout (end) ---',
    tail(run.stdout),
    '--- stderr (end) ---',
    tail(run.stderr),
  ].join('\n');
}

/** Runs `blockFile` through the wrapper in a process group of its own, its output to files. */
function runBash(
  options: SessionOptions,
  files: { wrapper: string; env: string; block: string; stdout: string; stderr: string },
): Promise<{ exitCode: number | null; timedOut: boolean }> {
  return new Promise((resolve, reject) => {
    // Output to files, not pipes: a block may leave a process in the background, which must not hold the run open.
    const child = spawn(
      'bash',
      [
        '--noprofile',
        '--norc',
        '-c',
        'exec >"$1" 2>"$2"; exec bash --noprofile --norc "$3" "$4" "$5"',
        'docs-example',
        files.stdout,
        files.stderr,
        files.wrapper,
        files.env,
        files.block,
      ],
      { cwd: options.dir, env: options.env, stdio: 'ignore', detached: true },
    );
    let timedOut = false;
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group has ended already
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      killGroup();
      resolve({ exitCode: code, timedOut });
    });
  });
}

/** The ids the page showed, longest first (so that one that begins another is replaced first), in `code`. */
function replaceIds(code: string, ids: Map<string, string>): string {
  let result = code;
  for (const from of [...ids.keys()].sort((a, b) => b.length - a.length)) {
    result = result.replaceAll(from, ids.get(from) ?? from);
  }
  return result;
}

/** Runs `blocks` (one page's, in order; skipped ones are passed over) and says how each went. */
export async function runPage(blocks: CommandBlock[], options: SessionOptions): Promise<BlockRun[]> {
  const files = {
    wrapper: join(options.dir, '.docs-example-wrapper.sh'),
    env: join(options.dir, '.docs-example-env.sh'),
    block: join(options.dir, '.docs-example-block.sh'),
    stdout: join(options.dir, '.docs-example-stdout'),
    stderr: join(options.dir, '.docs-example-stderr'),
  };
  writeFileSync(files.wrapper, WRAPPER);
  writeFileSync(files.env, '');
  const ids = new Map<string, string>();
  const runs: BlockRun[] = [];
  for (const block of blocks) {
    if (block.skip) continue;
    const ran = replaceIds(options.substitute(block.code), ids);
    const changesHost = HOST_CHANGING.exec(ran);
    if (changesHost) {
      const problem = `changes this machine or reaches yours (${changesHost[0].trim()}): mark it <!-- docs-examples: skip (why) -->`;
      runs.push({
        block,
        ran,
        exitCode: null,
        timedOut: false,
        stdout: '',
        stderr: '',
        ms: 0,
        problems: [problem],
      });
      continue;
    }
    writeFileSync(files.block, `${ran}\n`);
    const started = Date.now();
    const { exitCode, timedOut } = await runBash(options, files);
    const stdout = readFileSync(files.stdout, 'utf8');
    const stderr = readFileSync(files.stderr, 'utf8');
    const problems: string[] = [];
    if (timedOut) problems.push(`still running after ${options.timeoutMs / 1000} s`);
    else if (exitCode !== 0) problems.push(`exited with ${exitCode}`);
    const outputs = jsonObjectsIn(stdout);
    let from = 0;
    for (const expected of block.expected) {
      const found = findShape(expected, outputs, from);
      if (!found.found) {
        const missing = found.closest ? `; the closest lacks ${found.closest.missing.join(', ')}` : '';
        problems.push(`no output has the fields of ${JSON.stringify(expected).slice(0, 200)}${missing}`);
        continue;
      }
      from = found.index + 1;
      for (const [shown, printed] of found.match.ids) ids.set(shown, printed);
    }
    runs.push({ block, ran, exitCode, timedOut, stdout, stderr, ms: Date.now() - started, problems });
  }
  return runs;
}
