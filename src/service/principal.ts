/**
 * Who is calling: the owner whose resources they see, and the key (for the audit log); and the one rule of the
 * operations only an admin key may call (403 ADMIN_REQUIRED: the key is valid, only not an admin's).
 */
import { ApiError } from '../errors/api-catalogue.js';

export interface Principal {
  ownerId: string;
  keyId: string;
  admin: boolean;
}

/** Throws ADMIN_REQUIRED unless the key is an admin key; `operation` as the message names it (`GET apikeys`). */
export function requireAdmin(principal: Principal, operation: string): void {
  if (!principal.admin)
    throw new ApiError('ADMIN_REQUIRED', `${operation} needs an admin API key; this key is not one`);
}
