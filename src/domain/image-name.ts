/**
 * The grammar of an image reference, as the registry defines it (distribution's reference.go): `[domain/]path
 * [:tag][@digest]`, with lowercase path components, a 128-character tag, a digest of a known algorithm and at most
 * 255 characters of name. An endpoint's `image.ref` must read this way before it is stored, and a stored one that
 * does not is never handed to a runtime. Pure; Docker Hub's defaults (docker.io, library/) are the registry's.
 */

/** One part of a reference that reads as the grammar says: the domain as written, when there is one. */
export interface ImageName {
  /** `host[:port]` as written (`ghcr.io`, `localhost:5000`, `[::1]:5000`); undefined: Docker Hub. */
  domain?: string;
  /** The path components joined by `/` (`library/nginx`, `org/app`), lowercase. */
  path: string;
  tag?: string;
  /** `algorithm:hex`, e.g. `sha256:` and 64 lowercase hex digits. */
  digest?: string;
}

export type ImageNameResult = { ok: true; name: ImageName } | { ok: false; problem: string };

/** distribution's NameTotalLengthMax: the name (domain and path) as written. */
export const MAX_IMAGE_NAME_LENGTH = 255;

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = new RegExp(
  `^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?$`,
);
const TAG = /^\w[\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
/** The algorithms the engine knows (go-digest), with the length of their lowercase hex. */
const DIGEST_HEX_LENGTH: Readonly<Record<string, number>> = { sha256: 64, sha384: 96, sha512: 128 };

/** Reads a reference by the registry's grammar; the problem says what does not fit, for an owner to fix it. */
export function parseImageName(reference: string): ImageNameResult {
  const fail = (problem: string): ImageNameResult => ({ ok: false, problem });
  if (reference === '') return fail('it is empty');
  let rest = reference;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    const problem = digestProblem(digest);
    if (problem) return fail(problem);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return fail(`tag "${tag}" is not 1-128 letters, digits, '_', '.' or '-' (not first)`);
  }
  if (rest.length > MAX_IMAGE_NAME_LENGTH)
    return fail(`the name is longer than ${MAX_IMAGE_NAME_LENGTH} characters`);
  const components = rest.split('/');
  const first = components[0] ?? '';
  // As Docker splits a name: a first component with '.', ':' or uppercase, or `localhost`, is a registry host.
  const hasDomain =
    components.length > 1 &&
    (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase());
  if (hasDomain && !DOMAIN.test(first)) return fail(`"${first}" is not a registry host[:port]`);
  const path = hasDomain ? components.slice(1) : components;
  for (const component of path) {
    if (component === '') return fail('a path component is empty');
    if (PATH_COMPONENT.test(component)) continue;
    if (PATH_COMPONENT.test(component.toLowerCase())) return fail('the repository name must be lowercase');
    return fail(
      `path component "${component}" must be lowercase letters and digits, separated by '.', '_', '__' or '-'`,
    );
  }
  return {
    ok: true,
    name: {
      ...(hasDomain ? { domain: first } : {}),
      path: path.join('/'),
      ...(tag === undefined ? {} : { tag }),
      ...(digest === undefined ? {} : { digest }),
    },
  };
}

/** Why the reference is not one the registry's grammar reads; undefined when it is. */
export function imageNameProblem(reference: string): string | undefined {
  const result = parseImageName(reference);
  return result.ok ? undefined : result.problem;
}

function digestProblem(digest: string): string | undefined {
  const wrong = `digest "${digest}" is not algorithm:hex (sha256: and 64 lowercase hex digits)`;
  if (!DIGEST.test(digest)) return wrong;
  const [algorithm = '', hex = ''] = digest.split(':');
  const length = DIGEST_HEX_LENGTH[algorithm];
  if (length === undefined) return `digest algorithm "${algorithm}" is not sha256, sha384 or sha512`;
  return hex.length === length && /^[0-9a-f]+$/.test(hex) ? undefined : wrong;
}

/**
 * Whether the reference floats on `latest`: it names the tag `latest`, or neither a tag nor a digest (which means
 * `latest`). Kubernetes pulls such an image at every start unless told otherwise (its default pull policy); a
 * reference that does not parse reads as floating.
 */
export function floatsOnLatest(reference: string): boolean {
  const parsed = parseImageName(reference);
  if (!parsed.ok) return true;
  const { tag, digest } = parsed.name;
  return tag === 'latest' || (tag === undefined && digest === undefined);
}
