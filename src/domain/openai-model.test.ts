import { describe, expect, it } from 'vitest';
import {
  chooseModelEndpoint,
  MAX_OPENAI_MODEL_LENGTH,
  MODELS_NAMED,
  openaiModelProblem,
  unknownModelMessage,
} from './openai-model.js';

describe('openaiModelProblem', () => {
  it.each([
    'gpt-4o',
    'meta-llama/Llama-3.1-8B-Instruct',
    'qwen2.5:7b',
    'ft:gpt-4o-mini:acme::abc123',
    'BAAI/bge-small-en-v1.5',
    'org/model@main',
    'a'.repeat(MAX_OPENAI_MODEL_LENGTH),
  ])('takes %s', (name) => {
    expect(openaiModelProblem(name)).toBeUndefined();
  });

  it.each([
    ['', 'must start'],
    ['two words', 'must start'],
    ['-leading-dash', 'must start'],
    ['/root', 'must start'],
    ['quote"d', 'must start'],
    ['tab\there', 'must start'],
    ['modèle', 'must start'],
    ['a'.repeat(MAX_OPENAI_MODEL_LENGTH + 1), 'longer than'],
  ])('refuses %j', (name, problem) => {
    expect(openaiModelProblem(name)).toContain(problem);
  });
});

describe('chooseModelEndpoint', () => {
  const llama = { id: 'e1', openaiModel: 'llama' };
  const qwen = { id: 'e2', openaiModel: 'qwen' };
  const bge = { id: 'e3', openaiModel: 'bge' };

  it.each([
    { model: 'llama', endpoints: [llama, qwen], found: 'e1' },
    { model: 'qwen', endpoints: [llama, qwen], found: 'e2' },
    // Never two of one owner (the store refuses it); were there, the lowest id, on every replica alike.
    { model: 'llama', endpoints: [{ id: 'e9', openaiModel: 'llama' }, llama], found: 'e1' },
  ])('$model among $endpoints.length picks $found', ({ model, endpoints, found }) => {
    const choice = chooseModelEndpoint(model, endpoints);
    expect(choice.kind === 'found' && choice.endpoint.id).toBe(found);
  });

  it.each([
    { model: 'Llama', endpoints: [llama, qwen, bge], models: ['bge', 'llama', 'qwen'] },
    { model: 'llama ', endpoints: [llama], models: ['llama'] },
    { model: undefined, endpoints: [qwen, llama], models: ['llama', 'qwen'] },
    { model: 'llama', endpoints: [], models: [] },
  ])('$model (exact names only) is unknown: the models there are, sorted', ({ model, endpoints, models }) => {
    expect(chooseModelEndpoint(model, endpoints)).toEqual({ kind: 'unknown', models, more: 0 });
  });

  it(`names at most ${MODELS_NAMED} models and counts the rest`, () => {
    const many = Array.from({ length: MODELS_NAMED + 5 }, (_, i) => ({
      id: `e${i}`,
      openaiModel: `m${String(i).padStart(3, '0')}`,
    }));
    const choice = chooseModelEndpoint('other', many);
    expect(choice).toMatchObject({ kind: 'unknown', more: 5 });
    if (choice.kind !== 'unknown') return;
    expect(choice.models).toHaveLength(MODELS_NAMED);
    expect(unknownModelMessage('other', choice)).toMatch(
      /^no endpoint serves the model "other"; the models there are: m000, .* and 5 more$/,
    );
  });

  it('says what to do when no endpoint has a model name, and when the request names none', () => {
    expect(unknownModelMessage('x', { models: [], more: 0 })).toContain('none of this key');
    expect(unknownModelMessage(undefined, { models: ['llama'], more: 0 })).toBe(
      'the request names no model; the models there are: llama',
    );
  });
});
