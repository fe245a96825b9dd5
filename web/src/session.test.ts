import { describe, expect, it } from 'vitest';
import { apiBaseUrl, forgetKey, type KeyStore, savedKey, saveKey } from './session.js';

class MemoryStore implements KeyStore {
  readonly items = new Map<string, string>();
  getItem(key: string) {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string) {
    this.items.set(key, value);
  }
  removeItem(key: string) {
    this.items.delete(key);
  }
}

describe('the dashboard session', () => {
  it.each([
    ['http://127.0.0.1:8080/ui/', 'http://127.0.0.1:8080'],
    ['http://127.0.0.1:8080/ui/#/endpoints/x', 'http://127.0.0.1:8080'],
    ['https://corral.example.com/proxy/corral/ui/', 'https://corral.example.com/proxy/corral'],
    ['http://127.0.0.1:8080/', 'http://127.0.0.1:8080'],
  ])('the API of a page at %s is %s', (page, api) => {
    expect(apiBaseUrl(page)).toBe(api);
  });

  it('keeps, gives back and forgets the key', () => {
    const store = new MemoryStore();
    expect(savedKey(store)).toBeUndefined();
    saveKey(store, 'sk_x');
    expect(savedKey(store)).toBe('sk_x');
    forgetKey(store);
    expect(savedKey(store)).toBeUndefined();
  });
});
