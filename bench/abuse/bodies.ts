/** The create bodies of the suite: owner B's ordinary one, and owner A's oversized and maximal ones. */
import { MAXIMAL_ENVS, OVERSIZED_ENVS, SPEC_BODY_LIMIT_BYTES } from './settings.js';

function createBody(appName: string | undefined, envs: { key: string; value: string }[]): string {
  return JSON.stringify({
    endpoint: {
      ...(appName === undefined ? {} : { appName }),
      name: 'bench',
      image: { image: 'registry.example.com/bench:1.0' },
      ports: [{ port: 8000 }],
      workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1, freeTimeout: 60, maxConcurrent: 1 },
      envs,
    },
  });
}

/** An ordinary create of owner B (no appName: the id is used). */
export function ordinaryBody(): string {
  return createBody(undefined, [{ key: 'MODEL', value: 'demo' }]);
}

/** The flood: 20,000 envs with 40-byte values, about 0.9 MB. */
export function oversizedBody(): Buffer {
  const envs = Array.from({ length: OVERSIZED_ENVS }, (_, i) => ({ key: `K${i}`, value: 'v'.repeat(24) }));
  return Buffer.from(createBody(undefined, envs));
}

/** A valid create as large as the bounds allow: 100 envs filled until the body is just under the create limit. */
export function maximalBody(): Buffer {
  const empty = createBody(
    undefined,
    Array.from({ length: MAXIMAL_ENVS }, (_, i) => ({ key: `K${i}`, value: '' })),
  );
  const perValue = Math.floor((SPEC_BODY_LIMIT_BYTES - 64 - empty.length) / MAXIMAL_ENVS);
  const envs = Array.from({ length: MAXIMAL_ENVS }, (_, i) => ({
    key: `K${i}`,
    value: 'v'.repeat(perValue),
  }));
  return Buffer.from(createBody(undefined, envs));
}
