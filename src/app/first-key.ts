/**
 * The keys `corral serve` makes sure of at start: the operator's CORRAL_API_KEY as an admin key, and on the first
 * start of an installation its first admin key, printed once with the lines that set up the CLI.
 */
import type { Logger } from 'pino';
import { systemClock } from '../ports/clock.js';
import { ApiKeyService } from '../service/api-key-service.js';
import type { Store } from '../store/store.js';

export async function ensureKeys(
  store: Store,
  io: {
    logger: Logger;
    stdout: (text: string) => void;
    operatorKey: string | undefined;
    apiUrl: string | undefined;
  },
): Promise<void> {
  const keys = new ApiKeyService({ store, clock: systemClock });
  const { operatorKey } = io;
  if (operatorKey) {
    const outcome = await keys.ensureOperatorKey(operatorKey);
    if (outcome === 'revoked') io.logger.warn('CORRAL_API_KEY has been revoked and is not accepted');
    else io.logger.info({ outcome }, 'CORRAL_API_KEY accepted as an admin key');
  }
  const first = await keys.ensureFirstKey();
  if (first) io.stdout(firstKeyBanner(first.key, io.apiUrl));
}

/** What the first start prints: the key, once, and the lines that set up the CLI, ready to paste. */
function firstKeyBanner(key: string, apiUrl: string | undefined): string {
  const exports = [`  export CORRAL_API_KEY=${key}`];
  if (apiUrl !== undefined) exports.push(`  export CORRAL_API_URL=${apiUrl}`);
  return [
    '',
    'Created the first API key (owner "default", admin). It is shown only this once; keep it safe:',
    '',
    `  ${key}`,
    '',
    'Use it as: Authorization: Bearer <key>   (manage keys with: corral keys create|list|revoke)',
    'For the corral CLI, paste:',
    '',
    ...exports,
    '',
    '',
  ].join('\n');
}
