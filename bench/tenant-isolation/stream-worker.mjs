// The tenant-isolation bench's hostile queue worker (issue 29 item 5), run by the `local` runtime with the host's
// node: it takes jobs over the RunPod worker protocol as runpod-python does (the URLs and raw token Corral puts in
// its environment; test/fixtures/worker/runpod-worker.mjs is the full protocol, but its stream chunks are a few
// bytes) and answers each with `input.chunks` stream chunks of exactly `input.chunkBytes` bytes each,
// `{"output":"xxx...x"}`, one after the other, then the result `{"output": []}` with `isStream=true`, pinging every
// RUNPOD_PING_INTERVAL with the job it holds, as the SDK does (a long stream would otherwise end it). Every chunk is
// sent whatever the previous one was answered (a hostile worker does not stop at a refusal). The chunk is built once
// per size: the worker holds one chunk, not the stream. Every 10 chunks and at the end of each job it prints a JSON
// line with the answers its chunks got by status (the bench reads the last one from the worker's log).
const env = process.env;
const WORKER_ID = env.RUNPOD_POD_ID ?? `local-${process.pid}`;
const TAKE_URL = `${env.RUNPOD_WEBHOOK_GET_JOB?.replaceAll('$ID', WORKER_ID)}&job_in_progress=0`;
const STREAM_URL = (env.RUNPOD_WEBHOOK_POST_STREAM ?? '').replaceAll('$RUNPOD_POD_ID', WORKER_ID);
const DONE_URL = (env.RUNPOD_WEBHOOK_POST_OUTPUT ?? '').replaceAll('$RUNPOD_POD_ID', WORKER_ID);
const PING_URL = (env.RUNPOD_WEBHOOK_PING ?? '').replaceAll('$RUNPOD_POD_ID', WORKER_ID);
const PING_MS = Math.max(1, Math.floor(Number(env.RUNPOD_PING_INTERVAL ?? 10_000) / 1000)) * 1000;
const headers = {
  Authorization: env.RUNPOD_AI_API_KEY ?? '',
  'Content-Type': 'application/x-www-form-urlencoded',
};
const log = (message, data = {}) => console.log(JSON.stringify({ message, worker: WORKER_ID, ...data }));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `{"output":"x...x"}` of exactly `bytes` bytes. */
function chunkOf(bytes) {
  const head = '{"output":"';
  const tail = '"}';
  return Buffer.concat([
    Buffer.from(head),
    Buffer.alloc(bytes - head.length - tail.length, 'x'),
    Buffer.from(tail),
  ]);
}

async function post(url, body) {
  try {
    const response = await fetch(url, { method: 'POST', headers, body });
    await response.text();
    return String(response.status);
  } catch (error) {
    return `error ${error.cause?.code ?? error.message}`;
  }
}

/** A progress line this often, so that a stream cut by the bench's bound still says how far it got. */
const REPORT_EVERY = 10;

/** The job being streamed: the pings list it, as the SDK's do (a worker silent for too long is ended). */
let holding;

/** Pings as runpod-python does, every RUNPOD_PING_INTERVAL, naming the job it holds. */
async function pingLoop() {
  for (;;) {
    const url = new URL(PING_URL);
    if (holding) url.searchParams.set('job_id', holding);
    url.searchParams.set('runpod_version', '1.12.0');
    try {
      await (await fetch(url, { headers, signal: AbortSignal.timeout(PING_MS * 2) })).text();
    } catch (error) {
      log('ping failed', { error: String(error) });
    }
    await sleep(PING_MS);
  }
}

async function stream(job) {
  holding = job.id;
  const count = Number(job.input?.chunks ?? 0);
  const chunk = chunkOf(Number(job.input?.chunkBytes ?? 1024));
  const byStatus = {};
  const started = performance.now();
  const report = (sent, more) =>
    log('streamed', {
      job: job.id,
      sent,
      chunks: count,
      chunkBytes: chunk.length,
      byStatus,
      seconds: (performance.now() - started) / 1000,
      ...more,
    });
  for (let i = 0; i < count; i++) {
    const status = await post(`${STREAM_URL.replaceAll('$ID', job.id)}&isStream=false`, chunk);
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    if ((i + 1) % REPORT_EVERY === 0 && i + 1 < count) report(i + 1, { done: false });
  }
  const result = await post(`${DONE_URL.replaceAll('$ID', job.id)}&isStream=true`, '{"output":[]}');
  report(count, { done: true, result });
  holding = undefined;
}

if (!env.RUNPOD_WEBHOOK_GET_JOB) {
  log('RUNPOD_WEBHOOK_GET_JOB is not set: nothing to do');
  process.exit(0);
}
log('worker started');
void pingLoop();
for (;;) {
  try {
    const response = await fetch(TAKE_URL, { headers, signal: AbortSignal.timeout(90_000) });
    if (response.status === 200) await stream(await response.json());
    else {
      await response.text();
      if (response.status === 429) await sleep(5_000);
    }
  } catch (error) {
    log('take failed', { error: String(error) });
    await sleep(1_000);
  }
}
