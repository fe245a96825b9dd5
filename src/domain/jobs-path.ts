/**
 * The rule of an `http` endpoint's `jobsPath` (issue 29): a normalised absolute path, so that its jobs' delivery URL
 * `/e/{appName}{jobsPath}` stays under the endpoint's own prefix whatever reads it. A URL parser folds `..` and `.`
 * segments, their encoded forms (`%2e`) and backslashes into a climb out of the prefix, and `%2f` is a slash to
 * some servers: each is refused, as is any character a URL path does not hold as written. Pure.
 *
 * The health path keeps its own, looser rule (validate.ts): it is sent straight to the worker's own address, with no
 * prefix to climb out of and no other endpoint behind it, and stored specs may give it a query.
 */

/** The longest `jobsPath`. */
export const MAX_JOBS_PATH_LENGTH = 1_024;

/** What a URL path holds as written (RFC 3986 pchar and `/`); `%` only as the start of `%XX`. */
const PATH_CHARACTERS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*$/;
const BAD_PERCENT = /%(?![0-9A-Fa-f]{2})/;
/** An encoded dot, slash or backslash: a segment or separator in disguise. */
const ENCODED_SEPARATOR = /%(2e|2f|5c)/i;

/** Why `path` is not a normalised jobsPath (in a few words, after "jobsPath "), or undefined when it is one. */
export function jobsPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'must start with /';
  if (path.length > MAX_JOBS_PATH_LENGTH) return `is longer than ${MAX_JOBS_PATH_LENGTH} characters`;
  if (path.includes('\\')) return 'holds a backslash';
  if (!PATH_CHARACTERS.test(path))
    return 'holds a character a URL path does not hold as written (a space, ?, #, a quote, a non-ASCII one...)';
  if (BAD_PERCENT.test(path)) return 'holds a % that does not start a %XX escape';
  if (ENCODED_SEPARATOR.test(path)) return 'holds an encoded dot, slash or backslash (%2e, %2f, %5c)';
  if (path.includes('//')) return 'holds an empty segment (//)';
  if (path.split('/').some((segment) => segment === '.' || segment === '..'))
    return 'holds a . or .. segment';
  return undefined;
}
