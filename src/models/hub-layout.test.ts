import { describe, expect, it } from 'vitest';
import {
  allowedBy,
  blobLinkTarget,
  fileUrl,
  isSafeRepoPath,
  normalizeEtag,
  repoPaths,
} from './hub-layout.js';

describe("the hub's names", () => {
  it('names the repository folder, its blobs, snapshots and refs as the client does', () => {
    expect(repoPaths('/cache/hub', 'meta-llama/Llama-3.1-8B').repoDir).toBe(
      '/cache/hub/models--meta-llama--Llama-3.1-8B',
    );
    const paths = repoPaths('/cache/hub', 'org/name');
    expect(paths.snapshot('c'.repeat(40), 'tokenizer/tokenizer.json')).toBe(
      `/cache/hub/models--org--name/snapshots/${'c'.repeat(40)}/tokenizer/tokenizer.json`,
    );
    expect(paths.ref('refs/pr/1')).toBe('/cache/hub/models--org--name/refs/refs/pr/1');
    expect(paths.blob('ab')).toBe('/cache/hub/models--org--name/blobs/ab');
  });

  it('links a snapshot file to its blob relative to its own directory, however deep', () => {
    expect(blobLinkTarget('config.json', 'e1')).toBe('../../blobs/e1');
    expect(blobLinkTarget('tokenizer/sub/vocab.txt', 'e1')).toBe('../../../../blobs/e1');
  });

  it('quotes the revision whole and the path per segment, as hf_hub_url does', () => {
    expect(fileUrl('http://hub', 'org/name', 'refs/pr/1', 'dir/a b.json')).toBe(
      'http://hub/org/name/resolve/refs%2Fpr%2F1/dir/a%20b.json',
    );
  });

  it('normalizes weak and quoted ETags', () => {
    expect(normalizeEtag('W/"abc"')).toBe('abc');
    expect(normalizeEtag('"abc"')).toBe('abc');
    expect(normalizeEtag(undefined)).toBeNull();
  });

  it('refuses repository paths that would leave the snapshot', () => {
    expect(['a.json', 'dir/a.json'].every(isSafeRepoPath)).toBe(true);
    expect(['../a', 'a/../../b', '/etc/passwd', 'a//b', './a', ''].some(isSafeRepoPath)).toBe(false);
  });

  it("matches allowPatterns as fnmatch does: '*' crosses '/', 'dir/' is 'dir/*', none allows all", () => {
    const allowed = allowedBy(['*.safetensors', 'tokenizer/', 'config.jso?', '[!x]eadme.md']);
    expect(
      [
        'model.safetensors',
        'sub/model.safetensors',
        'tokenizer/tokenizer.json',
        'config.json',
        'readme.md',
        'xeadme.md',
        'model.bin',
      ].filter(allowed),
    ).toEqual([
      'model.safetensors',
      'sub/model.safetensors',
      'tokenizer/tokenizer.json',
      'config.json',
      'readme.md',
    ]);
    expect(allowedBy([])('anything')).toBe(true);
    expect(allowedBy(['a.b'])('axb')).toBe(false);
  });
});
