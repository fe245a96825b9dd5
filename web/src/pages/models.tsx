/**
 * The Models page (issue 34): the models in this machine's cache, and each GPU node's on Kubernetes with node agents
 * (a Machine column then), that the key may see (`GET models`: name, revision, commit, files, sizes, last use, the
 * endpoints naming each, linked), a download in flight with its progress (read
 * every second while one runs, not at all otherwise), a Pull form (`POST models`, the token from one of the owner's
 * secrets) and Remove after a confirmation (`DELETE models/{org}/{name}?revision=`). The figures are models-view.ts's.
 */
import { useState } from 'preact/hooks';
import { CorralApiError } from '../../../src/client/index.js';
import { describeError, useApi } from '../api-context.js';
import {
  EMPTY_PULL_FORM,
  type ModelRow,
  modelRows,
  nextReadMs,
  type PullField,
  type PullForm,
  pullBody,
  pullErrorField,
  scopeLine,
  showsMachines,
} from '../models-view.js';
import { usePoll } from '../poll.js';
import { href } from '../route.js';
import { ConfirmDialog, Notice } from '../widgets.js';

export function ModelsPage() {
  const api = useApi();
  const list = usePoll(() => api.call((c) => c.listModels()), nextReadMs, []);
  const secrets = usePoll(() => api.call((c) => c.listSecrets()), 30_000, []);
  const [removing, setRemoving] = useState<ModelRow | undefined>(undefined);
  const [removeError, setRemoveError] = useState<string | undefined>(undefined);
  const data = list.data;
  const rows = data ? modelRows(data.models, Date.now()) : [];
  const perMachine = showsMachines(rows);

  const remove = async (row: ModelRow) => {
    setRemoving(undefined);
    setRemoveError(undefined);
    try {
      await api.call((c) => c.removeModel(row.name, { revision: row.revision }));
    } catch (failure) {
      setRemoveError(`Could not remove ${row.name} (${row.revision}): ${describeError(failure)}`);
    }
    await list.refresh();
  };

  return (
    <main>
      <div class="title-row">
        <h1>Models</h1>
        <button type="button" class="small" onClick={() => void list.refresh()}>
          Refresh
        </button>
      </div>
      <p class="muted">
        Hugging Face models in this machine's cache (and each GPU node's, on Kubernetes with node agents):
        fetched once per machine, before a worker is given a GPU, and mounted read-only into every worker that
        names them. {data ? scopeLine(data.scope) : ''}
      </p>
      {list.error ? <Notice kind="error">Could not read the models: {list.error}</Notice> : null}
      {removeError ? <Notice kind="error">{removeError}</Notice> : null}
      {!data && !list.error ? <p class="muted">Loading...</p> : null}
      {data && rows.length === 0 ? <EmptyState /> : null}
      {rows.length > 0 ? (
        <table class="cards" aria-label="Cached models" data-testid="models-table">
          <thead>
            <tr>
              {perMachine ? <th scope="col">Machine</th> : null}
              <th scope="col">Model</th>
              <th scope="col">Commit</th>
              <th scope="col" class="number">
                Files
              </th>
              <th scope="col" class="number">
                Size
              </th>
              <th scope="col" class="number">
                On disk
              </th>
              <th scope="col">Last use</th>
              <th scope="col">Endpoints</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.key} data-model={row.name} data-revision={row.revision}>
                {perMachine ? (
                  <td data-label="Machine" data-testid="model-machine">
                    {row.machine ?? <span class="muted">this server</span>}
                  </td>
                ) : null}
                <td data-label="Model">
                  <span>
                    <strong class="wrap">{row.name}</strong> <span class="muted">{row.revision}</span>
                  </span>
                </td>
                <td data-label="Commit">
                  <code>{row.commitShort}</code>
                </td>
                <td data-label="Files" class="number">
                  {row.files}
                </td>
                <td data-label="Size" class="number nowrap">
                  {row.download ? <Progress row={row} /> : row.size}
                </td>
                <td data-label="On disk" class="number nowrap">
                  {row.disk}
                </td>
                <td data-label="Last use" class="nowrap">
                  {row.lastUse}
                </td>
                <td data-label="Endpoints" data-testid="model-endpoints">
                  {row.endpoints.length === 0 ? (
                    <span class="muted">none</span>
                  ) : (
                    <span>
                      {row.endpoints.map((e, i) => (
                        <span key={e.endpointId}>
                          {i > 0 ? ', ' : ''}
                          <a href={href({ page: 'endpoint', id: e.endpointId })}>
                            {e.endpointName || e.endpointId}
                          </a>
                        </span>
                      ))}
                    </span>
                  )}
                </td>
                <td data-label="">
                  <button
                    type="button"
                    class="small"
                    aria-label={`Remove ${row.name} (${row.revision}) from the cache`}
                    onClick={() => setRemoving(row)}
                  >
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <ConfirmDialog
        open={removing !== undefined}
        title={`Remove ${removing?.name ?? ''} (${removing?.revision ?? ''})?`}
        confirmLabel={`Remove ${removing?.name ?? ''}`}
        onCancel={() => setRemoving(undefined)}
        onConfirm={() => removing && void remove(removing)}
      >
        <p>
          Its files are deleted from this machine's cache; the next worker that names it downloads it again.
          The server refuses while an endpoint names it.
        </p>
      </ConfirmDialog>

      <PullSection
        secrets={secrets.data?.map((s) => s.name) ?? []}
        onPulled={async () => {
          await list.refresh();
        }}
      />
    </main>
  );
}

/** A download in flight: a bar, the bytes, the rate and the time left. */
function Progress(props: { row: ModelRow }) {
  const d = props.row.download;
  if (!d) return null;
  return (
    <span class="download" data-testid="model-download">
      <progress max={100} value={d.percent} aria-label={`Download of ${props.row.name}`}>
        {d.percent} %
      </progress>
      <span>
        {d.bytes}, {d.rate}
        {d.left ? `, ${d.left}` : ''}
      </span>
    </span>
  );
}

function EmptyState() {
  return (
    <div data-testid="models-empty">
      <p>No model in this machine's cache that this key may see.</p>
      <p class="muted">
        Name one on an endpoint (its spec's <code>models</code>, e.g.{' '}
        <code>{'"models": [{"name": "org/name", "revision": "main"}]'}</code>) and its first worker fetches it
        before it is given a GPU, or pull one below. How to name a model, and what is shared between owners:{' '}
        <code>docs/models.md#naming-a-model</code> in Corral's documentation (<cite>Naming a model</cite>).
      </p>
    </div>
  );
}

const PULL_FIELDS: { field: PullField; label: string; hint: string }[] = [
  { field: 'name', label: 'Model', hint: 'org/name, as on the hub' },
  { field: 'revision', label: 'Revision', hint: 'a branch, tag, commit or refs/pr/N' },
  {
    field: 'allowPatterns',
    label: 'Allow patterns',
    hint: 'globs, e.g. *.safetensors *.json; empty: every file',
  },
];

function PullSection(props: { secrets: string[]; onPulled: () => Promise<void> }) {
  const api = useApi();
  const [form, setForm] = useState<PullForm>(EMPTY_PULL_FORM);
  const [error, setError] = useState<{ field?: PullField; message: string } | undefined>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const pull = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setDone(undefined);
    try {
      const model = await api.call((c) => c.pullModel(pullBody(form)));
      setDone(
        model.download === null
          ? `${model.name} (${model.revision}) is cached.`
          : `${model.name} (${model.revision}) is downloading.`,
      );
      setForm(EMPTY_PULL_FORM);
      await props.onPulled();
    } catch (failure) {
      const field =
        failure instanceof CorralApiError
          ? pullErrorField({ reason: failure.reason, field: failure.field })
          : undefined;
      setError({ ...(field ? { field } : {}), message: describeError(failure) });
    } finally {
      setBusy(false);
    }
  };
  const fieldError = (field: PullField) => (error?.field === field ? error.message : undefined);
  const describedBy = (field: PullField) =>
    [`m-${field}-hint`, fieldError(field) ? `m-${field}-error` : ''].filter((id) => id !== '').join(' ');
  const tokenError = fieldError('tokenSecret');
  return (
    <section aria-labelledby="pull-title">
      <h2 id="pull-title">Pull a model</h2>
      <form onSubmit={pull} class="narrow" data-testid="pull-form">
        {error && error.field === undefined ? <Notice kind="error">{error.message}</Notice> : null}
        {done ? <Notice kind="info">{done}</Notice> : null}
        {PULL_FIELDS.map(({ field, label, hint }) => {
          const message = fieldError(field);
          return (
            <div class={`field${message ? ' invalid' : ''}`} key={field}>
              <label for={`m-${field}`}>{label}</label>
              <input
                id={`m-${field}`}
                type="text"
                autocomplete="off"
                value={form[field]}
                aria-invalid={message ? 'true' : undefined}
                aria-describedby={describedBy(field)}
                onInput={(e) => setForm({ ...form, [field]: e.currentTarget.value })}
              />
              <p class="help" id={`m-${field}-hint`}>
                {hint}
              </p>
              {message ? (
                <p class="field-error" id={`m-${field}-error`} data-field-error={field}>
                  {message}
                </p>
              ) : null}
            </div>
          );
        })}
        <div class={`field${tokenError ? ' invalid' : ''}`}>
          <label for="m-tokenSecret">Token secret</label>
          <select
            id="m-tokenSecret"
            value={form.tokenSecret}
            aria-invalid={tokenError ? 'true' : undefined}
            aria-describedby={describedBy('tokenSecret')}
            onChange={(e) => setForm({ ...form, tokenSecret: e.currentTarget.value })}
          >
            <option value="">none (a public model)</option>
            {props.secrets.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
          <p class="help" id="m-tokenSecret-hint">
            one of your secrets holding a hub token, for gated and private models
          </p>
          {tokenError ? (
            <p class="field-error" id="m-tokenSecret-error" data-field-error="tokenSecret">
              {tokenError}
            </p>
          ) : null}
        </div>
        <div class="actions start">
          <button type="submit" disabled={busy || form.name.trim() === ''}>
            {busy ? 'Pulling...' : 'Pull'}
          </button>
        </div>
      </form>
    </section>
  );
}
