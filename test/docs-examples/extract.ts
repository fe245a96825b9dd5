/**
 * The command blocks of a Markdown page, for the docs-examples test: which fenced blocks are commands that run,
 * which are skipped and why (a marker in the page itself), and the output each shows (a `# {...}` comment after
 * a command, or a ```json block right below) as JSON whose shape the output must have.
 */

/** Languages whose blocks are shell commands run by bash. */
const SHELL_LANGUAGES = new Set(['sh', 'bash', 'console']);

/**
 * Languages whose blocks are not run, and why (the test prints these reasons): they need a package a clean machine
 * does not have, and their clients are tested against a real `corral serve` elsewhere.
 */
export const NOT_RUN_LANGUAGES: Record<string, string> = {
  python:
    'runpod-python and standardwebhooks are not installed on a clean machine (test/e2e/runpod-clients.test.ts runs the real SDK)',
  js: 'snippets of a program, not commands (runpod-sdk is driven by test/e2e/runpod-sdk.test.ts; the webhook recipe by src/webhooks tests)',
};

/** `<!-- docs-examples: skip (reason) -->` on the line before a block; `skip-page (reason)` anywhere skips them all. */
const SKIP_MARKER = /<!--\s*docs-examples:\s*skip\s*\((.+)\)\s*-->/;
const SKIP_PAGE_MARKER = /<!--\s*docs-examples:\s*skip-page\s*\((.+)\)\s*-->/;
/**
 * Commands that change the machine they run on (its packages, firewall, files under /etc) or reach a cluster or a
 * registry of the reader's: a block with one never runs here, and one without a skip marker fails, unrun.
 */
export const HOST_CHANGING = /\b(apt-get|apt|iptables|kubectl|docker push)\s|>\s*\/etc\//;
const FENCE = /^(\s*)```(\S*)\s*$/;
/** A ```json block that opens this many lines or fewer below a command block shows that block's output. */
const OUTPUT_BLOCK_GAP = 3;

export interface CommandBlock {
  page: string;
  /** The line of the opening fence (1-based). */
  line: number;
  language: string;
  code: string;
  /** Why it is not run: its marker's reason, or its language's. */
  skip?: string;
  /** The outputs the page shows for it, in order: each a JSON value whose fields the output must have. */
  expected: unknown[];
}

interface Fence {
  line: number;
  language: string;
  lines: string[];
  closeLine: number;
}

function fencesOf(text: string): Fence[] {
  const lines = text.split('\n');
  const fences: Fence[] = [];
  let open: { line: number; language: string; indent: number; lines: string[] } | undefined;
  lines.forEach((raw, index) => {
    const match = FENCE.exec(raw);
    if (!open) {
      if (match)
        open = { line: index + 1, language: match[2] ?? '', indent: match[1]?.length ?? 0, lines: [] };
      return;
    }
    if (match && match[2] === '') {
      fences.push({ line: open.line, language: open.language, lines: open.lines, closeLine: index + 1 });
      open = undefined;
      return;
    }
    open.lines.push(raw.slice(Math.min(open.indent, raw.length - raw.trimStart().length)));
  });
  return fences;
}

/** `$ ` prompts of a console block: the commands are the prompted lines (and their `\` continuations). */
function consoleCommands(lines: string[]): string[] {
  const commands: string[] = [];
  let continuing = false;
  for (const line of lines) {
    if (line.startsWith('$ ')) commands.push(line.slice(2));
    else if (continuing) commands.push(line);
    else continue;
    continuing = line.endsWith('\\');
  }
  return commands;
}

/**
 * The JSON values that comments in `code` show as output: a comment that starts with `{` or `[` (after `#` or after a
 * command), joined with the comment-only lines below it until it parses. Comments that are prose are not outputs.
 */
export function commentOutputs(code: string): unknown[] {
  const outputs: unknown[] = [];
  const lines = code.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const start = /(?:^|\s)#\s*([[{].*)$/.exec(lines[index] ?? '');
    if (!start?.[1]) continue;
    let text = start[1];
    for (let next = index; ; ) {
      const value = parseJson(text);
      if (value !== undefined) {
        outputs.push(value);
        index = next;
        break;
      }
      const more = /^\s*#(.*)$/.exec(lines[next + 1] ?? '');
      if (!more?.[1]) break;
      next++;
      text += more[1];
    }
  }
  return outputs;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The nearest line above (1-based) `line` that is not blank. */
function lineAbove(lines: string[], line: number): string | undefined {
  for (let index = line - 2; index >= 0; index--) {
    if (lines[index]?.trim()) return lines[index];
  }
  return undefined;
}

/** Every block of `page` that is a command (shell) or is a language this test names as not run. */
export function commandBlocks(page: string, text: string): CommandBlock[] {
  const pageSkip = SKIP_PAGE_MARKER.exec(text)?.[1];
  const lines = text.split('\n');
  const fences = fencesOf(text);
  const blocks: CommandBlock[] = [];
  fences.forEach((fence, index) => {
    const shell = SHELL_LANGUAGES.has(fence.language);
    const notRun = NOT_RUN_LANGUAGES[fence.language];
    if (!shell && !notRun) return;
    const code = (fence.language === 'console' ? consoleCommands(fence.lines) : fence.lines).join('\n');
    const marker = SKIP_MARKER.exec(lineAbove(lines, fence.line) ?? '')?.[1];
    const following = fences[index + 1];
    const outputBlock =
      following?.language === 'json' && following.line - fence.closeLine <= OUTPUT_BLOCK_GAP
        ? parseJson(following.lines.join('\n'))
        : undefined;
    const skip = marker ?? pageSkip ?? notRun;
    blocks.push({
      page,
      line: fence.line,
      language: fence.language,
      code,
      ...(skip ? { skip } : {}),
      expected: [...commentOutputs(code), ...(outputBlock === undefined ? [] : [outputBlock])],
    });
  });
  return blocks;
}
