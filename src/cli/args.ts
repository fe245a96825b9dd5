/** Flag values the client commands share the parsing of (counts such as --tail and --page-size). */
import { CliError } from './output.js';

/** Parses a flag value that must be a non-negative integer; undefined stays undefined. */
export function parseCount(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value.trim())) {
    throw new CliError(`${flag} must be a non-negative integer, got "${value}"`);
  }
  return Number(value.trim());
}
