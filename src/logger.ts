/**
 * The pino logger of `corral serve`: structured, with secret-bearing fields redacted; JSON lines, or on a terminal
 * readable lines (`prettyLine`: time, level, message, then the fields the message does not already say, as
 * key=value).
 */
import pino, { type Logger } from 'pino';

export type LogFormat = 'json' | 'pretty';

/** Structured logs; anything that could hold a secret is redacted even if a caller logs it by mistake. */
export function createLogger(options: {
  level: string;
  destination?: pino.DestinationStream;
  /** pretty: each JSON line is rewritten by prettyLine before it reaches the destination (stdout by default). */
  format?: LogFormat;
  /** Colour the pretty lines (a terminal). */
  colors?: boolean;
}): Logger {
  const colors = options.colors ?? false;
  // JSON: the destination as given (pino's stdout when none); pretty: every line rewritten on its way there.
  const stream: pino.DestinationStream | undefined =
    options.format === 'pretty'
      ? prettified(options.destination ?? pino.destination({ fd: 1, sync: true }), colors)
      : options.destination;
  return pino(
    {
      level: options.level,
      base: { service: 'corral' },
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          '*.password',
          '*.apiKey',
          '*.key',
          '*.secret',
          'password',
          'apiKey',
          'key',
          'secret',
        ],
        censor: '[redacted]',
      },
    },
    stream,
  );
}

function prettified(out: pino.DestinationStream, colors: boolean): pino.DestinationStream {
  return { write: (line) => out.write(prettyLine(line, colors)) };
}

const LEVELS: Record<number, [string, string]> = {
  10: ['TRACE', '90'],
  20: ['DEBUG', '36'],
  30: ['INFO', '32'],
  40: ['WARN', '33'],
  50: ['ERROR', '31'],
  60: ['FATAL', '35'],
};
/** Fields every line has, shown in the line's head or not at all. */
const HEAD = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service', 'err']);

/**
 * One pino JSON line as a readable one: `12:04:05.120 INFO  listening  role=api addr=127.0.0.1:8080`, an error's
 * type, message and stack on the lines below. A line that is not a JSON object passes through unchanged.
 */
export function prettyLine(line: string, colors: boolean): string {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return line;
  }
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return line;
  const record = entry as Record<string, unknown>;
  const paint = (code: string, text: string) => (colors ? `\x1b[${code}m${text}\x1b[0m` : text);
  const [name, color] = LEVELS[Number(record.level)] ?? [String(record.level ?? 'LOG').toUpperCase(), '0'];
  const time = typeof record.time === 'number' ? new Date(record.time).toISOString().slice(11, 23) : '';
  const message = typeof record.msg === 'string' ? record.msg : '';
  const fields = Object.entries(record)
    .filter(([key, value]) => !HEAD.has(key) && !says(message, value))
    .map(([key, value]) => `${paint('2', `${key}=`)}${fieldText(value)}`);
  const head = [time, paint(color, name.padEnd(5)), message, ...fields]
    .filter((part) => part !== '')
    .join(' ');
  return `${head}${errorText(record.err)}\n`;
}

/**
 * Whether the message already says the field's value (a string or number standing as a word of its own, or for a
 * list of lines, one of them): a line written for a person (`endpoint sdxl (ep_1): worker w_1 exited with code 1`)
 * keeps its fields for a log collector, and the terminal does not show them twice.
 */
function says(message: string, value: unknown): boolean {
  if (Array.isArray(value)) return value.some((item) => typeof item === 'string' && says(message, item));
  if (typeof value !== 'string' && typeof value !== 'number') return false;
  const text = String(value);
  if (text === '') return false;
  const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\w./-])${escaped}(?![\\w/-])`).test(message);
}

function fieldText(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/** An error pino serialised (`{type, message, stack}`): its stack (which starts with type and message), indented. */
function errorText(err: unknown): string {
  if (typeof err !== 'object' || err === null) return err === undefined ? '' : ` err=${fieldText(err)}`;
  const { type, message, stack } = err as Record<string, unknown>;
  const text = typeof stack === 'string' ? stack : `${String(type ?? 'Error')}: ${String(message ?? '')}`;
  return `\n${text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n')}`;
}
