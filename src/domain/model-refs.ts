/**
 * The rules of the models an endpoint names (issue 34): what a hub repository name and a revision may be, and where
 * a model lives in the hub's cache layout and in a worker. A name and a revision become directories on the machine
 * (`models--{org}--{name}`, `refs/{revision}`), so no `.` or `..` segment, no empty one, and no `--` in a name
 * (the layout's separator, which the hub refuses in repository ids too); one model's problems as validation issues
 * (an endpoint's `models.N`, the body of `POST models`); a cache's disk budget in bytes. Pure.
 */
import type { ModelRef } from './models.js';
import type { ValidationIssue } from './validate.js';

export const MODEL_LIMITS = {
  /** Models per endpoint. */
  models: 8,
  /** The hub's own bound on a repository id. */
  nameLength: 96,
  revisionLength: 255,
  allowPatterns: 64,
  allowPatternLength: 256,
} as const;

/** The revision a model names when it names none. */
export const DEFAULT_MODEL_REVISION = 'main';

/** The hub models are fetched from unless configured otherwise (`models.hubUrl`, the node agents' `--hub-url`). */
export const DEFAULT_HUB_URL = 'https://huggingface.co';

/** A model cache's disk budget in bytes from its setting in GB (decimal, as sizes are shown); undefined: none. */
export function modelDiskBudgetBytes(gigabytes: number | undefined): number | null {
  return gigabytes === undefined ? null : Math.round(gigabytes * 1e9);
}

/** Where the hub's clients look in a worker: the RunPod cached-models path, also set as HF_HUB_CACHE. */
export const WORKER_HUB_CACHE = '/runpod-volume/huggingface-cache/hub';

/** A segment of a name: the hub's repository-id characters, starting and ending with a letter or digit. */
const NAME_SEGMENT = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
/** A segment of a revision: a git ref's usual characters (branches, tags, `refs/pr/1`, commits). */
const REVISION_SEGMENT = /^[A-Za-z0-9._-]+$/;

/** Why `name` is not `org/name` as the hub spells repositories (a few words after "name "), or undefined. */
export function modelNameProblem(name: string): string | undefined {
  if (name.length > MODEL_LIMITS.nameLength) return `is longer than ${MODEL_LIMITS.nameLength} characters`;
  const segments = name.split('/');
  if (segments.length !== 2) return 'must be org/name (one slash)';
  if (segments.some((segment) => segment === '.' || segment === '..')) return 'holds a . or .. segment';
  if (!segments.every((segment) => NAME_SEGMENT.test(segment)))
    return 'may hold only letters, digits, ".", "_" and "-" on each side of the slash, starting and ending with a letter or digit';
  if (name.includes('--') || name.includes('..')) return 'holds "--" or ".." (the hub refuses both)';
  return undefined;
}

/** Why `revision` cannot be a branch, tag, commit or `refs/pr/N` (a few words after "revision "), or undefined. */
export function modelRevisionProblem(revision: string): string | undefined {
  if (revision === '') return 'is empty';
  if (revision.length > MODEL_LIMITS.revisionLength)
    return `is longer than ${MODEL_LIMITS.revisionLength} characters`;
  const segments = revision.split('/');
  if (segments.some((segment) => segment === ''))
    return 'holds an empty segment (a leading, trailing or double /)';
  if (segments.some((segment) => segment === '.' || segment === '..')) return 'holds a . or .. segment';
  if (!segments.every((segment) => REVISION_SEGMENT.test(segment)))
    return 'may hold only letters, digits, ".", "_", "-" and "/"';
  return undefined;
}

/** `org/name` -> `models--org--name`: the repository's directory in the hub's cache layout. */
export function modelRepoDir(name: string): string {
  return `models--${name.split('/').join('--')}`;
}

/** Where the model's repository directory is mounted in a worker. */
export function workerModelPath(name: string): string {
  return `${WORKER_HUB_CACHE}/${modelRepoDir(name)}`;
}

/** The models' env of a worker: the hub's clients find them at the mount and never go online for them. */
export function modelEnv(models: readonly ModelRef[]): Record<string, string> {
  if (models.length === 0) return {};
  return { HF_HUB_CACHE: WORKER_HUB_CACHE, HF_HUB_OFFLINE: '1' };
}

/** `org/name@revision`, as messages name a model. */
export function modelLabel(model: Pick<ModelRef, 'name' | 'revision'>): string {
  return model.revision === DEFAULT_MODEL_REVISION ? model.name : `${model.name}@${model.revision}`;
}

/**
 * The problems of one model (an endpoint's `models.N`, or the body of `POST models` with `prefix` ''): a hub name
 * and revision that can be directories, bounded patterns, and a token secret among `secretNames` (absent: not
 * checked).
 */
export function modelIssues(
  model: ModelRef,
  prefix: string,
  secretNames: ReadonlySet<string> | undefined,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const at = (name: string) => (prefix === '' ? name : `${prefix}.${name}`);
  const invalid = (name: string, message: string) =>
    issues.push({ field: at(name), reason: 'INVALID_FIELD', message });
  const nameProblem = modelNameProblem(model.name);
  if (nameProblem)
    invalid('name', `model name ${nameProblem}, got ${JSON.stringify(model.name.slice(0, 100))}`);
  const revisionProblem = modelRevisionProblem(model.revision);
  if (revisionProblem)
    invalid(
      'revision',
      `model revision ${revisionProblem}, got ${JSON.stringify(model.revision.slice(0, 100))}`,
    );
  if (model.allowPatterns.length > MODEL_LIMITS.allowPatterns)
    invalid('allowPatterns', `at most ${MODEL_LIMITS.allowPatterns} allowPatterns are allowed`);
  else
    model.allowPatterns.forEach((pattern, n) => {
      if (pattern === '' || pattern.length > MODEL_LIMITS.allowPatternLength)
        invalid(`allowPatterns.${n}`, `a pattern must be 1 to ${MODEL_LIMITS.allowPatternLength} characters`);
    });
  const secret = model.tokenSecret;
  if (secret !== null && secretNames !== undefined && !secretNames.has(secret)) {
    issues.push({
      field: at('tokenSecret'),
      reason: 'UNKNOWN_SECRET',
      message: `model ${model.name} names secret "${secret}" as its token, which you do not have (save it first)`,
      details: { model: model.name, secret },
    });
  }
  return issues;
}
