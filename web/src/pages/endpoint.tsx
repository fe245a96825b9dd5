/**
 * The Endpoint page: one endpoint's state, where it is called (its URL, or a queue endpoint's /v2 URLs) with a curl
 * to copy, traffic, workers (state, reason, GPUs, age, requests in flight, log), its event timeline and its spec,
 * live; and the actions stop, start, edit and delete (after a confirmation naming it).
 */
import { Fragment } from 'preact';
import { useRef, useState } from 'preact/hooks';
import type {
  WireEndpoint,
  WireEndpointMetrics,
  WireEvent,
  WorkerMetrics,
} from '../../../src/client/index.js';
import { describeError, useApi } from '../api-context.js';
import { age, callLines, gpuLine, ms, trafficWindowLine, workerCounts } from '../endpoint-view.js';
import { usePoll } from '../poll.js';
import { href } from '../route.js';
import { ConfirmDialog, CopyButton, Notice, StateBadge } from '../widgets.js';
import { emptyChartsLine, restingLine, workersActivity } from '../worker-activity.js';
import { HistoryCharts } from './charts.js';
import { EndpointLogPanel } from './endpoint-log-panel.js';
import { JobsSection } from './jobs-section.js';
import { LogPanel } from './log-panel.js';

const POLL_MS = 2000;
/** `logWorker` when the log of every worker is followed. */
const ALL_WORKERS = '*';

export function EndpointPage(props: { id: string }) {
  const api = useApi();
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string | undefined>(undefined);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [logWorker, setLogWorker] = useState<string | undefined>(undefined);
  const endpoint = usePoll(() => api.call((c) => c.getEndpoint(props.id)), POLL_MS, [props.id]);
  const workers = usePoll(
    async () => {
      const listed = endpoint.data?.workers ?? [];
      const read = await Promise.all(
        listed
          .slice(0, 50)
          .map((w) => api.call((c) => c.getWorkerMetrics(props.id, w.id)).catch(() => undefined)),
      );
      return new Map(read.filter((m) => m !== undefined).map((m) => [m.id, m] as [string, WorkerMetrics]));
    },
    POLL_MS,
    [props.id, endpoint.data?.workers.map((w) => w.id).join(',')],
  );
  const traffic = usePoll(() => api.call((c) => c.getEndpointMetrics(props.id)), POLL_MS, [props.id]);
  const events = useRef<{ list: WireEvent[]; next: number }>({ list: [], next: 0 });
  const timeline = usePoll(
    async () => {
      for (;;) {
        const page = await api.call((c) =>
          c.getEndpointLog(props.id, { after: events.current.next, limit: 1000 }),
        );
        events.current = { list: [...events.current.list, ...page.events], next: page.next };
        if (page.events.length < 1000) return events.current.list;
      }
    },
    POLL_MS,
    [props.id],
  );

  const act = async (what: 'stop' | 'start' | 'delete') => {
    setBusy(true);
    setActionError(undefined);
    try {
      await api.call((c) =>
        what === 'stop'
          ? c.stopEndpoint(props.id)
          : what === 'start'
            ? c.startEndpoint(props.id)
            : c.deleteEndpoint(props.id),
      );
      if (what === 'delete') {
        location.hash = href({ page: 'endpoints' });
        return;
      }
      await endpoint.refresh();
    } catch (error) {
      setActionError(describeError(error));
    } finally {
      setBusy(false);
    }
  };

  const e = endpoint.data;
  if (!e) {
    const missing = endpoint.error?.includes('ENDPOINT_NOT_FOUND');
    return (
      <main>
        <p>
          <a href={href({ page: 'endpoints' })}>Endpoints</a>
        </p>
        {endpoint.error ? (
          <Notice kind="error">{missing ? `No endpoint ${props.id}.` : endpoint.error}</Notice>
        ) : (
          <p>Loading...</p>
        )}
      </main>
    );
  }
  const title = e.name || e.appName;
  const counts = workerCounts(e);
  const calls = callLines(e);
  const resting = restingLine(e.workers);
  const stopped = e.state.state === 'stopped';
  const now = Date.now();
  return (
    <main>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href={href({ page: 'endpoints' })}>Endpoints</a> / {title}
      </nav>
      <div class="title-row">
        <h1>{title}</h1>
        <div class="buttons">
          <a class="button" href={href({ page: 'edit', id: e.id })}>
            Edit
          </a>
          {stopped ? (
            <button type="button" disabled={busy} onClick={() => act('start')}>
              Start
            </button>
          ) : (
            <button type="button" disabled={busy} onClick={() => act('stop')}>
              Stop
            </button>
          )}
          <button type="button" class="danger" disabled={busy} onClick={() => setConfirmDelete(true)}>
            Delete
          </button>
        </div>
      </div>
      {actionError ? <Notice kind="error">{actionError}</Notice> : null}
      {endpoint.error ? <Notice kind="error">Could not refresh: {endpoint.error}</Notice> : null}
      <ConfirmDialog
        open={confirmDelete}
        title={`Delete ${title}?`}
        confirmLabel={`Delete ${title}`}
        onCancel={() => setConfirmDelete(false)}
        onConfirm={() => {
          setConfirmDelete(false);
          void act('delete');
        }}
      >
        <p>
          Deleting <strong>{title}</strong> (<code>{e.id}</code>) removes its workers and its URL stops
          answering. This cannot be undone.
        </p>
      </ConfirmDialog>

      <dl class="facts">
        <dt>State</dt>
        <dd data-testid="endpoint-state">
          <StateBadge state={e.state} />
        </dd>
        <dt>Workers</dt>
        <dd>
          {counts.ready} ready, {counts.present} present
          {resting ? ` (${resting})` : ''}
          {typeof traffic.data?.desiredWorkers === 'number' ? `, ${traffic.data.desiredWorkers} desired` : ''}
          , at most {counts.max} (at least {e.workerConfig.minNum})
        </dd>
        <dt>GPUs per worker</dt>
        <dd>{gpuLine(e)}</dd>
        <dt>Type</dt>
        <dd data-testid="endpoint-type">{e.type}</dd>
        {calls.lines.map((line) => (
          <Fragment key={line.label}>
            <dt>{line.label}</dt>
            <dd class="url" data-testid={`call-${line.label.toLowerCase().replace(' ', '-')}`}>
              {line.method === undefined ? null : <span class="muted">{line.method} </span>}
              <code class="wrap">{line.url}</code>
              <span class="buttons">
                <CopyButton
                  text={line.url}
                  label={
                    line.label === 'URL'
                      ? `Copy the URL of ${title}`
                      : `Copy the ${line.label} URL of ${title}`
                  }
                />
                {line.withCurl ? (
                  <CopyButton text={calls.curl} label={`Copy a curl request to ${title}`}>
                    Copy curl
                  </CopyButton>
                ) : null}
              </span>
            </dd>
          </Fragment>
        ))}
      </dl>

      <Traffic data={traffic.data} />
      {/* Keyed by endpoint: the range picked on one endpoint's charts is not carried to the next one's. */}
      <HistoryCharts key={e.id} endpointId={e.id} idle={emptyChartsLine(e.workers, e.workerConfig.minNum)} />

      <section aria-labelledby="workers-title">
        <div class="title-row">
          <h2 id="workers-title">Workers</h2>
          <button
            type="button"
            class="small"
            aria-pressed={logWorker === ALL_WORKERS}
            onClick={() => setLogWorker(ALL_WORKERS)}
          >
            Follow every worker's log
          </button>
        </div>
        {e.workers.length === 0 ? (
          <p class="muted" data-testid="workers-empty">
            {capitalized(workersActivity(e.workers, e.workerConfig.minNum))}.
          </p>
        ) : (
          <table class="cards" aria-labelledby="workers-title">
            <thead>
              <tr>
                <th scope="col">Worker</th>
                <th scope="col">State</th>
                <th scope="col">GPUs</th>
                <th scope="col">Age</th>
                <th scope="col">In flight</th>
                <th scope="col">Log</th>
              </tr>
            </thead>
            <tbody>
              {e.workers.map((w) => {
                const m = workers.data?.get(w.id);
                return (
                  <tr key={w.id} data-worker={w.id}>
                    <td data-label="Worker">
                      <code>{w.id}</code>
                      {w.drain ? <span class="muted"> (drained)</span> : null}
                    </td>
                    <td data-label="State">
                      <StateBadge state={w.state} />
                    </td>
                    <td data-label="GPUs">{m ? (m.gpus.length === 0 ? 'none' : m.gpus.join(', ')) : '-'}</td>
                    <td data-label="Age">{m ? age(Date.parse(m.startedAt), now) : '-'}</td>
                    <td data-label="In flight">{m?.inFlight ?? '-'}</td>
                    <td data-label="Log">
                      <button
                        type="button"
                        class="small"
                        aria-pressed={logWorker === w.id}
                        aria-label={`Follow the log of worker ${w.id}`}
                        onClick={() => setLogWorker(w.id)}
                      >
                        Follow log
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>

      <JobsSection endpointId={e.id} />

      {logWorker === ALL_WORKERS ? <EndpointLogPanel endpointId={e.id} /> : null}
      {logWorker && logWorker !== ALL_WORKERS ? <LogPanel endpointId={e.id} workerId={logWorker} /> : null}

      <section aria-labelledby="events-title">
        <h2 id="events-title">Events</h2>
        {timeline.error ? <Notice kind="error">{timeline.error}</Notice> : null}
        <ol class="timeline">
          {[...(timeline.data ?? [])].reverse().map((event) => (
            <li key={event.id} data-type={event.type}>
              <time dateTime={event.at}>{new Date(event.at).toLocaleString()}</time>{' '}
              <span class={`event-type event-${event.type}`}>{event.type}</span> {event.message}
            </li>
          ))}
        </ol>
      </section>

      <Spec endpoint={e} />
    </main>
  );
}

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

function Traffic(props: { data: WireEndpointMetrics | undefined }) {
  const t = props.data;
  if (!t || t.requests === null) return null;
  const since = trafficWindowLine(t.window);
  return (
    <section aria-labelledby="traffic-title">
      <h2 id="traffic-title">Traffic {since ? <span class="muted">({since})</span> : null}</h2>
      <dl class="stats">
        <div>
          <dt>Requests</dt>
          <dd>{t.requests.total}</dd>
        </div>
        <div>
          <dt>Latency p50 / p99</dt>
          <dd>
            {ms(t.latencyMs?.p50)} / {ms(t.latencyMs?.p99)}
          </dd>
        </div>
        <div>
          <dt>Queue depth</dt>
          <dd>{t.queueDepth ?? '-'}</dd>
        </div>
        <div>
          <dt>In flight</dt>
          <dd>{t.inFlight ?? '-'}</dd>
        </div>
        <WakeStats traffic={t} />
      </dl>
    </section>
  );
}

/**
 * Cold starts, then thaws and restores where there were any (docs/workers.md, Idle tiers), each with its own mean:
 * a thaw's milliseconds are not a cold start's seconds.
 */
function WakeStats(props: { traffic: WireEndpointMetrics }) {
  const t = props.traffic;
  const tiers = [
    ['Cold starts', t.coldStarts],
    ['Thaws', t.thaws],
    ['Restores', t.restores],
  ] as const;
  return (
    <>
      {tiers
        .filter(([label, w]) => label === 'Cold starts' || (w?.count ?? 0) > 0)
        .map(([label, w]) => (
          <div key={label} data-wake={label}>
            <dt>{label}</dt>
            <dd>
              {w?.count ?? 0}
              {w?.meanMs ? `, mean ${ms(w.meanMs)}` : ''}
            </dd>
          </div>
        ))}
    </>
  );
}

/** The spec as the API holds it, without what the API computes (state, workers, links). */
function Spec(props: { endpoint: WireEndpoint }) {
  const { id, state, workers, url, log, metrics, ...spec } = props.endpoint;
  return (
    <section aria-labelledby="spec-title">
      <h2 id="spec-title">Spec</h2>
      <pre class="spec">{JSON.stringify(spec, null, 2)}</pre>
    </section>
  );
}
