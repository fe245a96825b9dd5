/**
 * The signed-in dashboard's API: the typed client of src/client and one way to call it, `call`, which sends the
 * user back to sign-in (with the server's reason) when the key is refused.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { CorralApiError, type CorralClient } from '../../src/client/index.js';

export interface Api {
  client: CorralClient;
  /** Runs one client call; a 401 signs out with its reason before the error is thrown on. */
  call<T>(operation: (client: CorralClient) => Promise<T>): Promise<T>;
}

export const ApiContext = createContext<Api | null>(null);

export function useApi(): Api {
  const api = useContext(ApiContext);
  if (api === null) throw new Error('useApi outside a signed-in dashboard');
  return api;
}

/** The Api over a client; `onRefused` gets the server's reason for a refused key. */
export function makeApi(client: CorralClient, onRefused: (reason: string) => void): Api {
  return {
    client,
    async call(operation) {
      try {
        return await operation(client);
      } catch (error) {
        if (error instanceof CorralApiError && error.status === 401) onRefused(error.message);
        throw error;
      }
    },
  };
}

/** An error as one line for people. */
export function describeError(error: unknown): string {
  if (error instanceof CorralApiError) return `${error.message} (${error.reason})`;
  return error instanceof Error ? error.message : String(error);
}
