/**
 * What the hub cache directory holds, read from disk: each `models--{org}--{name}` repository, its snapshots (with
 * the revisions in `refs/` that point to them), their files and bytes, the bytes its blobs take (shared between
 * snapshots, counted once), and when it was last used (the repository directory's mtime, touched at each use).
 */
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { CachedModel } from '../ports/model-cache.js';
import { repoPaths } from './hub-layout.js';

const REPO_FOLDER = /^models--(.+)--(.+)$/;

export async function entries(dir: string): Promise<Dirent[]> {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

/** Files under `dir`, by their path relative to it. */
export async function filesUnder(dir: string, root = dir): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await entries(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await filesUnder(path, root)));
    else found.push(relative(root, path));
  }
  return found;
}

async function sumSizes(paths: string[]): Promise<number> {
  let total = 0;
  for (const path of paths) {
    try {
      total += (await stat(path)).size;
    } catch {
      // A snapshot link whose blob is gone (evicted meanwhile) holds nothing.
    }
  }
  return total;
}

/** Revision -> commit, from `refs/` (`refs/pr/1` is a file in `refs/pr/`). */
export async function refsOf(refsDir: string): Promise<Map<string, string>> {
  const refs = new Map<string, string>();
  for (const path of await filesUnder(refsDir)) {
    refs.set(path.split('\\').join('/'), (await readFile(join(refsDir, path), 'utf8')).trim());
  }
  return refs;
}

export async function listCachedModels(hubDir: string): Promise<CachedModel[]> {
  const models: CachedModel[] = [];
  for (const folder of await entries(hubDir)) {
    const match = REPO_FOLDER.exec(folder.name);
    if (!folder.isDirectory() || !match) continue;
    const name = `${match[1]}/${match[2]}`;
    const paths = repoPaths(hubDir, name);
    const blobs = (await filesUnder(join(paths.repoDir, 'blobs'))).map((blob) =>
      join(paths.repoDir, 'blobs', blob),
    );
    const diskBytes = await sumSizes(blobs);
    const lastUsedAt = (await stat(paths.repoDir)).mtimeMs;
    const refs = await refsOf(join(paths.repoDir, 'refs'));
    for (const snapshot of await entries(join(paths.repoDir, 'snapshots'))) {
      const commit = snapshot.name;
      const files = await filesUnder(paths.snapshot(commit));
      const revision = [...refs].find(([, target]) => target === commit)?.[0] ?? commit;
      models.push({
        name,
        revision,
        commit,
        files: files.length,
        bytes: await sumSizes(files.map((file) => join(paths.snapshot(commit), file))),
        repoDir: paths.repoDir,
        lastUsedAt,
        diskBytes,
      });
    }
  }
  return models;
}
