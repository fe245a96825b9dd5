/**
 * Where the dashboard's API key lives (the tab's sessionStorage: gone when the tab closes) and which API it talks
 * to (the server that served the page, under the same path prefix).
 */

const STORAGE_KEY = 'corral.apiKey';

/** The API's base URL for a page at `href`: its origin and whatever path stands before `/ui/`. */
export function apiBaseUrl(href: string): string {
  const url = new URL(href);
  const at = url.pathname.lastIndexOf('/ui/');
  const prefix = at >= 0 ? url.pathname.slice(0, at) : '';
  return `${url.origin}${prefix}`;
}

export interface KeyStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export function savedKey(storage: KeyStore): string | undefined {
  const key = storage.getItem(STORAGE_KEY);
  return key === null || key === '' ? undefined : key;
}

export function saveKey(storage: KeyStore, key: string): void {
  storage.setItem(STORAGE_KEY, key);
}

export function forgetKey(storage: KeyStore): void {
  storage.removeItem(STORAGE_KEY);
}
