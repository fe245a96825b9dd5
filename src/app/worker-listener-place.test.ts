/** Where serve binds the worker-facing listener: the Docker runtime's said address, else the configured one. */
import { describe, expect, it } from 'vitest';
import { placeWorkerListener } from './worker-listener-place.js';

describe('placeWorkerListener', () => {
  it('keeps the configured address and port for the local runtime', async () => {
    const place = await placeWorkerListener({
      listen: { host: '127.0.0.1', port: 0 },
      runtimeChoice: 'local',
    });
    expect(place.port).toBe(0);
    expect(await place.address('local')).toEqual({ host: '127.0.0.1', port: 0 });
  });

  it('fixes a free port before a Docker runtime starts, and binds on the address the runtime says', async () => {
    const place = await placeWorkerListener({
      listen: { host: '127.0.0.1', port: 0 },
      runtimeChoice: 'auto',
    });
    expect(place.port).toBeGreaterThan(0);
    const bound = place.address('docker');
    place.onAddress('172.30.0.1');
    expect(await bound).toEqual({ host: '172.30.0.1', port: place.port });
  });

  it('keeps a configured port on Docker', async () => {
    const place = await placeWorkerListener({
      listen: { host: '127.0.0.1', port: 8082 },
      runtimeChoice: 'docker',
    });
    expect(place.port).toBe(8082);
    place.onAddress('172.30.0.1');
    expect(await place.address('docker')).toEqual({ host: '172.30.0.1', port: 8082 });
  });
});
