/**
 * The GPUs page: every GPU of the server (index, uuid, product, memory), the worker and endpoint holding each one
 * (your own; every owner's for an admin key, others' GPUs are otherwise just busy), and the workers waiting for
 * GPUs with the reason the placement gives. Live.
 */
import type { WireGpu, WireWaitingWorker } from '../../../src/client/index.js';
import { useApi } from '../api-context.js';
import { age } from '../endpoint-view.js';
import { usePoll } from '../poll.js';
import { href } from '../route.js';
import { Notice } from '../widgets.js';

const POLL_MS = 2000;

export function GpusPage() {
  const api = useApi();
  const report = usePoll(() => api.call((c) => c.getGpus()), POLL_MS, []);
  const data = report.data;
  const now = Date.now();
  const busy = data?.gpus.filter((g) => g.busy).length ?? 0;
  return (
    <main>
      <h1>GPUs</h1>
      {report.error ? <Notice kind="error">Could not refresh: {report.error}</Notice> : null}
      {data ? (
        <p class="muted" data-testid="gpu-summary">
          {data.gpus.length} GPU{data.gpus.length === 1 ? '' : 's'}, {busy} busy, {data.gpus.length - busy}{' '}
          free.{' '}
          {data.scope === 'own'
            ? "You see your own workers; a GPU another owner's worker holds shows only as busy."
            : "An admin key: every owner's workers are shown."}
        </p>
      ) : (
        <p>Loading...</p>
      )}
      {data && data.gpus.length === 0 ? (
        <p>This server has no GPUs: endpoints cannot be placed (simulate some with --gpus).</p>
      ) : null}
      {data && data.gpus.length > 0 ? (
        <table class="cards" aria-label="GPUs">
          <thead>
            <tr>
              <th scope="col">GPU</th>
              <th scope="col">Product</th>
              <th scope="col">Memory</th>
              <th scope="col">Held by</th>
            </tr>
          </thead>
          <tbody>
            {data.gpus.map((gpu) => (
              <tr key={gpu.uuid} data-gpu={gpu.index}>
                <td data-label="GPU">
                  <span>
                    {gpu.index}
                    {gpu.node === undefined ? '' : ` on ${gpu.node}`}{' '}
                    <code class="wrap muted">{gpu.uuid}</code>
                  </span>
                </td>
                <td data-label="Product">
                  <span>
                    {gpu.productId}
                    <span class="muted"> ({gpu.model})</span>
                  </span>
                </td>
                <td data-label="Memory">{gpu.memoryGB} GB</td>
                <td data-label="Held by" class="holder">
                  <Holder gpu={gpu} showOwner={data.scope === 'all'} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}

      <section aria-labelledby="waiting-title">
        <h2 id="waiting-title">Waiting for GPUs</h2>
        {data && data.waiting.length === 0 ? <p class="muted">No worker waits for a GPU.</p> : null}
        {data && data.waiting.length > 0 ? (
          <table class="cards" aria-labelledby="waiting-title">
            <thead>
              <tr>
                <th scope="col">Worker</th>
                <th scope="col">Endpoint</th>
                <th scope="col">Needs</th>
                <th scope="col">Waiting</th>
                <th scope="col">Why</th>
              </tr>
            </thead>
            <tbody>
              {data.waiting.map((w) => (
                <tr key={w.workerId} data-waiting={w.workerId}>
                  <td data-label="Worker">
                    <code>{w.workerId}</code>
                  </td>
                  <td data-label="Endpoint">
                    <EndpointLink
                      id={w.endpointId}
                      name={w.endpointName}
                      ownerId={w.ownerId}
                      showOwner={data.scope === 'all'}
                    />
                  </td>
                  <td data-label="Needs">{needs(w)}</td>
                  <td data-label="Waiting">{age(Date.parse(w.since), now)}</td>
                  <td data-label="Why">{w.reason || '-'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </section>
    </main>
  );
}

function Holder(props: { gpu: WireGpu; showOwner: boolean }) {
  const { gpu } = props;
  if (!gpu.busy) return <span class="badge badge-free">free</span>;
  const h = gpu.heldBy;
  if (h === null) return <span class="muted">busy (another owner's worker)</span>;
  if (h.endpointId === '')
    return (
      <span>
        <code>{h.workerId}</code> <span class="muted">(container being removed)</span>
      </span>
    );
  return (
    <span>
      <code>{h.workerId}</code> <span class={`badge badge-${h.state}`}>{h.state}</span> of{' '}
      <EndpointLink id={h.endpointId} name={h.endpointName} ownerId={h.ownerId} showOwner={props.showOwner} />
    </span>
  );
}

/** A link to the endpoint's page, with its owner named in an admin's view (every owner's workers). */
function EndpointLink(props: { id: string; name: string; ownerId: string; showOwner: boolean }) {
  const label = props.name || props.id;
  return (
    <span>
      <a href={href({ page: 'endpoint', id: props.id })}>{label}</a>
      {props.showOwner ? <span class="muted"> (owner {props.ownerId})</span> : null}
    </span>
  );
}

/** `2 x h100-80g`, `1 x any product`. */
function needs(w: WireWaitingWorker): string {
  return `${w.gpuCount} x ${w.productIds.length === 0 ? 'any product' : w.productIds.join(' or ')}`;
}
