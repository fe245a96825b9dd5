/**
 * The Endpoints page: every endpoint of the key's owner with its type, state (and the cause a worker gives), workers
 * (ready / desired / most), requests per minute and latency of the last minutes, GPUs and URL; filtered, sorted,
 * live.
 */
import { useState } from 'preact/hooks';
import type { WireEndpointMetrics } from '../../../src/client/index.js';
import { useApi } from '../api-context.js';
import {
  curlFor,
  filterAndSort,
  gpuLine,
  recentLine,
  type SortKey,
  workerCounts,
  workersLine,
} from '../endpoint-view.js';
import { usePoll } from '../poll.js';
import { href } from '../route.js';
import { CopyButton, Notice, StateBadge } from '../widgets.js';
import { stateCause } from '../worker-activity.js';

const POLL_MS = 2000;
/** The figures of the last minutes change every history sample (10 s): read less often, for the first rows. */
const METRICS_POLL_MS = 5000;
const METRICS_ROWS = 50;

export function EndpointsPage() {
  const api = useApi();
  const list = usePoll(() => api.call((c) => c.listEndpoints()), POLL_MS, []);
  const [filter, setFilter] = useState('');
  const [sort, setSort] = useState<SortKey>('newest');
  const shown = list.data ? filterAndSort(list.data.endpoints, filter, sort) : [];
  const measured = shown.slice(0, METRICS_ROWS).map((e) => e.id);
  const metrics = usePoll(
    async () => {
      const read = await Promise.all(
        measured.map((id) => api.call((c) => c.getEndpointMetrics(id)).catch(() => undefined)),
      );
      return new Map(
        read.filter((m) => m !== undefined).map((m) => [m.id, m] as [string, WireEndpointMetrics]),
      );
    },
    METRICS_POLL_MS,
    [measured.join(',')],
  );
  return (
    <main>
      <div class="title-row">
        <h1>Endpoints</h1>
        <a class="button" href={href({ page: 'create' })}>
          New endpoint
        </a>
      </div>
      <div class="toolbar">
        <div class="field inline">
          <label for="filter">Filter</label>
          <input
            id="filter"
            type="search"
            placeholder="name, app name, id or state"
            value={filter}
            onInput={(e) => setFilter(e.currentTarget.value)}
          />
        </div>
        <div class="field inline">
          <label for="sort">Sort by</label>
          <select id="sort" value={sort} onChange={(e) => setSort(e.currentTarget.value as SortKey)}>
            <option value="newest">Newest first</option>
            <option value="name">Name</option>
            <option value="state">State</option>
            <option value="ready">Ready workers</option>
          </select>
        </div>
        <span class="muted" aria-live="polite">
          {list.data ? `${shown.length} of ${list.data.total}` : 'Loading...'}
        </span>
      </div>
      {list.error ? <Notice kind="error">Could not refresh: {list.error}</Notice> : null}
      {list.data && list.data.total === 0 ? (
        <p>
          No endpoints yet. <a href={href({ page: 'create' })}>Create one</a>.
        </p>
      ) : null}
      {shown.length > 0 ? (
        <table class="cards" aria-label="Endpoints">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">App name</th>
              <th scope="col">Type</th>
              <th scope="col">State</th>
              <th scope="col">
                <abbr title="ready / desired by the autoscaler / most">Workers</abbr>
              </th>
              <th scope="col">
                <abbr title="requests per minute over the last 5 minutes">Req/min</abbr>
              </th>
              <th scope="col">
                <abbr title="latency p50 / p99 over the last 5 minutes">p50 / p99</abbr>
              </th>
              <th scope="col">GPUs</th>
              <th scope="col">URL</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((endpoint) => {
              const counts = workerCounts(endpoint);
              const m = metrics.data?.get(endpoint.id);
              const recent = recentLine(m?.recent);
              const cause = stateCause(endpoint);
              return (
                <tr key={endpoint.id} data-endpoint={endpoint.id}>
                  <td data-label="Name" class="nowrap">
                    <a href={href({ page: 'endpoint', id: endpoint.id })}>
                      {endpoint.name || endpoint.appName}
                    </a>
                  </td>
                  <td data-label="App name" class="nowrap">
                    <code>{endpoint.appName}</code>
                  </td>
                  <td data-label="Type" class="type">
                    {endpoint.type}
                  </td>
                  <td data-label="State">
                    <StateBadge state={endpoint.state} />
                    {cause ? <span class="cause">{cause}</span> : null}
                  </td>
                  <td data-label="Workers" class="workers">
                    <span title="ready / desired / most">{workersLine(counts, m?.desiredWorkers)}</span>
                  </td>
                  <td data-label="Req/min" class="rate nowrap">
                    {recent.rate}
                  </td>
                  <td data-label="p50 / p99" class="latency nowrap">
                    {recent.latency}
                  </td>
                  <td data-label="GPUs" class="nowrap">
                    {gpuLine(endpoint)}
                  </td>
                  <td data-label="URL" class="url">
                    <div>
                      <code class="wrap">{endpoint.url}</code>
                      <span class="buttons">
                        <CopyButton
                          text={endpoint.url}
                          label={`Copy the URL of ${endpoint.name || endpoint.appName}`}
                        />
                        <CopyButton
                          text={curlFor(endpoint)}
                          label={`Copy a curl request to ${endpoint.name || endpoint.appName}`}
                        >
                          Copy curl
                        </CopyButton>
                      </span>
                    </div>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </main>
  );
}
