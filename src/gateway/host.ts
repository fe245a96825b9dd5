/**
 * The appName a request is for, from its Host header: `{appName}.{domain}` with any port. Undefined when the
 * host is not under the domain (or is the bare domain).
 */
export function appNameFromHost(host: string | undefined, domain: string): string | undefined {
  if (!host) return undefined;
  const name = host.replace(/:\d+$/, '').toLowerCase();
  const suffix = `.${domain}`;
  if (!name.endsWith(suffix)) return undefined;
  const appName = name.slice(0, -suffix.length);
  return appName === '' || appName.includes('.') ? undefined : appName;
}
