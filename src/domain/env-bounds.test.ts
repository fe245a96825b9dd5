/** The bound on a worker's resolved env: measured without building it, and which limit a size breaks. */
import { describe, expect, it } from 'vitest';
import { envBoundProblem, RESOLVED_ENV_LIMITS, resolvedEnvSize, utf8Length } from './env-bounds.js';

const sizes = (entries: Record<string, number>) => (name: string) => entries[name];

describe('resolvedEnvSize', () => {
  it.each<[string, [string, string][], Record<string, number>, { bytes: number; references: number }]>([
    [
      'plain values: KEY=value and a NUL each',
      [
        ['A', '1'],
        ['BB', '22'],
      ],
      {},
      { bytes: 4 + 6, references: 0 },
    ],
    [
      'a reference counts its secret, not its text',
      [['T', '{{ CORRAL_SECRET_t }}']],
      { t: 10 },
      { bytes: 13, references: 1 },
    ],
    [
      'repeats count each time',
      [['T', 'x{{CORRAL_SECRET_t}}y{{CORRAL_SECRET_t}}']],
      { t: 5 },
      { bytes: 15, references: 2 },
    ],
    ['UTF-8 bytes, not characters', [['É', 'ü']], {}, { bytes: 2 + 1 + 2 + 1, references: 0 }],
    ['an unknown secret counts as empty', [['T', '{{CORRAL_SECRET_gone}}']], {}, { bytes: 3, references: 1 }],
  ])('%s', (_what, env, secretSizes, expected) => {
    expect(resolvedEnvSize(env, sizes(secretSizes))).toEqual(expected);
  });

  it('measures an env of terabytes without building it: 1,000 references to a 1 GiB secret', () => {
    const env: [string, string][] = [['X', '{{CORRAL_SECRET_huge}}'.repeat(1_000)]];
    const started = performance.now();
    const size = resolvedEnvSize(env, sizes({ huge: 2 ** 30 }));
    expect(size).toEqual({ bytes: 1_000 * 2 ** 30 + 3, references: 1_000 });
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('envBoundProblem', () => {
  it('allows up to the limits: 512 KiB and 1,000 references by default', () => {
    expect(RESOLVED_ENV_LIMITS).toEqual({ bytes: 524_288, references: 1_000 });
    expect(envBoundProblem({ bytes: 524_288, references: 1_000 })).toBeUndefined();
    // 12 envs of a 30 KB secret (a certificate) fit.
    expect(envBoundProblem({ bytes: 12 * 30_000 + 12 * 10, references: 12 })).toBeUndefined();
  });

  it('names the limit broken, with its maximum and the value', () => {
    expect(envBoundProblem({ bytes: 524_289, references: 3 })).toEqual({
      limit: 'resolvedEnvBytes',
      max: 524_288,
      value: 524_289,
      message:
        'the env with its secrets resolved is 524289 bytes; at most 524288 (512 KiB, the resolvedEnvBytes limit) are allowed',
    });
    expect(envBoundProblem({ bytes: 70_000_000, references: 2_142 })).toMatchObject({
      limit: 'secretReferences',
      max: 1_000,
      value: 2_142,
    });
  });

  it('takes other limits', () => {
    expect(envBoundProblem({ bytes: 11, references: 0 }, { bytes: 10, references: 5 })?.limit).toBe(
      'resolvedEnvBytes',
    );
  });
});

describe('utf8Length', () => {
  it.each([
    [''],
    ['plain ascii'],
    ['café'],
    ['日本語のテキスト'],
    ['emoji 😀 and 𝄞'],
    ['lone \ud800 surrogate'],
    ['trailing \ud83d'],
  ])('counts %j as Buffer.byteLength does', (text) => {
    expect(utf8Length(text)).toBe(Buffer.byteLength(text));
  });
});
