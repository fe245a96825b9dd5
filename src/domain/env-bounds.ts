/**
 * The bound on one worker's environment once its secret references are resolved: its size in bytes and how many
 * references it resolves. Measured without building it (a reference counts its secret's size), so that a spec with
 * thousands of references to one large secret costs the server nothing before it is refused: at create and update
 * against the owner's secrets then, and again at each worker start against their values at that time. Pure.
 */
import { referenceOccurrences } from './secret-refs.js';

/**
 * `bytes`: the env as a process gets it, `KEY=value` and a NUL for each variable. 512 KiB holds 12 envs of a 30 KB
 * certificate, or 15 secrets of the largest size (32 KiB), and is a quarter of what Linux lets a process start with
 * for its arguments and env together (2 MiB under the default 8 MiB stack). `references`: 1,000, ten for each of the
 * 100 variables a spec may have; no real spec comes near, and each one is a copy at every worker start.
 */
export const RESOLVED_ENV_LIMITS = { bytes: 512 * 1024, references: 1_000 } as const;

export interface ResolvedEnvLimits {
  bytes: number;
  references: number;
}

export interface ResolvedEnvSize {
  bytes: number;
  references: number;
}

/**
 * The size of the env with each reference replaced by its secret, from the secrets' sizes in UTF-8 bytes; a secret
 * `secretBytes` does not know counts as empty (it is reported as missing elsewhere).
 */
export function resolvedEnvSize(
  env: Iterable<readonly [string, string]>,
  secretBytes: (name: string) => number | undefined,
): ResolvedEnvSize {
  let bytes = 0;
  let references = 0;
  for (const [key, value] of env) {
    bytes += utf8Length(key) + 1 + utf8Length(value) + 1;
    for (const { name, text } of referenceOccurrences(value)) {
      references += 1;
      bytes += (secretBytes(name) ?? 0) - utf8Length(text);
    }
  }
  return { bytes, references };
}

/** Which bound a size breaks, in words that name the limit; undefined within both. */
export function envBoundProblem(
  size: ResolvedEnvSize,
  limits: ResolvedEnvLimits = RESOLVED_ENV_LIMITS,
):
  | { limit: 'resolvedEnvBytes' | 'secretReferences'; max: number; value: number; message: string }
  | undefined {
  if (size.references > limits.references) {
    return {
      limit: 'secretReferences',
      max: limits.references,
      value: size.references,
      message: `the env has ${size.references} secret references; at most ${limits.references} are allowed (the secretReferences limit)`,
    };
  }
  if (size.bytes > limits.bytes) {
    return {
      limit: 'resolvedEnvBytes',
      max: limits.bytes,
      value: size.bytes,
      message:
        `the env with its secrets resolved is ${size.bytes} bytes; at most ${limits.bytes} ` +
        `(${limits.bytes / 1024} KiB, the resolvedEnvBytes limit) are allowed`,
    };
  }
  return undefined;
}

/** A worker start whose env, resolved against the owner's secrets now, breaks the bound (a secret grew). */
export class ResolvedEnvTooLargeError extends Error {
  override name = 'ResolvedEnvTooLargeError';

  constructor(message: string) {
    super(`cannot start the worker: ${message}; shorten the envs or the secrets they reference`);
  }
}

/**
 * The bytes of `text` in UTF-8, counted without encoding it (the domain runs in the dashboard too, which has no
 * Buffer). A lone surrogate counts 3, as its replacement character would.
 */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i += 1;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
