/**
 * The node agent's model calls (runtime/kubernetes/node-agent-protocol.ts): the node's hub cache (the hostPath the
 * worker pods mount) filled, listed and its downloads' progress read, through the `ModelCache` port (the agent builds
 * `HubModelCache` on the node's directory: one downloader, the same as `corral serve`'s). An ensure's body carries the
 * owner's hub token: read here, bounded, checked, handed to the cache, and never logged or answered; the cache asks
 * the hub with it even when the files are on the node, so a gated model is never handed to a token without access.
 * A fetch holds the model's lock (model-lock.ts), for agents that share one directory.
 */
import type http from 'node:http';
import { MODEL_LIMITS, modelNameProblem, modelRevisionProblem } from '../domain/model-refs.js';
import { NodeAgentError } from '../errors/node-agent-catalogue.js';
import { type ModelCache, ModelRefusedError } from '../ports/model-cache.js';
import {
  NODE_AGENT_PATHS,
  type NodeModelEnsure,
  type NodeModelEnsured,
  type NodeModelProgress,
} from '../runtime/kubernetes/node-agent-protocol.js';
import type { ModelLocks } from './model-lock.js';

export interface NodeModels {
  cache: Pick<ModelCache, 'ensure' | 'progress' | 'list'>;
  /** The hub this agent fetches from (`--hub-url`): an ensure naming another is refused. */
  hubUrl: string;
  /** One fetch of a model at a time in a cache directory other agents may share (model-lock.ts). */
  locks: Pick<ModelLocks, 'hold'>;
}

/** An ensure's body is a model and a token: a few KiB at most. */
const MAX_BODY_BYTES = 64 * 1024;

const bad = (message: string) => new NodeAgentError('NODE_AGENT_BAD_REQUEST', message);

/** The answer of a model call, or undefined when the path is not one of them. */
export async function modelRoute(
  models: NodeModels | undefined,
  method: string,
  url: URL,
  request: http.IncomingMessage,
): Promise<unknown> {
  const path = url.pathname;
  if (path !== NODE_AGENT_PATHS.models && !path.startsWith(`${NODE_AGENT_PATHS.models}/`)) return undefined;
  if (models === undefined)
    throw new NodeAgentError('NODE_AGENT_NO_ROUTE', 'this agent keeps no model cache (--model-cache-dir)');
  if (method === 'GET' && path === NODE_AGENT_PATHS.models)
    return models.cache.list().catch((error: unknown) => {
      throw new NodeAgentError('NODE_AGENT_MODEL_FAILED', `cannot list the node's models: ${String(error)}`);
    });
  if (method === 'GET' && path === NODE_AGENT_PATHS.modelProgress) {
    const name = url.searchParams.get('name') ?? '';
    const revision = url.searchParams.get('revision') ?? '';
    checkModel(name, revision);
    const answer: NodeModelProgress = { progress: models.cache.progress({ name, revision }) };
    return answer;
  }
  if (method === 'POST' && path === NODE_AGENT_PATHS.ensureModel) {
    const body = ensureBody(await readBody(request));
    if (body.hubUrl.replace(/\/+$/, '') !== models.hubUrl.replace(/\/+$/, ''))
      throw bad(`this agent fetches from ${models.hubUrl} (--hub-url), not ${body.hubUrl} (models.hubUrl)`);
    const model = { ...body.model, tokenSecret: null };
    try {
      const cached = await models.locks.hold(model.name, () => models.cache.ensure(model, body.token));
      const answer: NodeModelEnsured = { model: cached };
      return answer;
    } catch (error) {
      if (error instanceof ModelRefusedError) {
        const answer: NodeModelEnsured = { refusal: error.refusal };
        return answer;
      }
      throw new NodeAgentError(
        'NODE_AGENT_MODEL_FAILED',
        `${model.name} at ${model.revision}: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }
  throw new NodeAgentError('NODE_AGENT_NO_ROUTE', `no route ${method} ${path}`);
}

function checkModel(name: string, revision: string): void {
  const problem = modelNameProblem(name);
  if (problem !== undefined) throw bad(`name ${problem}`);
  const revisionProblem = modelRevisionProblem(revision);
  if (revisionProblem !== undefined) throw bad(`revision ${revisionProblem}`);
}

/** The ensure's body as the protocol says it, or a 400 naming what is wrong (never the token's value). */
function ensureBody(value: unknown): NodeModelEnsure {
  const body = (value ?? {}) as Partial<Record<keyof NodeModelEnsure, unknown>>;
  const model = (body.model ?? {}) as Partial<Record<keyof NodeModelEnsure['model'], unknown>>;
  if (typeof model.name !== 'string' || typeof model.revision !== 'string')
    throw bad('model.name and model.revision must be strings');
  checkModel(model.name, model.revision);
  const patterns = model.allowPatterns ?? [];
  if (
    !Array.isArray(patterns) ||
    patterns.length > MODEL_LIMITS.allowPatterns ||
    !patterns.every(
      (p) => typeof p === 'string' && p.length > 0 && p.length <= MODEL_LIMITS.allowPatternLength,
    )
  )
    throw bad(`model.allowPatterns must be at most ${MODEL_LIMITS.allowPatterns} non-empty strings`);
  if (body.token !== null && typeof body.token !== 'string') throw bad('token must be a string or null');
  if (typeof body.hubUrl !== 'string') throw bad('hubUrl must be a string');
  return {
    model: { name: model.name, revision: model.revision, allowPatterns: patterns as string[] },
    token: body.token,
    hubUrl: body.hubUrl,
  };
}

async function readBody(request: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw bad(`the body is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw bad('the body is not JSON');
  }
}
