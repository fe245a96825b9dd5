/**
 * The Hugging Face hub's names, as its client (`huggingface_hub`) spells them, in one place: the cache layout under a
 * hub directory (`models--{org}--{name}/` with `blobs/{etag}`, `snapshots/{commit}/{path}` and `refs/{revision}`), the
 * URL of a file (`{hub}/{repo}/resolve/{quoted revision}/{path}`), ETags as blob names, commit hashes, the paths a
 * repository may hold, and `allow_patterns` matched as `fnmatch` does. The repository's folder name itself is
 * domain/model-refs.ts's `modelRepoDir`, which a worker's mount names too.
 */
import { join, posix } from 'node:path';
import { modelRepoDir } from '../domain/model-refs.js';

export interface RepoPaths {
  repoDir: string;
  blob(etag: string): string;
  snapshot(commit: string, path?: string): string;
  ref(revision: string): string;
}

/** A repository's paths in the hub cache; its directory is the client's `repo_folder_name` (domain's modelRepoDir). */
export function repoPaths(hubDir: string, name: string): RepoPaths {
  const repoDir = join(hubDir, modelRepoDir(name));
  return {
    repoDir,
    blob: (etag) => join(repoDir, 'blobs', etag),
    snapshot: (commit, path) => join(repoDir, 'snapshots', commit, ...(path ? path.split('/') : [])),
    ref: (revision) => join(repoDir, 'refs', ...revision.split('/')),
  };
}

/** The symlink a snapshot file holds: relative to its own directory, so the cache can move (as the client does). */
export function blobLinkTarget(path: string, etag: string): string {
  const depth = path.split('/').length - 1;
  return posix.join(...Array<string>(depth + 2).fill('..'), 'blobs', etag);
}

/** The client's `hf_hub_url`: the revision quoted whole (`refs/pr/1` is `refs%2Fpr%2F1`), the path per segment. */
export function fileUrl(hubUrl: string, name: string, revision: string, path: string): string {
  const quotedPath = path.split('/').map(encodeURIComponent).join('/');
  return `${hubUrl}/${name}/resolve/${encodeURIComponent(revision)}/${quotedPath}`;
}

export function apiUrl(hubUrl: string, name: string, action: 'revision' | 'tree', revision: string): string {
  return `${hubUrl}/api/models/${name}/${action}/${encodeURIComponent(revision)}`;
}

/** The client's `_normalize_etag`: `W/"abc"` and `"abc"` are both `abc`. */
export function normalizeEtag(etag: string | null | undefined): string | null {
  if (!etag) return null;
  return etag.replace(/^W\//, '').replace(/^"+|"+$/g, '');
}

const COMMIT_HASH = /^[0-9a-f]{40}$/;
export const isCommitHash = (revision: string): boolean => COMMIT_HASH.test(revision);

/** A blob name the hub gives: a sha1 or a sha256, nothing that could climb out of `blobs/`. */
export const isBlobName = (etag: string): boolean => /^[0-9a-f]{40}$|^[0-9a-f]{64}$/.test(etag);

/** A path a repository may hold, safe to join under a snapshot: no `.`/`..` or empty segments, no absolute path. */
export function isSafeRepoPath(path: string): boolean {
  if (path === '' || path.includes('\\') || path.includes('\0')) return false;
  return path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

/** Python's `fnmatch.translate` for `*`, `?`, `[seq]` and `[!seq]`: `*` crosses `/` as it does there. */
function patternRegExp(pattern: string): RegExp {
  let source = '';
  for (let index = 0; index < pattern.length; index += 1) {
    const char = pattern[index] ?? '';
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else if (char === '[') {
      const close = pattern.indexOf(']', index + 2);
      if (close === -1) source += '\\[';
      else {
        let set = pattern.slice(index + 1, close).replaceAll('\\', '\\\\');
        if (set.startsWith('!')) set = `^${set.slice(1)}`;
        else if (set.startsWith('^')) set = `\\${set}`;
        source += `[${set}]`;
        index = close;
      }
    } else source += char.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}

/** `snapshot_download`'s `allow_patterns` (`filter_repo_objects`): none allows every file; `dir/` means `dir/*`. */
export function allowedBy(patterns: string[]): (path: string) => boolean {
  if (patterns.length === 0) return () => true;
  const expressions = patterns.map((pattern) =>
    patternRegExp(pattern.endsWith('/') ? `${pattern}*` : pattern),
  );
  return (path) => expressions.some((expression) => expression.test(path));
}
