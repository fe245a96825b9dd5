/**
 * The Docker engine's redirects are never followed. docker-modem follows a 3xx by itself (up to 5 times) with a new
 * request to the Location, resolved against a URL that has no host over the unix socket: the engine's 301 for a
 * path it cleans (`/images/a//b/json` -> `/images/a/b/json`) sent it to a host named by the path (`images`, or any
 * host:port a name chose), and that request's errors had no listener, so one bad name ended the process. With no
 * redirect followed, a 3xx is the error of the request that got it, which its caller handles.
 */
import { createRequire } from 'node:module';

/** docker-modem's redirect-following `http`/`https` (lib/http.js): how many redirects it follows. */
interface ModemHttp {
  maxRedirects: number;
}

const REFUSED = 'Max redirects exceeded';

/** Sets docker-modem's limit to 0 for the copy dockerode loads (process-wide; idempotent). */
export function refuseEngineRedirects(): void {
  const fromDockerode = createRequire(createRequire(import.meta.url).resolve('dockerode'));
  const http = fromDockerode('docker-modem/lib/http.js') as ModemHttp;
  http.maxRedirects = 0;
}

/** True for the error docker-modem gives a request the engine answered with a redirect. */
export function isRefusedRedirect(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.startsWith(REFUSED);
}

/** What the owner and the operator read for it. */
export const REFUSED_REDIRECT_REASON = 'the engine answered with a redirect, which Corral never follows';
