import { describe, expect, it } from 'vitest';
import {
  addressProblem,
  checkWebhookTarget,
  type LookupAll,
  resolveWebhookTarget,
  webhookUrlProblem,
} from './target-guard.js';

const strict = { allowPrivate: false };
const open = { allowPrivate: true };

describe('the webhook target guard', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.255', 'shared (CGNAT)'],
    ['224.0.0.1', 'multicast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a9fe:a9fe', 'link-local'],
  ])('refuses %s as %s', (address, kind) => {
    expect(addressProblem(address, strict)).toBe(
      `${address} is a ${kind} address; this server does not post webhooks to such addresses`,
    );
    expect(addressProblem(address, open)).toBeUndefined();
  });

  it.each([
    '1.1.1.1',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '192.169.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
  ])('allows the public address %s', (address) => {
    expect(addressProblem(address, strict)).toBeUndefined();
  });

  it.each([
    ['ftp://example.com/x', 'webhook URL must be http or https, not ftp'],
    ['file:///etc/passwd', 'webhook URL must be http or https, not file'],
    ['not a url', 'webhook is not an absolute URL'],
    ['http://user:pw@example.com/', 'webhook URL must not hold a user name or password'],
    ['http://localhost:8080/hook', 'localhost is a loopback name'],
    ['http://api.localhost/hook', 'api.localhost is a loopback name'],
    ['http://127.0.0.1/hook', '127.0.0.1 is a loopback address'],
    ['http://[::ffff:127.0.0.1]/hook', '::ffff:7f00:1 is a loopback address'],
    ['http://[fd00::1]:9/hook', 'fd00::1 is a unique-local address'],
    [`https://example.com/${'a'.repeat(2048)}`, 'longer than 2048 characters'],
  ])('refuses the URL %s', (url, reason) => {
    expect(webhookUrlProblem(url, strict)).toContain(reason);
  });

  it('allows public http and https URLs, and private ones when the operator allows them', () => {
    expect(webhookUrlProblem('https://hooks.example.com/corral?x=1', strict)).toBeUndefined();
    expect(webhookUrlProblem('http://8.8.8.8:8080/', strict)).toBeUndefined();
    expect(webhookUrlProblem('http://127.0.0.1:9/hook', open)).toBeUndefined();
    expect(webhookUrlProblem('http://localhost:9/hook', open)).toBeUndefined();
    expect(webhookUrlProblem('ftp://127.0.0.1/', open)).toContain('http or https');
  });

  it('refuses a name that resolves to a private address, even among public ones', async () => {
    const lookup: LookupAll = async (host) =>
      host === 'mixed.example'
        ? [
            { address: '93.184.216.34', family: 4 },
            { address: '::ffff:192.168.0.5', family: 6 },
          ]
        : [{ address: '93.184.216.34', family: 4 }];
    expect(await checkWebhookTarget('https://mixed.example/h', strict, lookup)).toBe(
      'webhook host mixed.example resolves to ::ffff:192.168.0.5 is a private address; this server does not post webhooks to such addresses',
    );
    expect(await checkWebhookTarget('https://public.example/h', strict, lookup)).toBeUndefined();
    const resolved = await resolveWebhookTarget('https://public.example/h', strict, lookup);
    expect(resolved).toMatchObject({ ok: true, address: { address: '93.184.216.34', family: 4 } });
  });

  it('says when a host cannot be resolved', async () => {
    const failing: LookupAll = async () => {
      throw new Error('ENOTFOUND');
    };
    expect(await checkWebhookTarget('https://nowhere.example/', strict, failing)).toBe(
      'webhook host nowhere.example could not be resolved',
    );
  });

  it('catches localhost written with a trailing dot by name, before any look-up', async () => {
    const never: LookupAll = async () => {
      throw new Error('no look-up expected');
    };
    expect(await checkWebhookTarget('http://localhost./', strict, never)).toContain(
      'localhost is a loopback name',
    );
  });
});
