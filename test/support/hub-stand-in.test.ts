import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitBlobSha1 } from './hub-content.js';
import { type HubStandIn, startHubStandIn } from './hub-stand-in.js';

const PUBLIC = 'corral-test/tiny';
const GATED = 'corral-test/gated';
const PRIVATE = 'corral-test/private';
const TOKEN = 'hf_granted';
const OTHER_TOKEN = 'hf_other';

let hub: HubStandIn;

interface ModelInfo {
  sha: string;
  gated: string | false;
  siblings: { rfilename: string }[];
}

beforeAll(async () => {
  hub = await startHubStandIn({
    models: [
      { name: PUBLIC, weightBytes: 3_000_000, shards: 2 },
      { name: GATED, weightBytes: 100_000, access: { kind: 'gated', tokens: [TOKEN] } },
      { name: PRIVATE, weightBytes: 100_000, access: { kind: 'private', tokens: [OTHER_TOKEN] } },
    ],
    treePageSize: 3,
  });
});
afterAll(() => hub.close());

function head(path: string, token?: string): Promise<Response> {
  return fetch(`${hub.url}${path}`, {
    method: 'HEAD',
    redirect: 'manual',
    headers: { 'Accept-Encoding': 'identity', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
  });
}

describe('the hub stand-in', () => {
  it('describes a small file as the hub does: its git blob sha1 as ETag, the commit, its length', async () => {
    const { commit } = await hub.describe(PUBLIC);
    const response = await fetch(`${hub.url}/${PUBLIC}/resolve/main/config.json`);
    const body = Buffer.from(await response.arrayBuffer());
    expect(response.status).toBe(200);
    expect(response.headers.get('x-repo-commit')).toBe(commit);
    expect(response.headers.get('etag')).toBe(`"${gitBlobSha1(body)}"`);
    expect(JSON.parse(body.toString()).model_type).toBe('corral-test');
  });

  it('redirects a large file to a signed URL on another host that serves bytes matching X-Linked-Etag', async () => {
    const response = await head(`/${PUBLIC}/resolve/main/model-00001-of-00002.safetensors`);
    expect(response.status).toBe(302);
    const location = response.headers.get('location') ?? '';
    expect(new URL(location).host).not.toBe(new URL(hub.url).host);
    const size = Number(response.headers.get('x-linked-size'));
    const body = Buffer.from(await (await fetch(location)).arrayBuffer());
    expect(body.length).toBe(size);
    expect(`"${createHash('sha256').update(body).digest('hex')}"`).toBe(
      response.headers.get('x-linked-etag'),
    );
    // A real safetensors header: its length, then JSON naming the tensor.
    const headerLength = Number(body.readBigUInt64LE(0));
    expect(JSON.parse(body.subarray(8, 8 + headerLength).toString()).weight_1.dtype).toBe('U8');

    const tail = await fetch(location, { headers: { Range: `bytes=${size - 10}-` } });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer())).toEqual(body.subarray(size - 10));
    expect((await fetch(location, { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(400);
    expect((await fetch(location.replace(/X-Signature=[0-9a-f]+/, 'X-Signature=0'))).status).toBe(403);
  });

  it('resolves revisions with slashes, quoted or not, and tags to their commits', async () => {
    const pr = await hub.describe(PUBLIC, 'refs/pr/1');
    const main = await hub.describe(PUBLIC, 'main');
    expect(pr.commit).not.toBe(main.commit);
    for (const revision of ['refs%2Fpr%2F1', 'refs/pr/1']) {
      const response = await head(`/${PUBLIC}/resolve/${revision}/config.json`);
      expect(response.headers.get('x-repo-commit')).toBe(pr.commit);
    }
    expect((await head(`/${PUBLIC}/resolve/v1.0/config.json`)).headers.get('x-repo-commit')).toBe(
      main.commit,
    );
    expect((await head(`/${PUBLIC}/resolve/${main.commit}/config.json`)).status).toBe(200);
    const missing = await head(`/${PUBLIC}/resolve/no-such-branch/config.json`);
    expect([missing.status, missing.headers.get('x-error-code')]).toEqual([404, 'RevisionNotFound']);
    const absent = await head(`/${PUBLIC}/resolve/main/absent.bin`);
    expect([absent.status, absent.headers.get('x-error-code')]).toEqual([404, 'EntryNotFound']);
    expect(absent.headers.get('x-repo-commit')).toBe(main.commit);
  });

  it('gives model info and a paged recursive tree with LFS facts', async () => {
    const info = (await (await fetch(`${hub.url}/api/models/${PUBLIC}/revision/main`)).json()) as ModelInfo;
    const { commit, files } = await hub.describe(PUBLIC);
    expect(info.sha).toBe(commit);
    expect(info.siblings.map((sibling: { rfilename: string }) => sibling.rfilename).sort()).toEqual(
      files.map((file) => file.path).sort(),
    );
    const entries: { path: string; oid: string; lfs?: { oid: string } }[] = [];
    let next: string | null = `${hub.url}/api/models/${PUBLIC}/tree/main?recursive=true`;
    let pages = 0;
    while (next) {
      const response: Response = await fetch(next);
      entries.push(...((await response.json()) as typeof entries));
      next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1] ?? null;
      pages += 1;
    }
    expect(pages).toBeGreaterThan(1);
    const weights = entries.find((entry) => entry.path === 'model-00002-of-00002.safetensors');
    expect(weights?.lfs?.oid).toBe(files.find((file) => file.path === weights?.path)?.sha256);
  });

  it('refuses gated files as the hub does, while their model info stays open', async () => {
    const path = `/${GATED}/resolve/main/model.safetensors`;
    const refusals = [await head(path), await head(path, OTHER_TOKEN)];
    expect(refusals.map((r) => [r.status, r.headers.get('x-error-code')])).toEqual([
      [401, 'GatedRepo'],
      [403, 'GatedRepo'],
    ]);
    expect((await head(path, TOKEN)).status).toBe(302);
    const info = (await (await fetch(`${hub.url}/api/models/${GATED}`)).json()) as ModelInfo;
    expect(info.gated).toBe('manual');
    const unknown = await head(path, 'hf_nobody');
    expect(unknown.headers.get('x-error-message')).toBe('Invalid credentials in Authorization header');
  });

  it('hides private and missing repositories alike', async () => {
    const anonymous = await fetch(`${hub.url}/api/models/${PRIVATE}`);
    const withoutAccess = await fetch(`${hub.url}/api/models/${PRIVATE}`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    const missing = await fetch(`${hub.url}/api/models/corral-test/none`);
    expect([anonymous.status, withoutAccess.status, missing.status]).toEqual([401, 404, 401]);
    expect(anonymous.headers.get('x-error-code')).toBe('RepoNotFound');
    const granted = await fetch(`${hub.url}/api/models/${PRIVATE}`, {
      headers: { Authorization: `Bearer ${OTHER_TOKEN}` },
    });
    expect(granted.status).toBe(200);
  });

  it('cuts a download mid-file once, after which a Range request resumes it', async () => {
    const location =
      (await head(`/${PUBLIC}/resolve/main/model-00002-of-00002.safetensors`)).headers.get('location') ?? '';
    hub.cutNextDownload(1_000_000);
    const response = await fetch(location);
    const reader = response.body?.getReader();
    let received = 0;
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = (await reader?.read()) ?? { done: true, value: undefined };
          if (done) return;
          received += value.length;
        }
      })(),
    ).rejects.toThrow();
    expect(received).toBe(1_000_000);
    const rest = await fetch(location, { headers: { Range: `bytes=${received}-` } });
    expect(rest.status).toBe(206);
    expect(rest.headers.get('content-range')).toMatch(new RegExp(`^bytes ${received}-`));
    await rest.arrayBuffer();
  });
});
