import { describe, expect, it } from 'vitest';
import { MissingSecretError, resolveSecretReferences, secretReferences } from './secret-refs.js';

describe('secret references in env values', () => {
  it.each<[string, string[]]>([
    ['{{ CORRAL_SECRET_hf_token }}', ['hf_token']],
    ['{{CORRAL_SECRET_hf-token}}', ['hf-token']],
    ['{{   CORRAL_SECRET_a \t}}', ['a']],
    ['Bearer {{ CORRAL_SECRET_api }} and {{ CORRAL_SECRET_api }} and {{ CORRAL_SECRET_b }}', ['api', 'b']],
    ['plain value', []],
    ['{{ RUNPOD_SECRET_x }}', []],
    ['{{ CORRAL_SECRET_ }}', []],
    ['{ CORRAL_SECRET_x }', []],
    ['{{ CORRAL_SECRET_has space }}', []],
  ])('%s references %j', (value, names) => {
    expect(secretReferences(value)).toEqual(names);
  });

  it('replaces each reference with its value and leaves plain values as they are', () => {
    const values = new Map([
      ['hf', 'hf_abc$&$1'],
      ['db', 'p@ss'],
    ]);
    expect(
      resolveSecretReferences(
        {
          TOKEN: '{{ CORRAL_SECRET_hf }}',
          URL: 'postgres://u:{{CORRAL_SECRET_db}}@h/d',
          MODE: 'fast {{ x }}',
        },
        values,
      ),
    ).toEqual({ TOKEN: 'hf_abc$&$1', URL: 'postgres://u:p@ss@h/d', MODE: 'fast {{ x }}' });
  });

  it('names the env and the secret when a secret is missing', () => {
    const resolve = () =>
      resolveSecretReferences({ A: 'x', HF_TOKEN: '{{ CORRAL_SECRET_gone }}' }, new Map());
    expect(resolve).toThrow(MissingSecretError);
    expect(resolve).toThrow('environment variable HF_TOKEN references secret "gone", which does not exist');
  });
});
