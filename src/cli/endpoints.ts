/**
 * `corral endpoints list|get|create|update|delete|stop|start|log`. The text output is endpoint-format.ts's, the
 * spec files are read by spec-file.ts.
 */
import type { Command } from 'commander';
import { unwrapSingle } from '../contract/endpoint-schema.js';
import { parseCount } from './args.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import {
  formatEndpoint,
  formatEndpointList,
  formatEndpointMetrics,
  formatEvents,
} from './endpoint-format.js';
import { resolveEndpoint, withEndpointId } from './endpoint-ref.js';
import { CliError } from './output.js';
import { type Fields, isRecord, limitsOf, readCheckedSpec } from './spec-file.js';
import {
  DEFAULT_WAIT_SECONDS,
  formatReady,
  shouldWait,
  type WaitFlags,
  waitForEndpoint,
  waitTimeoutMs,
} from './wait.js';

const ENDPOINT_REF = 'endpoint id, appName or name';

export function makeEndpointsCommand(deps: CliDeps): Command {
  const group = newCommand('endpoints', deps).description('manage endpoints');

  addClientOptions(group.command('list').description('list endpoints'))
    .option('--page-size <n>', 'endpoints per page (server default 1000)')
    .option('--page-num <n>', 'zero-based page number')
    .action((_opts, command: Command) =>
      runWithClient<{ pageSize?: string; pageNum?: string }>(
        deps,
        command,
        async ({ client, opts, output }) => {
          const result = await client.listEndpoints({
            pageSize: parseCount(opts.pageSize, '--page-size'),
            pageNum: parseCount(opts.pageNum, '--page-num'),
          });
          output(result, () => formatEndpointList(result.endpoints, result.total));
        },
      ),
    );

  addClientOptions(
    group.command('get').description('show one endpoint').argument('<endpoint>', ENDPOINT_REF),
  ).action((ref: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const endpoint = await resolveEndpoint(client, ref);
      output({ endpoint }, () => formatEndpoint(endpoint));
    }),
  );

  addWaitOptions(
    addClientOptions(group.command('create').description('create an endpoint from a YAML or JSON spec')),
  )
    .requiredOption('-f, --file <path>', 'spec file: {endpoint: {...}} or the endpoint fields; - reads stdin')
    .action((_opts, command: Command) =>
      runWithClient<{ file: string } & WaitFlags>(deps, command, async ({ client, opts, json, output }) => {
        const fields = await readCheckedSpec(deps, opts.file, 'create', limitsOf(client));
        const wait = shouldWait(deps, opts, json);
        const timeoutMs = waitTimeoutMs(opts);
        const created = await client.createEndpoint(fields);
        if (!wait) {
          output(created, () => `created endpoint ${created.id}\n`);
          return;
        }
        if (!json) deps.stdout(`created endpoint ${created.id}\n`);
        const endpoint = await waitForEndpoint(deps, client, created.id, timeoutMs);
        output({ ...created, endpoint }, () => formatReady(endpoint));
      }),
    );

  addWaitOptions(
    addClientOptions(
      group
        .command('update')
        .description('change an endpoint; fields not given keep their value')
        .argument('<endpoint>', ENDPOINT_REF),
    ),
  )
    .option('-f, --file <path>', 'spec file with the fields to change; - reads stdin')
    .option('--min-workers <n>', 'workerConfig.minNum')
    .option('--max-workers <n>', 'workerConfig.maxNum')
    .option('--image <ref>', 'image.image')
    .option('--name <name>', 'endpoint name')
    .action((ref: string, _opts, command: Command) =>
      runWithClient<UpdateFlags & WaitFlags>(deps, command, async ({ client, opts, json, output }) => {
        const base =
          opts.file === undefined ? {} : await readCheckedSpec(deps, opts.file, 'update', limitsOf(client));
        const body = buildUpdateBody(base, opts);
        const wait = shouldWait(deps, opts, json);
        const timeoutMs = waitTimeoutMs(opts);
        const updated = await withEndpointId(client, ref, (id) => client.updateEndpoint(id, body));
        const done = `updated endpoint ${updated.id} (state ${updated.state.state})\n`;
        if (!wait) {
          output({ endpoint: updated }, () => done);
          return;
        }
        if (!json) deps.stdout(done);
        const endpoint = await waitForEndpoint(deps, client, updated.id, timeoutMs);
        output({ endpoint }, () => formatReady(endpoint));
      }),
    );

  const lifecycle = [
    ['delete', 'delete an endpoint (drains its workers first)', 'deleted'],
    ['stop', 'stop an endpoint: drain and remove all workers', 'stopped'],
    ['start', 'start a stopped endpoint', 'started'],
  ] as const;
  for (const [name, description, done] of lifecycle) {
    addClientOptions(
      group.command(name).description(description).argument('<endpoint>', ENDPOINT_REF),
    ).action((ref: string, _opts, command: Command) =>
      runWithClient(deps, command, async ({ client, output }) => {
        const id = await withEndpointId(client, ref, async (id) => {
          if (name === 'delete') await client.deleteEndpoint(id);
          else if (name === 'stop') await client.stopEndpoint(id);
          else await client.startEndpoint(id);
          return id;
        });
        output({}, () => `${done} endpoint ${id}\n`);
      }),
    );
  }

  addClientOptions(
    group
      .command('metrics')
      .description(
        "show an endpoint's workers by state and its traffic (requests, latency, queue, cold starts)",
      )
      .argument('<endpoint>', ENDPOINT_REF),
  ).action((ref: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const metrics = await withEndpointId(client, ref, (id) => client.getEndpointMetrics(id));
      output(metrics, () => formatEndpointMetrics(metrics));
    }),
  );

  addClientOptions(
    group.command('log').description("show an endpoint's events").argument('<endpoint>', ENDPOINT_REF),
  )
    .option('--after <n>', 'only events after this cursor (the "next" of a previous page)')
    .option('--limit <n>', 'at most this many events')
    .action((ref: string, _opts, command: Command) =>
      runWithClient<{ after?: string; limit?: string }>(deps, command, async ({ client, opts, output }) => {
        const params = { after: parseCount(opts.after, '--after'), limit: parseCount(opts.limit, '--limit') };
        const page = await withEndpointId(client, ref, (id) => client.getEndpointLog(id, params));
        output(page, () => formatEvents(page.events));
      }),
    );

  return group;
}

/** --wait, --no-wait and --timeout, for the commands that change an endpoint. */
export function addWaitOptions(command: Command): Command {
  return command
    .option('--wait', 'wait until the endpoint is ready, showing progress (the default on a terminal)')
    .option('--no-wait', 'return at once')
    .option('--timeout <seconds>', `how long --wait waits (default ${DEFAULT_WAIT_SECONDS})`);
}

export interface UpdateFlags {
  file?: string;
  minWorkers?: string;
  maxWorkers?: string;
  image?: string;
  name?: string;
}

/**
 * The flat update body: the spec file's fields (if any) with the flags laid over them. Nested
 * objects carry only what changes; the server keeps the rest (it merges one level deep).
 */
export function buildUpdateBody(base: Fields, flags: UpdateFlags): Fields {
  const body: Fields = { ...base };
  delete body.id;
  const minNum = parseCount(flags.minWorkers, '--min-workers');
  const maxNum = parseCount(flags.maxWorkers, '--max-workers');
  if (minNum !== undefined && maxNum !== undefined && minNum > maxNum) {
    throw new CliError(`--min-workers (${minNum}) is greater than --max-workers (${maxNum})`);
  }
  if (minNum !== undefined || maxNum !== undefined) {
    body.workerConfig = { ...nested(body.workerConfig), ...defined({ minNum, maxNum }) };
  }
  if (flags.image !== undefined) body.image = { ...nested(body.image), image: flags.image };
  if (flags.name !== undefined) body.name = flags.name;
  if (Object.keys(body).length === 0) {
    throw new CliError(
      'nothing to update: pass -f <file> or at least one of --min-workers, --max-workers, --image, --name',
    );
  }
  return body;
}

/** An object field of a spec, also in the one-element-array form older clients use. */
function nested(value: unknown): Fields {
  const item = unwrapSingle(value);
  return isRecord(item) ? item : {};
}

function defined(fields: Fields): Fields {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}
