/**
 * Start-up failures that come from a setting's value (a database that cannot be reached, an address that cannot
 * be listened on) become a ConfigError: one line naming the setting and its value, and exit code 2. Anything
 * else is returned unchanged, since it is not the setting's fault.
 */
import { DatabaseUnreachableError } from '../store/open.js';
import { DatabaseInUseError } from '../store/sqlite/process-lock.js';
import { formatHostPort } from './config.js';
import { ConfigError, describeSetting, type HostPort } from './settings.js';

/** Why an address cannot be listened on, by the error's code. */
const LISTEN_PROBLEMS = new Map([
  ['EADDRINUSE', 'the address is already in use (another process listens there)'],
  ['EACCES', 'permission denied (ports below 1024 need privileges)'],
  ['EADDRNOTAVAIL', 'no network interface of this machine has that address'],
  ['ENOTFOUND', 'the host name does not resolve'],
  ['EAI_AGAIN', 'the host name does not resolve'],
]);

/** A failed listen on the API's or the gateway's address, named by its setting. */
export function listenError(setting: 'apiAddr' | 'gatewayAddr', address: HostPort, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | null | undefined)?.code;
  const problem = code === undefined ? undefined : LISTEN_PROBLEMS.get(code);
  if (problem === undefined) return error;
  return new ConfigError(
    `cannot listen on ${describeSetting(setting)} ${formatHostPort(address)}: ${problem}`,
  );
}

/** A database that cannot be opened, named by its setting; the database's own reason is kept (it says what). */
export function databaseError(error: unknown): unknown {
  if (error instanceof DatabaseInUseError) return new ConfigError(`cannot serve: ${error.message}`);
  if (!(error instanceof DatabaseUnreachableError)) return error;
  const setting = describeSetting(error.fromUrl ? 'databaseUrl' : 'dataDir');
  return new ConfigError(`cannot open the database of ${setting} ${error.target}: ${error.reason}`);
}
