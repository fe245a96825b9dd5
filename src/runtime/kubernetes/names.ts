/**
 * Names and label values the Kubernetes API accepts, made from Corral's ids: object names are DNS-1123 subdomains
 * (or labels), label values at most 63 characters of [A-Za-z0-9_.-]. An id that already fits is kept as it is;
 * one that does not is folded and given a digest of the original, so that two ids never share a name. Pure.
 */
import { createHash } from 'node:crypto';

const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$/;
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** A qualified label key: an optional DNS subdomain prefix and `/`, then a name of up to 63 characters. */
const LABEL_KEY =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\/)?[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 10);
}

export function isLabelValue(value: string): boolean {
  return LABEL_VALUE.test(value);
}

export function isLabelKey(key: string): boolean {
  return LABEL_KEY.test(key) && (key.split('/')[0]?.length ?? 0) <= 253;
}

/** The value as a label value: itself when valid, else a folded form ending in a digest of the original. */
export function labelValue(value: string): string {
  if (isLabelValue(value)) return value;
  const folded = value
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 40)
    .replace(/[^A-Za-z0-9]+$/, '');
  return folded === '' ? `x-${digest(value)}` : `${folded}-${digest(value)}`;
}

/**
 * `prefix` + `id` as a DNS-1123 label (at most 63 lowercase letters, digits and `-`): Pod and Secret names taken
 * from it fit every place a name is used (a pod's hostname included).
 */
export function dnsName(prefix: string, id: string): string {
  const name = `${prefix}${id}`;
  if (DNS_LABEL.test(name)) return name;
  const folded = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 50)
    .replace(/-+$/, '');
  return folded === '' ? `x-${digest(name)}` : `${folded}-${digest(name)}`;
}
