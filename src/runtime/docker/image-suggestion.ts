/**
 * The local image a name that could not be pulled most likely meant (`corral-test-worke:latest` when the engine
 * holds `corral-test-worker:latest`): the same repository under another tag, else a close spelling of the
 * repository (domain/spelling.ts) under the tag asked for, or its only tag. Pure.
 */
import { closestName } from '../../domain/spelling.js';

export function closeLocalImage(wanted: string, localTags: readonly string[]): string | undefined {
  const asked = splitName(wanted);
  const local = localTags.filter((tag) => tag !== wanted && !tag.startsWith('<none>'));
  const sameRepository = local.find((tag) => splitName(tag).repository === asked.repository);
  if (sameRepository !== undefined) return sameRepository;
  const repositories = [...new Set(local.map((tag) => splitName(tag).repository))];
  const repository = closestName(asked.repository, repositories);
  if (repository === undefined) return undefined;
  const tags = local.filter((tag) => splitName(tag).repository === repository);
  return tags.find((tag) => splitName(tag).tag === asked.tag) ?? (tags.length === 1 ? tags[0] : undefined);
}

/** `host:5000/a/b:tag` -> repository `host:5000/a/b`, tag `tag` (`latest` when none; a digest is dropped). */
function splitName(name: string): { repository: string; tag: string } {
  const [withoutDigest = name] = name.split('@');
  const colon = withoutDigest.lastIndexOf(':');
  if (colon > withoutDigest.lastIndexOf('/')) {
    return { repository: withoutDigest.slice(0, colon), tag: withoutDigest.slice(colon + 1) };
  }
  return { repository: withoutDigest, tag: 'latest' };
}
