/** Where an upgrade is tunnelled for another replica: the host and port of its gateway URL. */
import { describe, expect, it } from 'vitest';
import { peerAddress } from './peer-upgrade.js';

describe('peerAddress', () => {
  it('reads host and port from a gateway URL, port 80 by default', () => {
    expect(peerAddress('http://10.0.0.7:8000')).toEqual({ host: '10.0.0.7', port: 8000 });
    expect(peerAddress('http://corral-1.corral.svc')).toEqual({ host: 'corral-1.corral.svc', port: 80 });
    expect(peerAddress('http://[fd00::7]:8000/')).toEqual({ host: 'fd00::7', port: 8000 });
  });

  it('has none for a URL a plain TCP tunnel cannot use', () => {
    expect(peerAddress('https://10.0.0.7:8443')).toBeUndefined();
    expect(peerAddress('not a url')).toBeUndefined();
  });
});
