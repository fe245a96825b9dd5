/**
 * Why a pull failed, in fixed words. The engine's own error repeats what the registry answered (`error parsing HTTP
 * 418 response body: ...: "<the body>"`, `manifest unknown: <the registry's message>`), and a registry is whatever
 * host an image names: its words must not reach a worker's state, an event, a log line or an API answer. So the
 * engine's text only picks one of these reasons, with the HTTP status where it says one. Pure.
 */

const NOT_FOUND = 'the registry has no such image or tag';
const REFUSED = 'the registry refused the pull: no credentials, or credentials that cannot pull it';
const TOO_MANY = 'the registry refused the pull: too many requests (HTTP 429)';

/** The fixed reason for an HTTP status the registry answered. */
function byStatus(status: number): string {
  if (status === 401 || status === 403) return `${REFUSED} (HTTP ${status})`;
  if (status === 404) return `${NOT_FOUND} (HTTP 404)`;
  if (status === 429) return TOO_MANY;
  return `the registry answered HTTP ${status}`;
}

/** Tried in order: the first pattern that matches the engine's text names the reason. */
const REASONS: [RegExp, (match: RegExpExecArray) => string][] = [
  // The engine quotes a body it could not read: only the status is kept.
  [/error parsing HTTP (\d{3}) response body/, (m) => byStatus(Number(m[1]))],
  [/unexpected HTTP status: (\d{3})/, (m) => byStatus(Number(m[1]))],
  [/toomanyrequests/i, () => TOO_MANY],
  [
    /pull access denied/i,
    () => 'the registry refused the pull: no such repository, or it needs credentials that can pull it',
  ],
  [/manifest unknown|not found/i, () => NOT_FOUND],
  [/unauthorized|authentication required|denied|forbidden/i, () => REFUSED],
  [/no such host|server misbehaving|lookup /i, () => 'the registry host could not be resolved'],
  [
    /x509|certificate|tls|server gave HTTP response to HTTPS client/i,
    () => 'no TLS connection to the registry',
  ],
  [
    /connection refused|connection reset|i\/o timeout|timeout|dial tcp|EOF|network is unreachable/i,
    () => 'the registry could not be reached',
  ],
  [/invalid reference format/i, () => 'the engine reads the reference as invalid'],
  [/HTTP (\d{3})/, (m) => byStatus(Number(m[1]))],
];

export function pullFailureReason(engineText: string): string {
  for (const [pattern, reason] of REASONS) {
    const match = pattern.exec(engineText);
    if (match) return reason(match);
  }
  return "the engine could not pull it (its own words are not repeated: they may quote the registry's answer)";
}
