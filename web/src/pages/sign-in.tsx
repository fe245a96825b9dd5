/** The sign-in page: asks for an API key, checks it with one API call, and says why a key was refused. */
import { useState } from 'preact/hooks';
import { Notice } from '../widgets.js';

export function SignIn(props: {
  reason: string | undefined;
  onSignIn: (key: string) => Promise<string | undefined>;
}) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [reason, setReason] = useState(props.reason);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setReason(await props.onSignIn(key.trim()));
    setBusy(false);
  };
  return (
    <main class="sign-in">
      <h1>Corral</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="current-password"
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby="api-key-help"
        />
        <p id="api-key-help" class="help">
          The key <code>corral serve</code> printed at its first start, or one from{' '}
          <code>corral keys create</code>. It is kept for this tab only.
        </p>
        {reason ? <Notice kind="error">{reason}</Notice> : null}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in...' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
