/** Random ids for new endpoints and registry credentials, behind `IdGenerator` so that tests choose their own. */
import { randomString } from '../crypto/api-keys.js';

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const LOWER_DIGITS = `${LOWER}0123456789`;

export interface IdGenerator {
  endpoint(): string;
  credentials(): string;
}

/** Endpoint ids double as the default appName, so they are valid DNS labels: a letter then 15 of [a-z0-9]. */
export const randomIds: IdGenerator = {
  endpoint: () => randomString(1, LOWER) + randomString(15, LOWER_DIGITS),
  credentials: () => `auth-${randomString(12, LOWER_DIGITS)}`,
};

/** An installation's id, made once per database (LABELS.installation on everything it makes). */
export function newInstallationId(): string {
  return `inst-${randomString(12, LOWER_DIGITS)}`;
}

/** A running `corral serve`'s id, new at every start (its heartbeat row, its lease). */
export function newReplicaId(): string {
  return `rep-${randomString(12, LOWER_DIGITS)}`;
}
