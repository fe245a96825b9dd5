/**
 * The node agent's model calls (runtime/kubernetes/node-agent-protocol.ts): the node's hub cache (the hostPath the
 * worker pods mount) filled, listed, its downloads' progress read and a model removed, through the `ModelCache` port
 * (the agent builds `HubModelCache` on the node's directory: one downloader and one disk budget, the same as `corral
 * serve`'s). An ensure's body carries the owner's hub token: read here, bounded, checked, handed to the cache, and
 * never logged or answered; the cache asks the hub with it even when the files are on the node, so a gated model is
 * never handed to a token without access. It also carries the models endpoints name, which the budget's eviction
 * keeps, and its answer names the models evicted meanwhile. A fetch holds the model's lock (model-lock.ts), for agents
 * that share one directory.
 */
import type http from 'node:http';
import { MODEL_LIMITS, modelNameProblem, modelRevisionProblem } from '../domain/model-refs.js';
import { NodeAgentError } from '../errors/node-agent-catalogue.js';
import { type ModelCache, ModelRefusedError } from '../ports/model-cache.js';
import {
  NODE_AGENT_PATHS,
  type NodeCachedModel,
  type NodeModelEnsure,
  type NodeModelEnsured,
  type NodeModelProgress,
  type NodeModelRemoved,
} from '../runtime/kubernetes/node-agent-protocol.js';
import type { ModelLocks } from './model-lock.js';

export interface NodeModels {
  cache: Pick<ModelCache, 'ensure' | 'progress' | 'list' | 'remove' | 'onRemoved'>;
  /** The hub this agent fetches from (`--hub-url`): an ensure naming another is refused. */
  hubUrl: string;
  /** One fetch of a model at a time in a cache directory other agents may share (model-lock.ts). */
  locks: Pick<ModelLocks, 'hold'>;
  /** Told the models endpoints name, as each ensure carries them: those the cache's disk budget never evicts. */
  tellNamed: (names: ReadonlySet<string>) => void;
}

/** An ensure's body is a model, a token and the names of the models endpoints name: thousands of names fit. */
const MAX_BODY_BYTES = 1024 * 1024;

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
  if (method === 'GET' && path === NODE_AGENT_PATHS.models) return listing(models);
  const parts = path.split('/').filter((part) => part !== '');
  if (method === 'DELETE' && parts.length === 4) {
    const name = parts.slice(2).map(decodeURIComponent).join('/');
    return removal(models, name, url.searchParams.get('revision') ?? undefined);
  }
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
    models.tellNamed(new Set(body.named));
    // Whatever leaves the cache while this ensure runs (its budget's eviction) is told to the caller: labels go.
    const evicted = new Set<string>();
    const stopListening = models.cache.onRemoved((name) => evicted.add(name));
    try {
      const cached = await models.locks.hold(model.name, () => models.cache.ensure(model, body.token));
      const answer: NodeModelEnsured = { model: cached, evicted: [...evicted] };
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
    } finally {
      stopListening();
    }
  }
  throw new NodeAgentError('NODE_AGENT_NO_ROUTE', `no route ${method} ${path}`);
}

async function listing(models: NodeModels): Promise<NodeCachedModel[]> {
  try {
    return (await models.cache.list()).map((model) => ({ ...model, download: models.cache.progress(model) }));
  } catch (error) {
    throw new NodeAgentError('NODE_AGENT_MODEL_FAILED', `cannot list the node's models: ${String(error)}`);
  }
}

/** Removes a model (every revision, or one): refused (`downloading`) while this agent or another fetches it. */
async function removal(
  models: NodeModels,
  name: string,
  revision: string | undefined,
): Promise<NodeModelRemoved> {
  checkModel(name, revision ?? 'main');
  try {
    const removal = await models.cache.remove(name, revision);
    const held = (await models.cache.list()).some((model) => model.name === name);
    return { removal, held };
  } catch (error) {
    throw new NodeAgentError('NODE_AGENT_MODEL_FAILED', `cannot remove ${name}: ${String(error)}`, {
      cause: error,
    });
  }
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
  if (!Array.isArray(body.named) || !body.named.every((n) => typeof n === 'string' && !modelNameProblem(n)))
    throw bad('named must be a list of model names (org/name): the models endpoints name');
  return {
    model: { name: model.name, revision: model.revision, allowPatterns: patterns as string[] },
    token: body.token,
    hubUrl: body.hubUrl,
    named: body.named as string[],
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
