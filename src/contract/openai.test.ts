import { describe, expect, it } from 'vitest';
import {
  openAIAnswer,
  openAIErrorType,
  openAIStreamText,
  parseOpenAIRequest,
  recoverFailure,
} from './openai.js';

describe('an OpenAI request as a job', () => {
  it('wraps the body as RunPod does, unchanged, and reads its stream flag', () => {
    const body = '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}';
    const parsed = parseOpenAIRequest('/v1/chat/completions', body);
    expect(parsed).toEqual({
      ok: true,
      value: { input: `{"openai_route":"/v1/chat/completions","openai_input":${body}}`, stream: true },
    });
    if (parsed.ok) expect(JSON.parse(parsed.value.input).openai_input).toEqual(JSON.parse(body));
  });

  it('gives a GET an empty openai_input, and does not stream it', () => {
    expect(parseOpenAIRequest('/v1/models', undefined)).toEqual({
      ok: true,
      value: { input: '{"openai_route":"/v1/models","openai_input":{}}', stream: false },
    });
  });

  it('refuses a body that is not a JSON object, or nests too deep', () => {
    expect(parseOpenAIRequest('/v1/completions', '[1]').ok).toBe(false);
    expect(parseOpenAIRequest('/v1/completions', '{"model":').ok).toBe(false);
    expect(parseOpenAIRequest('/v1/completions', `{"a":${'['.repeat(200)}${']'.repeat(200)}}`).ok).toBe(
      false,
    );
  });

  it('streams only when stream is true itself', () => {
    const flag = (body: string) => {
      const parsed = parseOpenAIRequest('/v1/completions', body);
      return parsed.ok && parsed.value.stream;
    };
    expect(flag('{"stream":"true"}')).toBe(false);
    expect(flag('{"stream":false}')).toBe(false);
    expect(flag('{"stream":true}')).toBe(true);
  });
});

describe("a job's output as the OpenAI answer", () => {
  it("answers the one object a generator yielded, not the SDK's list of yields", () => {
    expect(JSON.parse(openAIAnswer('[{"object":"chat.completion","id":"c"}]'))).toEqual({
      object: 'chat.completion',
      id: 'c',
    });
  });

  it('answers an object a handler returned as it is', () => {
    expect(openAIAnswer('{"object":"list","data":[]}')).toBe('{"object":"list","data":[]}');
  });
});

describe('a streamed chunk as server-sent-event text', () => {
  it('passes a yielded string through as it came, boundaries and [DONE] included', () => {
    expect(openAIStreamText('{"output":"ta\\":1}\\n\\ndata: [DONE]\\n\\n"}')).toBe(
      'ta":1}\n\ndata: [DONE]\n\n',
    );
  });

  it('writes yielded objects (a list of them with RAW_OPENAI_OUTPUT=0) as one event each', () => {
    expect(openAIStreamText('{"output":[{"a":1},{"b":2}]}')).toBe('data: {"a":1}\n\ndata: {"b":2}\n\n');
    expect(openAIStreamText('{"output":{"a":1}}')).toBe('data: {"a":1}\n\n');
  });
});

describe('the failure runpod-python stored, recovered', () => {
  it("reads worker-vllm's yielded error, stored as Python's str() of the dict", () => {
    const stored =
      "{'message': 'vLLM returned HTTP 503: {\"object\":\"error\",\"message\":\"it\\'s busy\"}', 'type': 'worker_error', 'code': None}";
    expect(recoverFailure(stored)).toEqual({
      message: 'vLLM returned HTTP 503: {"object":"error","message":"it\'s busy"}',
      type: 'worker_error',
    });
  });

  it("says a model server's 4xx as that server said it: its status, message and type", () => {
    const stored =
      '{\'message\': \'vLLM returned HTTP 400: {"object":"error","message":"it\\\'s too long","type":"BadRequestError","code":400}\', \'type\': \'worker_error\', \'code\': None}';
    expect(recoverFailure(stored)).toEqual({
      message: "it's too long",
      type: 'BadRequestError',
      status: 400,
    });
    // vLLM's newer body nests OpenAI's shape; FastAPI's own 404/405 says `detail`.
    const nested = `vLLM returned HTTP 404: ${JSON.stringify({ error: { message: 'The model `x` does not exist.', type: 'NotFoundError', code: 404 } })}`;
    expect(recoverFailure(JSON.stringify({ error_message: nested }))).toEqual({
      message: 'The model `x` does not exist.',
      type: 'NotFoundError',
      status: 404,
    });
    expect(
      recoverFailure(
        `{'message': 'vLLM returned HTTP 405: {"detail":"Method Not Allowed"}', 'type': 'worker_error', 'code': None}`,
      ),
    ).toEqual({
      message: 'Method Not Allowed',
      type: 'invalid_request_error',
      status: 405,
    });
    expect(
      recoverFailure("{'message': 'vLLM returned HTTP 422: not json', 'type': 'worker_error', 'code': None}"),
    ).toEqual({
      message: 'vLLM returned HTTP 422: not json',
      type: 'invalid_request_error',
      status: 422,
    });
  });

  it('reads a message Python quoted with double quotes, with escapes', () => {
    expect(recoverFailure(`{'message': "don't\\nstop \\xe9", 'type': 'worker_error', 'code': None}`)).toEqual(
      {
        message: "don't\nstop é",
        type: 'worker_error',
      },
    );
  });

  it("reads a plain handler's raised exception (JSON with error_message)", () => {
    const stored = JSON.stringify({
      error_type: "<class 'ValueError'>",
      error_message: 'bad prompt',
      hostname: 'h',
    });
    expect(recoverFailure(stored)).toEqual({ message: 'bad prompt' });
  });

  it("reads a generator's raised exception without its traceback", () => {
    expect(
      recoverFailure('handler: CUDA out of memory \ntraceback: Traceback (most recent call last):\n...'),
    ).toEqual({
      message: 'CUDA out of memory',
    });
  });

  it('reads an error object posted as JSON, and a plain message', () => {
    expect(recoverFailure('{"message":"m","type":"t"}')).toEqual({ message: 'm', type: 't' });
    expect(recoverFailure('no cats today')).toEqual({ message: 'no cats today' });
    expect(recoverFailure(null).message).toMatch(/without a message/);
  });
});

describe("OpenAI's error types", () => {
  it('names the type of each status as OpenAI does', () => {
    expect([400, 401, 403, 404, 413, 429, 500, 503, 504].map(openAIErrorType)).toEqual([
      'invalid_request_error',
      'authentication_error',
      'permission_error',
      'not_found_error',
      'invalid_request_error',
      'rate_limit_error',
      'server_error',
      'server_error',
      'timeout',
    ]);
  });
});
