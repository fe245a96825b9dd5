/**
 * The API keys page (admin keys): the server's active keys (name, id, owner, admin, created, last used), a form that
 * creates one and shows its secret this once, and delete (revoke) after a confirmation naming it. A key that is no
 * admin key is told so by the API (403 ADMIN_REQUIRED) and the page says it.
 */
import { useState } from 'preact/hooks';
import type { WireApiKey, WireNewApiKey } from '../../../src/client/index.js';
import { CorralApiError } from '../../../src/client/index.js';
import { describeError, useApi } from '../api-context.js';
import { usePoll } from '../poll.js';
import { ConfirmDialog, CopyButton, Notice } from '../widgets.js';

type Field = 'name' | 'ownerId' | 'admin';

export function ApiKeysPage() {
  const api = useApi();
  const list = usePoll(() => api.call((c) => c.listApiKeys()), 5000, []);
  const [name, setName] = useState('');
  const [ownerId, setOwnerId] = useState('');
  const [admin, setAdmin] = useState(false);
  const [error, setError] = useState<{ field?: Field; message: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<WireNewApiKey | undefined>(undefined);
  const [deleting, setDeleting] = useState<WireApiKey | undefined>(undefined);
  const [deleteError, setDeleteError] = useState<string | undefined>(undefined);

  if (list.error?.includes('ADMIN_REQUIRED')) {
    return (
      <main>
        <h1>API keys</h1>
        <Notice kind="info">Only an admin key manages API keys; this key is not one.</Notice>
      </main>
    );
  }

  const create = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setCreated(undefined);
    try {
      const key = await api.call((c) =>
        c.createApiKey({ name, admin, ...(ownerId.trim() === '' ? {} : { ownerId: ownerId.trim() }) }),
      );
      setCreated(key);
      setName('');
      setOwnerId('');
      setAdmin(false);
      await list.refresh();
    } catch (failure) {
      const field = failure instanceof CorralApiError ? failure.field : undefined;
      const known = (['name', 'ownerId', 'admin'] as const).find((f) => f === field);
      setError({ ...(known ? { field: known } : {}), message: describeError(failure) });
    } finally {
      setBusy(false);
    }
  };
  const remove = async (key: WireApiKey) => {
    setDeleting(undefined);
    setDeleteError(undefined);
    try {
      await api.call((c) => c.deleteApiKey(key.id));
      if (created?.id === key.id) setCreated(undefined);
      await list.refresh();
    } catch (failure) {
      setDeleteError(describeError(failure));
    }
  };
  const active = list.data?.filter((k) => k.revokedAt === null) ?? [];
  const revoked = (list.data?.length ?? 0) - active.length;
  const fieldError = (field: Field) => (error?.field === field ? error.message : undefined);
  const labelOf = (key: WireApiKey) => key.name || key.id;

  return (
    <main>
      <h1>API keys</h1>
      <p class="muted">
        Keys that call this API (and the URLs of their owner's endpoints). A key acts as its owner; an admin
        key also manages keys and may act for any owner. A new key is shown once, when it is created.
      </p>
      {list.error ? <Notice kind="error">Could not refresh: {list.error}</Notice> : null}
      {deleteError ? <Notice kind="error">{deleteError}</Notice> : null}
      {created ? (
        <div class="notice notice-info new-key" role="status" data-testid="new-key">
          <p>
            The key <strong>{labelOf(created)}</strong> for owner <code>{created.ownerId}</code>. Copy it now:
            it is not shown again.
          </p>
          <p>
            <code class="wrap secret">{created.key}</code>{' '}
            <CopyButton text={created.key} label={`Copy the new key ${labelOf(created)}`} />
          </p>
        </div>
      ) : null}
      {list.data && active.length === 0 ? <p>No active keys.</p> : null}
      {active.length > 0 ? (
        <table class="cards" aria-label="API keys">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Id</th>
              <th scope="col">Owner</th>
              <th scope="col">Admin</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {active.map((key) => (
              <tr key={key.id} data-api-key={key.id}>
                <td data-label="Name">{key.name || <span class="muted">(no name)</span>}</td>
                <td data-label="Id">
                  <code>{key.id}</code>
                </td>
                <td data-label="Owner">{key.ownerId}</td>
                <td data-label="Admin">{key.admin ? 'admin' : 'no'}</td>
                <td data-label="Created">{new Date(key.createdAt).toLocaleString()}</td>
                <td data-label="Last used">
                  {key.lastUsedAt === null ? 'never' : new Date(key.lastUsedAt).toLocaleString()}
                </td>
                <td data-label="">
                  <button
                    type="button"
                    class="small"
                    aria-label={`Delete the API key ${labelOf(key)}`}
                    onClick={() => setDeleting(key)}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {revoked > 0 ? (
        <p class="muted">
          {revoked} revoked key{revoked === 1 ? '' : 's'} not shown (<code>corral keys list</code> lists
          them).
        </p>
      ) : null}
      <ConfirmDialog
        open={deleting !== undefined}
        title={`Delete ${deleting ? labelOf(deleting) : ''}?`}
        confirmLabel={`Delete ${deleting ? labelOf(deleting) : ''}`}
        onCancel={() => setDeleting(undefined)}
        onConfirm={() => deleting && void remove(deleting)}
      >
        <p>
          Requests with the key <code>{deleting?.id}</code> (owner <code>{deleting?.ownerId}</code>) are
          refused at once. This cannot be undone; if it is the key you signed in with, you are signed out.
        </p>
      </ConfirmDialog>

      <h2>Create a key</h2>
      <form onSubmit={create} class="narrow">
        {error && error.field === undefined ? <Notice kind="error">{error.message}</Notice> : null}
        <div class={`field${fieldError('name') ? ' invalid' : ''}`}>
          <label for="k-name">Key name</label>
          <input
            id="k-name"
            type="text"
            autocomplete="off"
            value={name}
            aria-invalid={fieldError('name') ? 'true' : undefined}
            aria-describedby={fieldError('name') ? 'k-name-error' : 'k-name-help'}
            onInput={(e) => setName(e.currentTarget.value)}
          />
          <p class="help" id="k-name-help">
            A label to recognise it by, e.g. "ci".
          </p>
          <FieldError field="name" message={fieldError('name')} />
        </div>
        <div class={`field${fieldError('ownerId') ? ' invalid' : ''}`}>
          <label for="k-owner">Owner</label>
          <input
            id="k-owner"
            type="text"
            autocomplete="off"
            placeholder="yours"
            value={ownerId}
            aria-invalid={fieldError('ownerId') ? 'true' : undefined}
            aria-describedby={fieldError('ownerId') ? 'k-ownerId-error' : 'k-owner-help'}
            onInput={(e) => setOwnerId(e.currentTarget.value)}
          />
          <p class="help" id="k-owner-help">
            Whose endpoints the key sees and creates; empty: your own.
          </p>
          <FieldError field="ownerId" message={fieldError('ownerId')} />
        </div>
        <div class="field checkbox">
          <input
            id="k-admin"
            type="checkbox"
            checked={admin}
            onChange={(e) => setAdmin(e.currentTarget.checked)}
          />
          <label for="k-admin">Admin key (manages keys, may act for any owner)</label>
          <FieldError field="admin" message={fieldError('admin')} />
        </div>
        <div class="actions start">
          <button type="submit" disabled={busy}>
            {busy ? 'Creating...' : 'Create key'}
          </button>
        </div>
      </form>
    </main>
  );
}

function FieldError(props: { field: Field; message: string | undefined }) {
  if (props.message === undefined) return null;
  return (
    <p class="field-error" id={`k-${props.field}-error`} data-field-error={props.field}>
      {props.message}
    </p>
  );
}
