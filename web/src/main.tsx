/**
 * The dashboard's entry: signs in (the key is kept in the tab's sessionStorage and checked with one call), then
 * shows the page the location hash names, under the budget banner (from 80 % of the owner's budget). Every API
 * call goes through the typed client of src/client.
 */
import './app.css';
import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { CorralApiError, CorralClient } from '../../src/client/index.js';
import { ApiContext, describeError, makeApi } from './api-context.js';
import { ApiKeysPage } from './pages/api-keys.js';
import { BudgetBanner } from './pages/budget-banner.js';
import { CredentialsPage } from './pages/credentials.js';
import { EditPage } from './pages/edit.js';
import { EndpointPage } from './pages/endpoint.js';
import { EndpointsPage } from './pages/endpoints.js';
import { GpusPage } from './pages/gpus.js';
import { ModelsPage } from './pages/models.js';
import { SignIn } from './pages/sign-in.js';
import { UsagePage } from './pages/usage.js';
import { href, parseRoute } from './route.js';
import { apiBaseUrl, forgetKey, savedKey, saveKey } from './session.js';

const baseUrl = apiBaseUrl(location.href);

function App() {
  const [key, setKey] = useState<string | undefined>(() => savedKey(sessionStorage));
  const [reason, setReason] = useState<string | undefined>(undefined);
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  const signOut = (why: string | undefined) => {
    forgetKey(sessionStorage);
    setReason(why);
    setKey(undefined);
  };
  const api = useMemo(
    () =>
      key === undefined
        ? null
        : makeApi(new CorralClient({ baseUrl, apiKey: key, timeoutMs: 15_000 }), (why) =>
            signOut(`The server refused the key: ${why}`),
          ),
    [key],
  );
  useEffect(() => {
    const title: Record<typeof route.page, string> = {
      endpoints: 'Endpoints',
      credentials: 'Registry credentials',
      gpus: 'GPUs',
      keys: 'API keys',
      usage: 'Usage',
      models: 'Models',
      create: 'New endpoint',
      endpoint: 'Endpoint',
      edit: 'Edit endpoint',
    };
    document.title = key === undefined ? 'Sign in - Corral' : `${title[route.page]} - Corral`;
  }, [key, route]);

  if (api === null) {
    const signIn = async (candidate: string): Promise<string | undefined> => {
      const client = new CorralClient({ baseUrl, apiKey: candidate, timeoutMs: 15_000 });
      try {
        await client.listEndpoints({ pageSize: 1 });
      } catch (error) {
        return error instanceof CorralApiError && error.status === 401
          ? `The server refused the key: ${error.message}`
          : `Could not sign in: ${describeError(error)}`;
      }
      saveKey(sessionStorage, candidate);
      setReason(undefined);
      setKey(candidate);
      return undefined;
    };
    return <SignIn reason={reason} onSignIn={signIn} />;
  }
  return (
    <ApiContext.Provider value={api}>
      <header class="top">
        <a class="brand" href={href({ page: 'endpoints' })}>
          Corral
        </a>
        <nav aria-label="Main">
          <a
            href={href({ page: 'endpoints' })}
            aria-current={route.page === 'endpoints' ? 'page' : undefined}
          >
            Endpoints
          </a>
          <a
            href={href({ page: 'credentials' })}
            aria-current={route.page === 'credentials' ? 'page' : undefined}
          >
            Credentials
          </a>
          <a href={href({ page: 'gpus' })} aria-current={route.page === 'gpus' ? 'page' : undefined}>
            GPUs
          </a>
          <a href={href({ page: 'models' })} aria-current={route.page === 'models' ? 'page' : undefined}>
            Models
          </a>
          <a href={href({ page: 'usage' })} aria-current={route.page === 'usage' ? 'page' : undefined}>
            Usage
          </a>
          <a href={href({ page: 'keys' })} aria-current={route.page === 'keys' ? 'page' : undefined}>
            API keys
          </a>
        </nav>
        <button type="button" class="small secondary" onClick={() => signOut(undefined)}>
          Sign out
        </button>
      </header>
      <BudgetBanner />
      {route.page === 'endpoints' ? <EndpointsPage /> : null}
      {route.page === 'credentials' ? <CredentialsPage /> : null}
      {route.page === 'gpus' ? <GpusPage /> : null}
      {route.page === 'keys' ? <ApiKeysPage /> : null}
      {route.page === 'usage' ? <UsagePage /> : null}
      {route.page === 'models' ? <ModelsPage /> : null}
      {route.page === 'create' ? <EditPage /> : null}
      {route.page === 'endpoint' ? <EndpointPage key={route.id} id={route.id} /> : null}
      {route.page === 'edit' ? <EditPage key={route.id} id={route.id} /> : null}
    </ApiContext.Provider>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
