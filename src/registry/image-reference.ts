/**
 * Image references as Docker reads them (`nginx`, `ghcr.io/org/app:1`, `127.0.0.1:5000/a/b@sha256:...`): the
 * registry host, the repository, the tag or digest, with Docker Hub's defaults (docker.io, library/, latest). Pure.
 */
import { parseImageName } from '../domain/image-name.js';

export interface ImageReference {
  /** The registry host as Docker names it: `docker.io` for Docker Hub, else host[:port]. */
  registry: string;
  /** The repository path in that registry, e.g. `library/nginx`. */
  repository: string;
  /** Tag; `latest` when the reference names neither a tag nor a digest. */
  tag: string;
  /** `sha256:...` when the reference pins a digest (the tag is then ignored by registries). */
  digest?: string;
}

export const DOCKER_HUB = 'docker.io';

/** Parses a reference, or returns undefined when it does not read by the registry's grammar (domain/image-name.ts). */
export function parseImageReference(reference: string): ImageReference | undefined {
  const parsed = parseImageName(reference.trim());
  if (!parsed.ok) return undefined;
  const { domain, tag, digest } = parsed.name;
  let registry = domain ?? DOCKER_HUB;
  if (registry === 'index.docker.io' || registry === 'registry-1.docker.io') registry = DOCKER_HUB;
  const path = parsed.name.path.split('/');
  if (registry === DOCKER_HUB && path.length === 1) path.unshift('library');
  return { registry, repository: path.join('/'), tag: tag ?? 'latest', ...(digest ? { digest } : {}) };
}

/** `registry/repository`, the name two references share when they are the same image repository. */
export function repositoryName(ref: ImageReference): string {
  return `${ref.registry}/${ref.repository}`;
}

/** The reference written in full: `docker.io/library/nginx:latest`, or `...@sha256:...` when pinned. */
export function formatReference(ref: ImageReference): string {
  return ref.digest ? `${repositoryName(ref)}@${ref.digest}` : `${repositoryName(ref)}:${ref.tag}`;
}

/** The host without its port and brackets. */
function hostname(registry: string): string {
  if (registry.startsWith('[')) return registry.slice(1, registry.indexOf(']'));
  return registry.replace(/:\d+$/, '');
}

/**
 * Loopback registries are spoken to over plain http, as the Docker engine allows them without TLS
 * (127.0.0.0/8 and ::1 are insecure registries by default); every other registry over https.
 */
export function isLoopbackRegistry(registry: string): boolean {
  const host = hostname(registry);
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The host[:port] a registry is reached at: Docker Hub's API is not at docker.io. */
export function registryHost(registry: string): string {
  return registry === DOCKER_HUB ? 'registry-1.docker.io' : registry;
}

/** The base URL of the registry's v2 API. */
export function registryBaseUrl(registry: string): string {
  return `${isLoopbackRegistry(registry) ? 'http' : 'https'}://${registryHost(registry)}`;
}

/**
 * Whether an operator's pattern names this image: same registry and repository, and the pattern's tag or digest
 * where it has one (`corral-test-worker` matches every tag, `corral-test-worker:latest` only that one).
 */
export function patternMatches(pattern: string, image: string): boolean {
  const wanted = parseImageReference(pattern);
  const ref = parseImageReference(image);
  if (!wanted || !ref || repositoryName(wanted) !== repositoryName(ref)) return false;
  if (wanted.digest) return wanted.digest === ref.digest;
  const patternHasTag = pattern.lastIndexOf(':') > pattern.lastIndexOf('/');
  return !patternHasTag || (ref.digest === undefined && wanted.tag === ref.tag);
}
