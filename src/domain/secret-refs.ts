/**
 * References to an owner's secrets in env values: `{{ CORRAL_SECRET_name }}` (RunPod's `{{ RUNPOD_SECRET_name }}`
 * convention, whitespace inside the braces allowed), anywhere in a value and any number of times. Finding and
 * replacing them is pure; the values come from the caller, only when a worker starts.
 */

/** A secret's name: letters, digits, `_` and `-`, 1 to 64 characters. */
export const SECRET_NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_SECRET_VALUE_LENGTH = 32 * 1024;

const REFERENCE = /\{\{\s*CORRAL_SECRET_([A-Za-z0-9_-]{1,64})\s*\}\}/g;

/** The secret names a value references, each once, in order of appearance. */
export function secretReferences(value: string): string[] {
  return [...new Set([...value.matchAll(REFERENCE)].map((match) => match[1] as string))];
}

/** Every reference in a value, repeats included: the secret's name and the characters the reference takes. */
export function referenceOccurrences(value: string): { name: string; text: string }[] {
  return [...value.matchAll(REFERENCE)].map((match) => ({ name: match[1] as string, text: match[0] }));
}

/** A referenced secret that does not exist (any more). */
export class MissingSecretError extends Error {
  override name = 'MissingSecretError';

  constructor(
    readonly envKey: string,
    readonly secretName: string,
  ) {
    super(`environment variable ${envKey} references secret "${secretName}", which does not exist`);
  }
}

/**
 * The env with every reference replaced by its secret's value; MissingSecretError names the first env whose secret
 * `values` lacks. Values without references are returned as they are.
 */
export function resolveSecretReferences(
  env: Readonly<Record<string, string>>,
  values: ReadonlyMap<string, string>,
): Record<string, string> {
  const resolved: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    resolved[key] = value.replace(REFERENCE, (_whole, name: string) => {
      const secret = values.get(name);
      if (secret === undefined) throw new MissingSecretError(key, name);
      return secret;
    });
  }
  return resolved;
}
