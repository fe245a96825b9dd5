/**
 * What removing a model takes out of the hub cache directory: the whole `models--{org}--{name}` repository, or one
 * revision of it (its snapshot, the refs that point to its commit, and the blobs no other snapshot links). Each part
 * is renamed away before it is deleted, so a reader never sees half a snapshot or half a repository. Callers make
 * sure no download of the model runs meanwhile (hub-cache.ts).
 */
import { randomUUID } from 'node:crypto';
import { readlink, rename, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { entries, filesUnder, refsOf } from './cache-listing.js';
import { isBlobName, isCommitHash, repoPaths } from './hub-layout.js';

/** Removes the repository; false when it was not here. */
export async function removeRepository(hubDir: string, name: string): Promise<boolean> {
  const { repoDir } = repoPaths(hubDir, name);
  if (!(await stat(repoDir).catch(() => null))) return false;
  await renameAndRemove(repoDir);
  return true;
}

/**
 * Removes one revision: `revision` is a ref (`main`, `refs/pr/1`) or a commit with a snapshot. The whole repository
 * goes when it was its last snapshot. False when the repository holds no such revision.
 */
export async function removeRevision(hubDir: string, name: string, revision: string): Promise<boolean> {
  const paths = repoPaths(hubDir, name);
  const refs = await refsOf(join(paths.repoDir, 'refs'));
  const snapshots = (await entries(join(paths.repoDir, 'snapshots'))).map((entry) => entry.name);
  const commit = refs.get(revision) ?? (isCommitHash(revision) ? revision : undefined);
  if (commit === undefined || !snapshots.includes(commit)) return false;
  const others = snapshots.filter((snapshot) => snapshot !== commit);
  if (others.length === 0) return removeRepository(hubDir, name);
  const kept = new Set<string>();
  for (const snapshot of others) {
    for (const file of await filesUnder(paths.snapshot(snapshot))) {
      const target = await readlink(join(paths.snapshot(snapshot), file)).catch(() => null);
      if (target !== null) kept.add(basename(target));
    }
  }
  await renameAndRemove(paths.snapshot(commit));
  for (const [ref, target] of refs) if (target === commit) await rm(paths.ref(ref), { force: true });
  for (const blob of await filesUnder(join(paths.repoDir, 'blobs'))) {
    // Only finished blobs: an `.incomplete` of a cut download is another revision's to resume.
    if (isBlobName(blob) && !kept.has(blob)) await rm(paths.blob(blob), { force: true });
  }
  return true;
}

async function renameAndRemove(path: string): Promise<void> {
  const doomed = `${path}.${randomUUID()}.removing`;
  await rename(path, doomed);
  await rm(doomed, { recursive: true, force: true });
}
