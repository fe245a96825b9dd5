/** Who is calling: the owner whose resources they see, and the key (for the audit log). */
export interface Principal {
  ownerId: string;
  keyId: string;
  admin: boolean;
}
