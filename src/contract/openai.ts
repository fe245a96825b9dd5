/**
 * RunPod's OpenAI-compatible route's wire (issue 35): a request under `/v2/{endpoint}/openai/v1/...` as a job's
 * input (`{"openai_route", "openai_input"}`, what worker-vllm reads), the job's output as the answer (runpod-python
 * aggregates a generator's yields into a list: the answer is the one object yielded), a streamed chunk as the
 * server-sent-event text the handler yielded, the failure the SDK stored recovered as a message, and errors in
 * OpenAI's shape `{"error": {"message", "type", "code"}}`.
 */
import { JOB_LIMITS } from '../domain/job.js';
import { type Parsed, tooDeep } from './jobs.js';
import { nestsDeeperThan } from './json-depth.js';

/** An OpenAI request as a job: the input's JSON text, and whether the client asked for server-sent events. */
export interface OpenAIJobRequest {
  input: string;
  stream: boolean;
}

/**
 * The job input for `route` (`/v1/chat/completions`, as RunPod names it) and the request's body: `undefined` for a
 * GET, which arrives with an empty `openai_input` (worker-vllm then proxies the route as a GET).
 */
export function parseOpenAIRequest(route: string, body: string | undefined): Parsed<OpenAIJobRequest> {
  const routeText = JSON.stringify(route);
  if (body === undefined || body.trim() === '')
    return { ok: true, value: { input: `{"openai_route":${routeText},"openai_input":{}}`, stream: false } };
  const parsed = parseOpenAIBody(body);
  if (!parsed.ok) return parsed;
  return {
    ok: true,
    value: {
      input: `{"openai_route":${routeText},"openai_input":${body}}`,
      stream: parsed.value.stream === true,
    },
  };
}

/** An OpenAI request's body: a JSON object, nested no deeper than a job's input may be. */
function parseOpenAIBody(body: string): Parsed<Record<string, unknown>> {
  if (nestsDeeperThan(body, JOB_LIMITS.jsonDepth)) return tooDeep('the body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ok: false, problem: 'the body is not JSON: send the OpenAI request as a JSON object' };
  }
  if (!isRecord(parsed)) return { ok: false, problem: 'the body must be a JSON object (an OpenAI request)' };
  return { ok: true, value: parsed };
}

/** The `model` a request's body names (the model router picks its endpoint by it); undefined when none is named. */
export function openAIRequestModel(body: string): Parsed<string | undefined> {
  const parsed = parseOpenAIBody(body);
  if (!parsed.ok) return parsed;
  const { model } = parsed.value;
  return { ok: true, value: typeof model === 'string' ? model : undefined };
}

/** One model of OpenAI's list (`GET /v1/models`): its name, when it came (seconds) and whose it is. */
export interface OpenAIModelEntry {
  id: string;
  created: number;
  ownedBy: string;
}

/** OpenAI's model object. */
export function openAIModel(entry: OpenAIModelEntry): string {
  return JSON.stringify(modelObject(entry));
}

/** OpenAI's list of models: `{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}`. */
export function openAIModelList(entries: readonly OpenAIModelEntry[]): string {
  return JSON.stringify({ object: 'list', data: entries.map(modelObject) });
}

function modelObject(entry: OpenAIModelEntry) {
  return { id: entry.id, object: 'model', created: entry.created, owned_by: entry.ownedBy };
}

/**
 * The answer of a completed job (its stored output, JSON text): a generator's output is the list of its yields
 * (`return_aggregate_stream`), and worker-vllm yields one object when the request does not stream, so a one-item
 * list answers its item; any other output answers as it is (a handler that returns its object).
 */
export function openAIAnswer(output: string | null): string {
  if (output === null) return '{}';
  const parsed: unknown = JSON.parse(output);
  if (Array.isArray(parsed) && parsed.length === 1) return JSON.stringify(parsed[0]);
  return output;
}

/**
 * A chunk the worker streamed (`{"output": <one yield>}`, as stored) as the text the client receives: a string is
 * server-sent-event text already (worker-vllm yields vLLM's bytes, boundaries as they came, with its own
 * `data: [DONE]`), passed as it is; an object, or a list of them (worker-vllm with RAW_OPENAI_OUTPUT=0), is one
 * event each.
 */
export function openAIStreamText(chunk: string): string {
  const parsed: unknown = JSON.parse(chunk);
  const output = isRecord(parsed) && Object.hasOwn(parsed, 'output') ? parsed.output : parsed;
  const parts = Array.isArray(output) ? output : [output];
  return parts
    .map((part) => (typeof part === 'string' ? part : `data: ${JSON.stringify(part)}\n\n`))
    .join('');
}

/** What a failed job said, for OpenAI's error body: the message and, where the handler named one, its type. */
export interface RecoveredFailure {
  message: string;
  type?: string;
  /**
   * The model server's own 4xx status, where the handler said the server refused the request (worker-vllm's
   * `vLLM returned HTTP 400: {...}`): the request was the problem, so a second try would fail the same way.
   */
  status?: number;
}

/**
 * The failure runpod-python stored, recovered. A generator's yielded `{"error": {...}}` is stored as Python's
 * `str()` of the dict (`{'message': '...', 'type': 'worker_error', 'code': None}`, worker-vllm's shape); a raised
 * exception as JSON with `error_message` (a plain handler) or as `handler: <message> \ntraceback: ...` (a
 * generator); a returned `{"error": "text"}` as the text.
 */
export function recoverFailure(stored: string | null): RecoveredFailure {
  const recovered = recoverHandlerFailure(stored);
  return modelServerRefusal(recovered.message) ?? recovered;
}

/** worker-vllm's words for an answer of vLLM's it passes on (handler.py: `vLLM returned HTTP {status}: {body}`). */
const MODEL_SERVER_ANSWER = /^vLLM returned HTTP (4\d\d): ([\s\S]*)$/;

/**
 * A model server's 4xx passed on by the handler, as that server said it: its status, and its error body's message
 * and type (vLLM's `{"object": "error", "message", "type"}`, or OpenAI's `{"error": {"message", "type"}}`).
 */
function modelServerRefusal(message: string): RecoveredFailure | undefined {
  const answer = MODEL_SERVER_ANSWER.exec(message);
  if (answer === null) return undefined;
  const status = Number(answer[1]);
  const body = tryJson(answer[2] ?? '');
  const error = isRecord(body) ? (isRecord(body.error) ? body.error : body) : {};
  const said = error.message ?? error.detail;
  const type = error.type;
  return {
    message: typeof said === 'string' && said !== '' ? said : message,
    type: typeof type === 'string' ? type : openAIErrorType(status),
    status,
  };
}

function recoverHandlerFailure(stored: string | null): RecoveredFailure {
  if (stored === null || stored.trim() === '') return { message: 'the job failed without a message' };
  const json = tryJson(stored);
  if (isRecord(json)) {
    const inner = isRecord(json.error) ? json.error : json;
    const message = inner.message ?? inner.error_message ?? inner.error;
    if (typeof message === 'string')
      return typeof inner.type === 'string' ? { message, type: inner.type } : { message };
  }
  if (typeof json === 'string') return { message: json };
  const message = pythonDictString(stored, 'message');
  if (message !== undefined) {
    const type = pythonDictString(stored, 'type');
    return type === undefined ? { message } : { message, type };
  }
  const raised = /^handler: ([\s\S]*?) \ntraceback: /.exec(stored);
  return { message: raised?.[1] ?? stored };
}

/** OpenAI's error body. */
export function openAIErrorBody(message: string, type: string, code: string | null): string {
  return JSON.stringify({ error: { message, type, code } });
}

/** OpenAI's error type for an HTTP status (what its API answers with that status). */
export function openAIErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 504) return 'timeout';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The string at `key` in a Python dict's repr (`'key': 'value'` or `'key': "value"`), unescaped. */
function pythonDictString(text: string, key: string): string | undefined {
  const at = text.indexOf(`'${key}': `);
  if (at === -1) return undefined;
  const open = at + key.length + 4;
  const quote = text[open];
  if (quote !== "'" && quote !== '"') return undefined;
  let value = '';
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i] as string;
    if (c === quote) return value;
    if (c !== '\\') {
      value += c;
      continue;
    }
    i++;
    const escaped = text[i] ?? '';
    const hexLength = escaped === 'x' ? 2 : escaped === 'u' ? 4 : escaped === 'U' ? 8 : 0;
    if (hexLength > 0) {
      const code = Number.parseInt(text.slice(i + 1, i + 1 + hexLength), 16);
      value += Number.isNaN(code) ? escaped : String.fromCodePoint(code);
      i += hexLength;
    } else value += PYTHON_ESCAPES[escaped] ?? escaped;
  }
  return undefined;
}

const PYTHON_ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '0': '\0' };
