/**
 * `corral apply -f spec.yaml`: makes the endpoint with the file's name be what the file says, creating it when none
 * has that name. Declarative: what the file leaves out is not kept from before (an env removed from the file is
 * removed), and applying the same file twice changes nothing the second time.
 */
import type { Command } from 'commander';
import type { CorralClient, WireEndpoint } from '../client/index.js';
import { unwrapSingle } from '../contract/endpoint-schema.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { listAll } from './endpoint-ref.js';
import { addWaitOptions } from './endpoints.js';
import { CliError } from './output.js';
import { documentedDefaults } from './spec-check.js';
import { type Fields, isRecord, limitsOf, readCheckedSpec } from './spec-file.js';
import { formatReady, shouldWait, type WaitFlags, waitForEndpoint, waitTimeoutMs } from './wait.js';

/** Lists a file may leave out; left out, they are emptied. */
const LISTS = ['envs', 'volumeMounts', 'products'] as const;
/** Objects whose keys the file may leave out; each key left out takes its documented default. */
const OBJECTS = ['workerConfig', 'policy', 'image', 'healthy'] as const;

export function makeApplyCommand(deps: CliDeps): Command {
  return addWaitOptions(
    addClientOptions(
      newCommand('apply', deps).description(
        'create or update the endpoint named in a spec file, so that it is as the file says',
      ),
    ),
  )
    .requiredOption('-f, --file <path>', 'spec file: {endpoint: {...}} or the endpoint fields; - reads stdin')
    .action((_opts, command: Command) =>
      runWithClient<{ file: string } & WaitFlags>(deps, command, async ({ client, opts, json, output }) => {
        const fields = await readCheckedSpec(deps, opts.file, 'create', limitsOf(client));
        const name = typeof fields.name === 'string' ? fields.name.trim() : '';
        if (name === '') throw new CliError('apply finds the endpoint by its name: give the file a name');
        const wait = shouldWait(deps, opts, json);
        const timeoutMs = waitTimeoutMs(opts);
        const outcome = await applySpec(client, name, fields);
        const done = `${outcome.action} endpoint ${outcome.id} (${name})\n`;
        if (!wait) {
          output(outcome, () => done);
          return;
        }
        if (!json) deps.stdout(done);
        const endpoint = await waitForEndpoint(deps, client, outcome.id, timeoutMs);
        output({ ...outcome, endpoint }, () => formatReady(endpoint));
      }),
    );
}

export interface ApplyOutcome {
  id: string;
  action: 'created' | 'updated' | 'unchanged';
}

/** Creates the endpoint named `name`, or updates it to `fields` with everything left out at its default. */
export async function applySpec(client: CorralClient, name: string, fields: Fields): Promise<ApplyOutcome> {
  const named = (await listAll(client)).filter((e) => e.name === name);
  if (named.length > 1) {
    throw new CliError(
      `${named.length} endpoints are named "${name}" (${named.map((e) => e.id).join(', ')}): ` +
        'apply needs the name to be unique',
    );
  }
  const [current] = named;
  if (current === undefined) {
    const created = await client.createEndpoint(fields);
    return { id: created.id, action: 'created' };
  }
  const before = await client.getEndpoint(current.id);
  const after = await client.updateEndpoint(current.id, declarativeBody(fields));
  return { id: after.id, action: sameSpec(before, after) ? 'unchanged' : 'updated' };
}

/**
 * The update body that makes the endpoint what `fields` says: lists left out are emptied, and each key of
 * workerConfig, policy, image and healthy left out takes its documented default (an update keeps what it is not
 * sent). name, appName, rootfsSize and clusterID left out keep their value.
 */
export function declarativeBody(fields: Fields): Fields {
  const body: Fields = { ...fields, public: fields.public ?? false };
  for (const key of LISTS) body[key] = fields[key] ?? [];
  for (const key of OBJECTS) {
    const given = unwrapSingle(fields[key]);
    body[key] = { ...documentedDefaults(key), ...(isRecord(given) ? given : {}) };
  }
  return body;
}

/** The endpoint's spec as the API shows it, without its state, workers and links. */
function sameSpec(a: WireEndpoint, b: WireEndpoint): boolean {
  const spec = ({ state: _s, workers: _w, log: _l, metrics: _m, ...rest }: WireEndpoint) => rest;
  return JSON.stringify(spec(a)) === JSON.stringify(spec(b));
}
