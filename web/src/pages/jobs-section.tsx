/**
 * An endpoint's Jobs section (issue 22): the counts by status, the recent jobs (id, status, created, delay and
 * execution times, worker) refreshed by the page's poll, a filter by status, and the job opened from its row with its
 * input, output, error and unread stream chunks, and the cancel and retry its status allows (the API's refusal
 * shown). It reads the management API's `endpoint/jobs` and `endpoint/job`, for queue and http endpoints alike.
 */
import { useState } from 'preact/hooks';
import type { JobStatusName, WireClippedText, WireJobDetail } from '../../../src/client/index.js';
import { describeError, useApi } from '../api-context.js';
import {
  canCancel,
  canRetry,
  countsLine,
  duration,
  STATUS_ORDER,
  shownText,
  statusLabel,
} from '../jobs-view.js';
import { usePoll } from '../poll.js';
import { Notice } from '../widgets.js';

const POLL_MS = 2000;
const LIST_LIMIT = 50;

export function JobsSection(props: { endpointId: string }) {
  const api = useApi();
  const [filter, setFilter] = useState<JobStatusName | ''>('');
  const [open, setOpen] = useState<string | undefined>(undefined);
  const list = usePoll(
    () =>
      api.call((c) =>
        c.listEndpointJobs(props.endpointId, {
          limit: LIST_LIMIT,
          ...(filter === '' ? {} : { status: filter }),
        }),
      ),
    POLL_MS,
    [props.endpointId, filter],
  );
  const data = list.data;
  return (
    <section aria-labelledby="jobs-title" data-testid="jobs-section">
      <div class="title-row">
        <h2 id="jobs-title">Jobs</h2>
        <label class="inline">
          Status{' '}
          <select
            aria-label="Show jobs of status"
            value={filter}
            onChange={(event) =>
              setFilter((event.currentTarget as HTMLSelectElement).value as JobStatusName | '')
            }
          >
            <option value="">every status</option>
            {STATUS_ORDER.map((s) => (
              <option key={s} value={s}>
                {statusLabel(s)}
              </option>
            ))}
          </select>
        </label>
      </div>
      {list.error ? <Notice kind="error">Could not read the jobs: {list.error}</Notice> : null}
      {data ? (
        <dl class="stats" aria-label={`Jobs: ${countsLine(data.counts)}`}>
          {STATUS_ORDER.map((s) => (
            <div key={s} data-status={s}>
              <dt>{statusLabel(s)}</dt>
              <dd data-testid={`jobs-count-${s}`}>{data.counts[s] ?? 0}</dd>
            </div>
          ))}
        </dl>
      ) : (
        <p>Loading...</p>
      )}
      {data && data.jobs.length === 0 ? (
        <p class="muted">
          No jobs{filter === '' ? '' : ` ${statusLabel(filter)}`}. Submit one with{' '}
          <code>POST /v2/{props.endpointId}/run</code> on the gateway (docs/jobs.md).
        </p>
      ) : null}
      {data && data.jobs.length > 0 ? (
        <table class="cards" aria-labelledby="jobs-title">
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">Delay</th>
              <th scope="col">Execution</th>
              <th scope="col">Worker</th>
            </tr>
          </thead>
          <tbody>
            {data.jobs.map((job) => (
              <tr key={job.id} data-job={job.id} aria-selected={open === job.id}>
                <td data-label="Job">
                  <button
                    type="button"
                    class="link"
                    aria-label={`Open job ${job.id}`}
                    aria-expanded={open === job.id}
                    onClick={() => setOpen(open === job.id ? undefined : job.id)}
                  >
                    <code>{job.id}</code>
                  </button>
                </td>
                <td data-label="Status">
                  <JobBadge status={job.status} />
                </td>
                <td data-label="Created">
                  <time dateTime={job.createdAt}>{new Date(job.createdAt).toLocaleString()}</time>
                </td>
                <td data-label="Delay">{duration(job.delayTime)}</td>
                <td data-label="Execution">{duration(job.startedAt === null ? null : job.executionTime)}</td>
                <td data-label="Worker">{job.workerId ? <code>{job.workerId}</code> : '-'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {open ? (
        <JobPanel
          endpointId={props.endpointId}
          jobId={open}
          onClose={() => setOpen(undefined)}
          onChanged={list.refresh}
        />
      ) : null}
    </section>
  );
}

function JobBadge(props: { status: JobStatusName }) {
  return <span class={`badge badge-job badge-job-${props.status}`}>{statusLabel(props.status)}</span>;
}

/** One job: its facts, input, output, error and unread chunks, polled while open, with its actions. */
function JobPanel(props: {
  endpointId: string;
  jobId: string;
  onClose: () => void;
  onChanged: () => Promise<void>;
}) {
  const api = useApi();
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string | undefined>(undefined);
  const detail = usePoll(() => api.call((c) => c.getEndpointJob(props.endpointId, props.jobId)), POLL_MS, [
    props.endpointId,
    props.jobId,
  ]);
  const act = async (what: 'cancel' | 'retry') => {
    setBusy(true);
    setActionError(undefined);
    try {
      await api.call((c) =>
        what === 'cancel'
          ? c.cancelEndpointJob(props.endpointId, props.jobId)
          : c.retryEndpointJob(props.endpointId, props.jobId),
      );
      await Promise.all([detail.refresh(), props.onChanged()]);
    } catch (error) {
      setActionError(describeError(error));
    } finally {
      setBusy(false);
    }
  };
  const job = detail.data;
  return (
    <section class="job-panel" aria-labelledby="job-title" data-testid="job-panel">
      <div class="title-row">
        <h3 id="job-title">
          Job <code>{props.jobId}</code>
        </h3>
        <div class="buttons">
          {job && canCancel(job.status) ? (
            <button type="button" class="danger" disabled={busy} onClick={() => act('cancel')}>
              Cancel job
            </button>
          ) : null}
          {job && canRetry(job.status) ? (
            <button type="button" disabled={busy} onClick={() => act('retry')}>
              Retry job
            </button>
          ) : null}
          <button type="button" class="secondary" onClick={props.onClose}>
            Close
          </button>
        </div>
      </div>
      {actionError ? <Notice kind="error">{actionError}</Notice> : null}
      {detail.error ? <Notice kind="error">{detail.error}</Notice> : null}
      {job ? <JobFacts job={job} /> : detail.error ? null : <p>Loading...</p>}
    </section>
  );
}

function JobFacts(props: { job: WireJobDetail }) {
  const { job } = props;
  return (
    <>
      <dl class="facts">
        <dt>Status</dt>
        <dd data-testid="job-status">
          <JobBadge status={job.status} />
        </dd>
        <dt>Created</dt>
        <dd>{new Date(job.createdAt).toLocaleString()}</dd>
        <dt>Delay / execution</dt>
        <dd>
          {duration(job.delayTime)} / {duration(job.startedAt === null ? null : job.executionTime)}
        </dd>
        <dt>Worker</dt>
        <dd>
          {job.workerId ? <code>{job.workerId}</code> : '-'} (taken {job.attempts}{' '}
          {job.attempts === 1 ? 'time' : 'times'})
        </dd>
        <dt>Policy</dt>
        <dd>
          execution timeout {duration(job.policy.executionTimeout)}, ttl {duration(job.policy.ttl)}
          {job.policy.lowPriority ? ', low priority' : ''}
          {job.webhook ? (
            <>
              , webhook <code>{job.webhook}</code>
            </>
          ) : null}
        </dd>
      </dl>
      {job.error ? (
        <>
          <h4>Error</h4>
          <pre class="spec job-error" data-testid="job-error">
            {job.error}
          </pre>
        </>
      ) : null}
      <Clipped title="Input" testId="job-input" clipped={job.input} />
      {job.output ? (
        <Clipped title="Output" testId="job-output" clipped={job.output} />
      ) : (
        <p class="muted">No output yet.</p>
      )}
      {job.chunkCount > 0 ? (
        <>
          <h4>
            Stream <span class="muted">({job.chunkCount} chunks not yet read by a client)</span>
          </h4>
          <ol class="timeline" data-testid="job-chunks">
            {job.chunks.map((chunk, index) => (
              <li key={index}>
                <code>{shownText(chunk).text}</code>
              </li>
            ))}
          </ol>
        </>
      ) : null}
    </>
  );
}

function Clipped(props: { title: string; testId: string; clipped: WireClippedText }) {
  const shown = shownText(props.clipped);
  return (
    <>
      <h4>{props.title}</h4>
      {shown.note ? <Notice kind="info">{shown.note}</Notice> : null}
      <pre class="spec" data-testid={props.testId}>
        {shown.text}
      </pre>
    </>
  );
}
