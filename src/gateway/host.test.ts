import { describe, expect, it } from 'vitest';
import { appNameFromHost } from './host.js';

describe('appNameFromHost', () => {
  it.each([
    ['my-app.localhost:8000', 'localhost', 'my-app'],
    ['my-app.localhost', 'localhost', 'my-app'],
    ['My-App.LocalHost:80', 'localhost', 'my-app'],
    ['x.run.example.com', 'run.example.com', 'x'],
    ['localhost:8000', 'localhost', undefined],
    ['a.b.localhost', 'localhost', undefined],
    ['other.example.com', 'localhost', undefined],
    [undefined, 'localhost', undefined],
  ])('%s under %s -> %s', (host, domain, appName) => {
    expect(appNameFromHost(host, domain)).toBe(appName);
  });
});
