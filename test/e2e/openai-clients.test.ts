/**
 * The official `openai` npm client, unmodified, against RunPod's OpenAI route on a real `corral serve` (the built
 * binary, the `local` runtime, a `queue` endpoint whose worker is Corral's RunPod protocol test worker with
 * worker-vllm's handler: test/fixtures/worker/runpod-worker.mjs), its baseURL `.../v2/{endpoint}/openai/v1`; an
 * http endpoint whose worker serves OpenAI's routes itself; and the model router, baseURL `.../openai/v1`, which
 * picks one of the two by the request's model.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startOpenAIServe } from '../support/openai-serve.js';
import { printServeLog, type ServeProcess } from '../support/process.js';

const KEY = 'e2e-openai-clients-operator-key-01';

describe('the openai npm client against a queue endpoint of corral serve', () => {
  let server: ServeProcess | undefined;
  let close: (() => Promise<void>) | undefined;
  let endpointId = '';
  let client: OpenAI;
  let httpEndpointId = '';
  beforeEach(({ onTestFailed }) => onTestFailed(() => server && printServeLog(server)));

  beforeAll(async () => {
    const started = await startOpenAIServe({ dirPrefix: 'corral-e2e-openai-clients-', apiKey: KEY });
    server = started.server;
    close = started.close;
    endpointId = started.queueId;
    httpEndpointId = started.httpId;
    // No retries: a failure must reach the test as the server answered it.
    client = new OpenAI({
      apiKey: KEY,
      baseURL: `${server.gatewayUrl}/v2/${endpointId}/openai/v1`,
      maxRetries: 0,
    });
  }, 60_000);

  afterAll(() => close?.(), 60_000);

  const ask = (content: string) => [{ role: 'user' as const, content }];
  const jobCount = async () => {
    const response = await fetch(`${server?.gatewayUrl}/v2/${endpointId}/jobs?limit=1000`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    return ((await response.json()) as { jobs: unknown[] }).jobs.length;
  };

  it('chat.completions.create without stream: the one object the handler yielded', async () => {
    const answer = await client.chat.completions.create({
      model: 'corral-echo',
      messages: ask('hello there corral'),
    });
    expect(answer.object).toBe('chat.completion');
    expect(answer.choices[0]?.message).toMatchObject({ role: 'assistant', content: 'hello there corral' });
    expect(answer.usage?.completion_tokens).toBe(3);
  }, 120_000);

  it('chat.completions.create with stream: the deltas, as the handler yielded them', async () => {
    const stream = await client.chat.completions.create({
      model: 'corral-echo',
      messages: ask('one two three four five six'),
      stream: true,
    });
    const deltas: string[] = [];
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      deltas.push(chunk.choices[0]?.delta.content ?? '');
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(deltas.join('')).toBe('one two three four five six');
    expect(finish).toBe('stop');
  }, 60_000);

  it("passes the handler's server-sent events through byte for byte: one [DONE], text/event-stream", async () => {
    const response = await fetch(`${server?.gatewayUrl}/v2/${endpointId}/openai/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'corral-echo', prompt: 'a b c', stream: true }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const text = await response.text();
    expect(text.match(/data: \[DONE\]/g)).toHaveLength(1);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const events = text.split('\n\n').filter((event) => event !== '' && event !== 'data: [DONE]');
    expect(events.map((event) => JSON.parse(event.replace(/^data: /, '')).choices[0].text).join('')).toBe(
      'a b c',
    );
  }, 60_000);

  it("streams each chunk as it is yielded: the first arrives long before the handler's last yield", async () => {
    const started = Date.now();
    const stream = await client.chat.completions.create({
      model: 'corral-echo',
      messages: ask('slow words come one by one'),
      stream: true,
      metadata: { token_delay_ms: '300' },
    });
    const arrivals: number[] = [];
    for await (const chunk of stream)
      if (chunk.choices[0]?.delta.content) arrivals.push(Date.now() - started);
    expect(arrivals).toHaveLength(6);
    // Six tokens 300 ms apart: the first token is yielded ~1.5 s before the last.
    expect((arrivals.at(-1) ?? 0) - (arrivals[0] ?? 0)).toBeGreaterThan(1_000);
  }, 60_000);

  it('completions, embeddings (base64 by default, and floats) and models.list', async () => {
    const completion = await client.completions.create({ model: 'corral-echo', prompt: 'say this back' });
    expect(completion.choices[0]?.text).toBe('say this back');
    const embedded = await client.embeddings.create({ model: 'corral-echo', input: ['abc', 'hello'] });
    expect(embedded.data.map((d) => d.embedding)).toEqual([
      [3, 0, 0.5],
      [5, 1, 0.5],
    ]);
    const floats = await client.embeddings.create({
      model: 'corral-echo',
      input: 'abcd',
      encoding_format: 'float',
    });
    expect(floats.data[0]?.embedding).toEqual([4, 0, 0.5]);
    const models = [];
    for await (const model of client.models.list()) models.push(model.id);
    expect(models).toEqual(['corral-echo']);
  }, 60_000);

  it("a request the model server refused is its 4xx in OpenAI's shape, which the client does not retry", async () => {
    const before = await jobCount();
    // The client's default retries: a 4xx must not be tried again (each try would be a job).
    const retrying = new OpenAI({ apiKey: KEY, baseURL: client.baseURL });
    const failing = retrying.chat.completions.create({
      model: 'corral-echo',
      messages: ask('never answered'),
      metadata: { fail: "the prompt's too long" },
    });
    await expect(failing).rejects.toMatchObject({
      status: 400,
      type: 'BadRequestError',
      code: 'JOB_REFUSED_BY_MODEL',
      message: expect.stringContaining("the prompt's too long"),
    });
    await expect(failing).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    expect(await jobCount()).toBe(before + 1);
  }, 60_000);

  it("a model server's 5xx is a 500 in OpenAI's shape, with the handler's message", async () => {
    const failing = client.chat.completions.create({
      model: 'corral-echo',
      messages: ask('never answered'),
      metadata: { fail: 'the engine is dead', fail_status: '500' },
    });
    await expect(failing).rejects.toMatchObject({
      status: 500,
      type: 'worker_error',
      code: 'JOB_FAILED',
      message: expect.stringContaining(
        `vLLM returned HTTP 500: {"object":"error","message":"the engine is dead"`,
      ),
    });
    await expect(failing).rejects.toBeInstanceOf(OpenAI.InternalServerError);
  }, 60_000);

  it('a stream whose job fails midway ends with an error event that the client raises', async () => {
    const stream = await client.chat.completions.create({
      model: 'corral-echo',
      messages: ask('three good tokens then trouble'),
      stream: true,
      metadata: { fail: 'connection reset', fail_after: '3' },
    });
    const deltas: string[] = [];
    const reading = (async () => {
      for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? '');
    })();
    await expect(reading).rejects.toThrow(/Request to vLLM failed: connection reset/);
    expect(deltas.join('')).toBe('three good tokens ');
  }, 60_000);

  it('a client that goes away cancels its job', async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      {
        model: 'corral-echo',
        messages: ask('a long answer that nobody reads to the end'),
        stream: true,
        metadata: { token_delay_ms: '1000' },
      },
      { signal: controller.signal },
    );
    for await (const _ of stream) {
      controller.abort();
      break;
    }
    const listed = async () => {
      const response = await fetch(`${server?.gatewayUrl}/v2/${endpointId}/jobs?limit=1`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      return (await response.json()) as { jobs: { status: string }[] };
    };
    await vi.waitFor(async () => expect((await listed()).jobs[0]?.status).toBe('CANCELLED'), {
      timeout: 10_000,
      interval: 100,
    });
  }, 60_000);

  it("refuses a wrong key in OpenAI's shape", async () => {
    const stranger = new OpenAI({ apiKey: 'not-a-key', baseURL: client.baseURL, maxRetries: 0 });
    await expect(stranger.models.list()).rejects.toMatchObject({
      status: 401,
      type: 'authentication_error',
      code: 'UNAUTHENTICATED',
    });
  }, 30_000);

  describe('against an http endpoint whose workers serve OpenAI themselves: passed through', () => {
    const direct = () =>
      new OpenAI({
        apiKey: KEY,
        baseURL: `${server?.gatewayUrl}/v2/${httpEndpointId}/openai/v1`,
        maxRetries: 0,
      });

    it('wakes the endpoint from zero and answers chat.completions.create, with the worker named', async () => {
      const { data, response } = await direct()
        .chat.completions.create({ model: 'corral-echo', messages: ask('hello from an http endpoint') })
        .withResponse();
      expect(data.choices[0]?.message.content).toBe('hello from an http endpoint');
      expect(response.headers.get('x-corral-worker-id')).toMatch(/\S/);
      expect(response.headers.get('x-corral-cold-start-ms')).toMatch(/^\d+$/);
    }, 60_000);

    it('streams each token as the worker sends it, and passes models.list, completions and embeddings', async () => {
      const openai = direct();
      const stream = await openai.chat.completions.create({
        model: 'corral-echo',
        messages: ask('one two three four'),
        stream: true,
        metadata: { token_delay_ms: '300' },
      });
      const arrivals: number[] = [];
      const deltas: string[] = [];
      for await (const chunk of stream) {
        arrivals.push(Date.now());
        deltas.push(chunk.choices[0]?.delta.content ?? '');
      }
      expect(deltas.join('')).toBe('one two three four');
      // Four tokens 300 ms apart: the first is read long before the last is sent.
      expect((arrivals.at(-1) ?? 0) - (arrivals[0] ?? 0)).toBeGreaterThan(600);
      const models: string[] = [];
      for await (const model of openai.models.list()) models.push(model.id);
      expect(models).toEqual(['corral-echo']);
      const completion = await openai.completions.create({ model: 'corral-echo', prompt: 'say this' });
      expect(completion.choices[0]?.text).toBe('say this');
      const embedding = await openai.embeddings.create({
        model: 'corral-echo',
        input: ['abc'],
        encoding_format: 'float',
      });
      expect(embedding.data[0]?.embedding).toEqual([3, 0, 0.5]);
    }, 60_000);

    it("answers the worker's own refusal, and makes no job", async () => {
      const before = await jobCount();
      await expect(
        direct().chat.completions.create({ model: 'no-such-model', messages: ask('hi') }),
      ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      const jobs = await fetch(`${server?.gatewayUrl}/v2/${httpEndpointId}/jobs`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect(((await jobs.json()) as { jobs: unknown[] }).jobs).toEqual([]);
      expect(await jobCount()).toBe(before);
    }, 60_000);

    it('needs a key, as the endpoint URL does', async () => {
      const stranger = new OpenAI({ apiKey: 'not-a-key', baseURL: direct().baseURL, maxRetries: 0 });
      await expect(stranger.models.list()).rejects.toMatchObject({ status: 401 });
    }, 30_000);
  });

  describe("the model router: baseURL <gateway>/openai/v1, the owner's endpoint picked by the model", () => {
    const routed = () =>
      new OpenAI({ apiKey: KEY, baseURL: `${server?.gatewayUrl}/openai/v1`, maxRetries: 0 });

    it("serves chat.completions.create on the queue endpoint's model as a job, with and without stream", async () => {
      const before = await jobCount();
      const answer = await routed().chat.completions.create({
        model: 'queued-llama',
        messages: ask('routed to a queue'),
      });
      expect(answer).toMatchObject({ object: 'chat.completion', model: 'queued-llama' });
      expect(answer.choices[0]?.message.content).toBe('routed to a queue');
      const stream = await routed().chat.completions.create({
        model: 'queued-llama',
        messages: ask('streamed through the router'),
        stream: true,
      });
      const deltas: string[] = [];
      for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? '');
      expect(deltas.join('')).toBe('streamed through the router');
      expect(await jobCount()).toBe(before + 2);
    }, 60_000);

    it("passes chat.completions.create on the http endpoint's model to its worker, with and without stream", async () => {
      const before = await jobCount();
      const { data, response } = await routed()
        .chat.completions.create({ model: 'corral-echo', messages: ask('routed to http') })
        .withResponse();
      expect(data.choices[0]?.message.content).toBe('routed to http');
      // The http endpoint's worker answered (a job's answer names none).
      expect(response.headers.get('x-corral-worker-id')).toMatch(/\S/);
      const stream = await routed().chat.completions.create({
        model: 'corral-echo',
        messages: ask('one two three'),
        stream: true,
      });
      const deltas: string[] = [];
      for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? '');
      expect(deltas.join('')).toBe('one two three');
      expect(await jobCount()).toBe(before);
    }, 60_000);

    it("lists the owner's models, each with its endpoint", async () => {
      const models: { id: string; object: string; owned_by: string }[] = [];
      for await (const model of routed().models.list()) models.push(model);
      expect(models).toEqual([
        { id: 'corral-echo', object: 'model', created: expect.any(Number), owned_by: httpEndpointId },
        { id: 'queued-llama', object: 'model', created: expect.any(Number), owned_by: endpointId },
      ]);
    }, 30_000);

    it('raises NotFoundError for a model no endpoint has, its message naming the models there are', async () => {
      const unknown = routed().chat.completions.create({ model: 'gpt-4o', messages: ask('hi') });
      await expect(unknown).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      await expect(unknown).rejects.toMatchObject({
        status: 404,
        code: 'MODEL_NOT_FOUND',
        message: expect.stringContaining(
          'no endpoint serves the model "gpt-4o"; the models there are: corral-echo, queued-llama',
        ),
      });
    }, 30_000);
  });
});
