/**
 * The Registry credentials page: your saved registry logins (for private images, chosen by name in the endpoint
 * form), a form that adds one (the password is sent once and never shown again), and delete after a confirmation.
 */
import { useState } from 'preact/hooks';
import type { WireCredential } from '../../../src/client/index.js';
import { CorralApiError } from '../../../src/client/index.js';
import { describeError, useApi } from '../api-context.js';
import { usePoll } from '../poll.js';
import { ConfirmDialog, Notice } from '../widgets.js';

type Field = 'name' | 'username' | 'password';
const FIELDS: { field: Field; label: string; type: string; autocomplete: string }[] = [
  { field: 'name', label: 'Name', type: 'text', autocomplete: 'off' },
  { field: 'username', label: 'Username', type: 'text', autocomplete: 'off' },
  { field: 'password', label: 'Password or token', type: 'password', autocomplete: 'new-password' },
];

export function CredentialsPage() {
  const api = useApi();
  const list = usePoll(() => api.call((c) => c.listCredentials()), 5000, []);
  const [values, setValues] = useState<Record<Field, string>>({ name: '', username: '', password: '' });
  const [errors, setErrors] = useState<{ field?: Field; message: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [deleting, setDeleting] = useState<WireCredential | undefined>(undefined);
  const [deleteError, setDeleteError] = useState<string | undefined>(undefined);

  const save = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setErrors(undefined);
    try {
      await api.call((c) => c.saveCredential(values));
      setValues({ name: '', username: '', password: '' });
      await list.refresh();
    } catch (error) {
      const field = error instanceof CorralApiError ? error.field : undefined;
      const known = FIELDS.find((f) => f.field === field)?.field;
      setErrors({ ...(known ? { field: known } : {}), message: describeError(error) });
    } finally {
      setBusy(false);
    }
  };
  const remove = async (credential: WireCredential) => {
    setDeleting(undefined);
    setDeleteError(undefined);
    try {
      await api.call((c) => c.deleteCredential(credential.id));
      await list.refresh();
    } catch (error) {
      setDeleteError(describeError(error));
    }
  };

  return (
    <main>
      <h1>Registry credentials</h1>
      <p class="muted">
        Logins for private registries. An endpoint names one in its image settings; the password is encrypted
        at rest and never shown again.
      </p>
      {list.error ? <Notice kind="error">Could not refresh: {list.error}</Notice> : null}
      {deleteError ? <Notice kind="error">{deleteError}</Notice> : null}
      {list.data && list.data.length === 0 ? <p>No credentials saved.</p> : null}
      {list.data && list.data.length > 0 ? (
        <table class="cards" aria-label="Registry credentials">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Username</th>
              <th scope="col">Id</th>
              <th scope="col">Saved</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((credential) => (
              <tr key={credential.id} data-credential={credential.name}>
                <td data-label="Name">{credential.name}</td>
                <td data-label="Username">{credential.username}</td>
                <td data-label="Id">
                  <code>{credential.id}</code>
                </td>
                <td data-label="Saved">{new Date(credential.createdAt).toLocaleString()}</td>
                <td data-label="">
                  <button
                    type="button"
                    class="small"
                    aria-label={`Delete the credentials ${credential.name}`}
                    onClick={() => setDeleting(credential)}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <ConfirmDialog
        open={deleting !== undefined}
        title={`Delete ${deleting?.name ?? ''}?`}
        confirmLabel={`Delete ${deleting?.name ?? ''}`}
        onCancel={() => setDeleting(undefined)}
        onConfirm={() => deleting && void remove(deleting)}
      >
        <p>Endpoints that pull with them must be changed first: the server refuses while any does.</p>
      </ConfirmDialog>

      <h2>Add credentials</h2>
      <form onSubmit={save} class="narrow">
        {errors && errors.field === undefined ? <Notice kind="error">{errors.message}</Notice> : null}
        {FIELDS.map(({ field, label, type, autocomplete }) => {
          const error = errors?.field === field ? errors.message : undefined;
          return (
            <div class={`field${error ? ' invalid' : ''}`} key={field}>
              <label for={`c-${field}`}>{label}</label>
              <input
                id={`c-${field}`}
                type={type}
                autocomplete={autocomplete}
                value={values[field]}
                aria-invalid={error ? 'true' : undefined}
                aria-describedby={error ? `c-${field}-error` : undefined}
                onInput={(e) => setValues({ ...values, [field]: e.currentTarget.value })}
              />
              {error ? (
                <p class="field-error" id={`c-${field}-error`} data-field-error={field}>
                  {error}
                </p>
              ) : null}
            </div>
          );
        })}
        <div class="actions start">
          <button type="submit" disabled={busy}>
            {busy ? 'Saving...' : 'Save credentials'}
          </button>
        </div>
      </form>
    </main>
  );
}
