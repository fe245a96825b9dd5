/**
 * `corral jobs run|status|cancel|list|purge`: jobs through the gateway's jobs API (RunPod's queue API, docs/jobs.md).
 * `run` queues the job and, unless --async, polls its status until it ends and prints the output (stdout) or the
 * error (stderr, exit code 1); --async prints only the id, for `$(corral jobs run --async ...)`.
 */
import type { Command } from 'commander';
import {
  CorralJobsClient,
  JOB_STATUSES,
  type JobStatusName,
  type RunJobInput,
  TERMINAL_JOB_STATUSES,
  type WireJob,
} from '../client/index.js';
import { newCommand, resolveConnection } from './client-options.js';
import type { CliDeps } from './deps.js';
import { formatJob, formatJobError, formatJobList, formatOutput } from './job-format.js';
import { CliError, printJson, runAction } from './output.js';

export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8000';
/** Polls start at this and slow down to the maximum while a job runs. */
export const FIRST_POLL_MS = 250;
export const MAX_POLL_MS = 2000;

interface JobsOptions {
  gatewayUrl?: string;
  apiKey?: string;
  json?: boolean;
}

function addJobsOptions(command: Command): Command {
  return command
    .option(
      '--gateway-url <url>',
      `Corral gateway base URL (env CORRAL_GATEWAY_URL; default: what the API at CORRAL_API_URL says, else ${DEFAULT_GATEWAY_URL})`,
    )
    .option('--api-key <key>', 'your API key or an invoke key of the endpoint (env CORRAL_API_KEY)')
    .option('--json', 'print the JSON answer as is');
}

async function jobsClient(deps: CliDeps, opts: JobsOptions): Promise<CorralJobsClient> {
  const apiKey = nonEmpty(opts.apiKey) ?? nonEmpty(deps.env.CORRAL_API_KEY);
  if (apiKey === undefined) throw new CliError('no key: pass --api-key or set CORRAL_API_KEY');
  const baseUrl =
    nonEmpty(opts.gatewayUrl) ??
    nonEmpty(deps.env.CORRAL_GATEWAY_URL) ??
    (await askedGatewayUrl(deps, apiKey));
  return new CorralJobsClient({ baseUrl, apiKey });
}

/**
 * The gateway's URL as the API at CORRAL_API_URL (or its default) tells it, so that the two lines the first start
 * prints are all `corral jobs` needs; the default gateway URL when the API cannot say.
 */
async function askedGatewayUrl(deps: CliDeps, apiKey: string): Promise<string> {
  const { baseUrl } = resolveConnection(deps, { apiKey });
  const told = await deps
    .makeClient({ baseUrl, apiKey })
    .gatewayUrl()
    .catch(() => undefined);
  return told ?? DEFAULT_GATEWAY_URL;
}

/** Runs an action with a jobs client; failures print as every command's do. */
function withJobs<O extends object>(
  deps: CliDeps,
  command: Command,
  body: (ctx: { client: CorralJobsClient; opts: O & JobsOptions; json: boolean }) => Promise<void>,
): Promise<void> {
  const opts = command.opts<O & JobsOptions>();
  const json = opts.json === true;
  return runAction(deps, async () => body({ client: await jobsClient(deps, opts), opts, json }), { json });
}

interface RunOptions {
  inputFile?: string;
  async?: boolean;
  webhook?: string;
  executionTimeout?: string;
  ttl?: string;
  lowPriority?: boolean;
  timeout?: string;
}

export function makeJobsCommand(deps: CliDeps): Command {
  const group = newCommand('jobs', deps).description(
    "run and follow jobs on an endpoint (RunPod's queue API on the gateway's address)",
  );

  addJobsOptions(
    group
      .command('run')
      .description("queue a job and wait for its output; --async prints the job's id at once")
      .argument('<endpoint>', 'endpoint id, appName or name')
      .argument('[input]', 'the job\'s input, JSON (e.g. \'{"prompt": "a cat"}\')'),
  )
    .option('--input-file <path>', 'read the input JSON from a file (- for stdin)')
    .option('--async', 'print the job id and return without waiting')
    .option('--webhook <url>', 'POST the final status to this URL (signed; docs/jobs.md)')
    .option('--execution-timeout <ms>', 'policy.executionTimeout: the longest the job may run, in ms')
    .option('--ttl <ms>', 'policy.ttl: the longest the job may live, queue included, in ms')
    .option('--low-priority', 'policy.lowPriority: the job adds no worker')
    .option('--timeout <seconds>', 'stop waiting after this long (the job goes on); default: no limit')
    .action((endpoint: string, input: string | undefined, _opts, command: Command) =>
      withJobs<RunOptions>(deps, command, async ({ client, opts, json }) => {
        const job = await runInput(deps, input, opts);
        const queued = await client.run(endpoint, job);
        if (opts.async === true) {
          if (json) printJson(deps, queued);
          else deps.stdout(`${queued.id}\n`);
          return;
        }
        deps.stderr(`job ${queued.id} ${queued.status}\n`);
        let streamed = 0;
        // A generator handler's chunks are printed as they come, one JSON line each; --json prints the end only.
        const onChunk = (output: unknown) => {
          streamed += 1;
          if (!json) deps.stdout(`${JSON.stringify(output)}\n`);
        };
        const ended = await pollUntilEnd(deps, client, endpoint, queued, timeoutMs(opts.timeout), onChunk);
        if (json) printJson(deps, ended);
        else if (ended.status === 'COMPLETED' && streamed > 0) {
          // Its output is the chunks again (runpod's aggregate stream); the end is said where the statuses are.
          deps.stderr(
            `job ${ended.id} COMPLETED after ${streamed} streamed chunk${streamed === 1 ? '' : 's'}\n`,
          );
        } else if (ended.status === 'COMPLETED')
          deps.stdout(ended.output === undefined ? '' : formatOutput(ended.output));
        if (ended.status !== 'COMPLETED') {
          const why = ended.error === undefined ? '' : `: ${formatJobError(ended.error)}`;
          if (!json) deps.stderr(`job ${ended.id} ${ended.status}${why}\n`);
          process.exitCode = 1;
        }
      }),
    );

  addJobsOptions(
    group
      .command('status')
      .description("a job's status, times and output")
      .argument('<endpoint>', 'endpoint id, appName or name')
      .argument('<job>', 'job id'),
  ).action((endpoint: string, jobId: string, _opts, command: Command) =>
    withJobs(deps, command, async ({ client, json }) => {
      const job = await client.status(endpoint, jobId);
      if (json) printJson(deps, job);
      else deps.stdout(formatJob(job));
    }),
  );

  addJobsOptions(
    group
      .command('cancel')
      .description('cancel a job, queued or running (its worker is told to stop)')
      .argument('<endpoint>', 'endpoint id, appName or name')
      .argument('<job>', 'job id'),
  ).action((endpoint: string, jobId: string, _opts, command: Command) =>
    withJobs(deps, command, async ({ client, json }) => {
      const job = await client.cancel(endpoint, jobId);
      if (json) printJson(deps, job);
      else deps.stdout(`job ${job.id} ${job.status}\n`);
    }),
  );

  addJobsOptions(
    group
      .command('list')
      .description("an endpoint's recent jobs, newest first, and its jobs counted by status")
      .argument('<endpoint>', 'endpoint id, appName or name'),
  )
    .option('--status <status>', `only jobs in this status (${JOB_STATUSES.join(', ')})`)
    .option('--limit <n>', 'at most this many jobs')
    .action((endpoint: string, _opts, command: Command) =>
      withJobs<{ status?: string; limit?: string }>(deps, command, async ({ client, opts, json }) => {
        const list = await client.list(endpoint, {
          ...(opts.status === undefined ? {} : { status: jobStatus(opts.status) }),
          ...(opts.limit === undefined ? {} : { limit: positive('--limit', opts.limit) }),
        });
        if (json) printJson(deps, list);
        else deps.stdout(formatJobList(list));
      }),
    );

  addJobsOptions(
    group
      .command('purge')
      .description("remove an endpoint's queued jobs (those running go on)")
      .argument('<endpoint>', 'endpoint id, appName or name'),
  ).action((endpoint: string, _opts, command: Command) =>
    withJobs(deps, command, async ({ client, json }) => {
      const purged = await client.purgeQueue(endpoint);
      if (json) printJson(deps, purged);
      else deps.stdout(`removed ${purged.removed} queued job${purged.removed === 1 ? '' : 's'}\n`);
    }),
  );

  return group;
}

async function runInput(deps: CliDeps, inline: string | undefined, opts: RunOptions): Promise<RunJobInput> {
  if (inline !== undefined && opts.inputFile !== undefined) {
    throw new CliError('give the input as an argument or with --input-file, not both');
  }
  const source =
    opts.inputFile === undefined ? 'the input' : opts.inputFile === '-' ? 'stdin' : opts.inputFile;
  const text =
    opts.inputFile === undefined
      ? (inline ?? '{}')
      : opts.inputFile === '-'
        ? await deps.readStdin()
        : await deps.readFile(opts.inputFile);
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch {
    throw new CliError(`${source} is not valid JSON`);
  }
  const policy: NonNullable<RunJobInput['policy']> = {};
  if (opts.executionTimeout !== undefined)
    policy.executionTimeout = positive('--execution-timeout', opts.executionTimeout);
  if (opts.ttl !== undefined) policy.ttl = positive('--ttl', opts.ttl);
  if (opts.lowPriority === true) policy.lowPriority = true;
  return {
    input,
    ...(opts.webhook === undefined ? {} : { webhook: opts.webhook }),
    ...(Object.keys(policy).length === 0 ? {} : { policy }),
  };
}

/**
 * Polls the job's status, printing each change on stderr, until it ends or `limitMs` passes. While it runs, the
 * wait between polls is a read of its stream (a long poll), whose chunks go to `onChunk` as they arrive.
 */
async function pollUntilEnd(
  deps: CliDeps,
  client: CorralJobsClient,
  endpoint: string,
  queued: WireJob,
  limitMs: number | undefined,
  onChunk: (output: unknown) => void,
): Promise<WireJob> {
  const started = deps.now();
  let job = queued;
  let pause = FIRST_POLL_MS;
  while (!TERMINAL_JOB_STATUSES.includes(job.status)) {
    if (limitMs !== undefined && deps.now() - started >= limitMs) {
      throw new CliError(
        `job ${job.id} is still ${job.status} after ${limitMs / 1000} s; see it with: corral jobs status ${endpoint} ${job.id}`,
      );
    }
    if (job.status === 'IN_PROGRESS') {
      const before = deps.now();
      const read = await client.stream(endpoint, job.id, pause);
      for (const output of read.stream) onChunk(output);
      // A read that came back early with nothing (the job ended, a gateway without long polls) waits out the rest.
      const left = pause - (deps.now() - before);
      if (read.stream.length === 0 && left > 0) await deps.sleep(left);
    } else {
      await deps.sleep(pause);
    }
    pause = Math.min(MAX_POLL_MS, pause * 2);
    const previous = job.status;
    job = await client.status(endpoint, job.id);
    if (job.status !== previous && !TERMINAL_JOB_STATUSES.includes(job.status)) {
      deps.stderr(`job ${job.id} ${job.status}\n`);
    }
  }
  // The chunks yielded after the last read, or by a job that ended between two polls.
  for (let read = await client.stream(endpoint, job.id, 0); read.stream.length > 0; ) {
    for (const output of read.stream) onChunk(output);
    read = await client.stream(endpoint, job.id, 0);
  }
  return job;
}

function timeoutMs(flag: string | undefined): number | undefined {
  return flag === undefined ? undefined : positive('--timeout', flag) * 1000;
}

function positive(flag: string, text: string): number {
  if (!/^\d{1,9}$/.test(text.trim()) || Number(text) === 0) {
    throw new CliError(`${flag} must be a positive whole number, got "${text}"`);
  }
  return Number(text);
}

function jobStatus(text: string): JobStatusName {
  const upper = text.trim().toUpperCase() as JobStatusName;
  if (!JOB_STATUSES.includes(upper)) throw new CliError(`--status must be one of ${JOB_STATUSES.join(', ')}`);
  return upper;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
