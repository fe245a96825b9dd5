/**
 * An endpoint's OpenAI model name (`openaiModel`, issue 35): the name OpenAI clients send as `model`, by which the
 * gateway's model router (`/openai/v1/...` without an endpoint in the path) picks one of the caller's endpoints.
 * Its rule (a bounded, printable name) and the router's choice among the endpoints a key reaches. Pure.
 */

/** The longest `openaiModel`. */
export const MAX_OPENAI_MODEL_LENGTH = 200;

/**
 * What a model name holds: a letter or digit first, then letters, digits and `. _ - : / @ +` (Hugging Face repo
 * ids `org/name`, tags `qwen2.5:7b`, fine-tunes `ft:base:org::id`); no space, quote or control character.
 */
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/;

/** Why `name` is no OpenAI model name (in a few words, after "openaiModel "), or undefined when it is one. */
export function openaiModelProblem(name: string): string | undefined {
  if (name.length > MAX_OPENAI_MODEL_LENGTH) return `is longer than ${MAX_OPENAI_MODEL_LENGTH} characters`;
  if (!MODEL_NAME.test(name))
    return 'must start with a letter or digit and hold only letters, digits and . _ - : / @ +';
  return undefined;
}

/** How many model names an unknown model's answer lists at most (the rest are counted). */
export const MODELS_NAMED = 20;

/** An endpoint as the choice sees it: its id and its model name. */
export interface ModelCandidate {
  id: string;
  openaiModel: string;
}

/** The router's choice: the endpoint serving `model`, or the models there are (sorted, at most `MODELS_NAMED`). */
export type ModelChoice<E> =
  | { kind: 'found'; endpoint: E }
  | { kind: 'unknown'; models: string[]; more: number };

/**
 * Which endpoint serves `model` among those a key reaches: the one whose `openaiModel` equals it exactly (an
 * owner's model names are unique, refused at create and update, so there is never a choice to make; should two
 * match anyway, the lowest id wins, the same for every replica). Missing or unknown: the models there are.
 */
export function chooseModelEndpoint<E extends ModelCandidate>(
  model: string | undefined,
  endpoints: readonly E[],
): ModelChoice<E> {
  const matches = endpoints
    .filter((e) => model !== undefined && e.openaiModel === model)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const [first] = matches;
  if (first !== undefined) return { kind: 'found', endpoint: first };
  const models = [...new Set(endpoints.map((e) => e.openaiModel))].sort();
  return {
    kind: 'unknown',
    models: models.slice(0, MODELS_NAMED),
    more: Math.max(0, models.length - MODELS_NAMED),
  };
}

/** The words of an unknown model's answer, naming the models there are. */
export function unknownModelMessage(
  model: string | undefined,
  choice: { models: string[]; more: number },
): string {
  const asked =
    model === undefined
      ? 'the request names no model'
      : `no endpoint serves the model ${JSON.stringify(model.slice(0, MAX_OPENAI_MODEL_LENGTH))}`;
  if (choice.models.length === 0)
    return `${asked}: none of this key's endpoints has an openaiModel (set one with endpoint/update)`;
  const more = choice.more > 0 ? ` and ${choice.more} more` : '';
  return `${asked}; the models there are: ${choice.models.join(', ')}${more}`;
}
