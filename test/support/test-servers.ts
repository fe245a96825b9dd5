/**
 * A unit test file's servers on 127.0.0.1 (port 0) and what is undone after each of its tests: the servers it
 * started with `listen`, closed with their connections, and whatever else the test hands to the same cleanups.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

export type Cleanup = () => Promise<void> | void;

export interface TestServers {
  /** Run after each test, the last added first. */
  cleanups: Cleanup[];
  /** Starts `server` on 127.0.0.1, closed after the test; its port. */
  listen(server: Server): Promise<number>;
}

/** Call once at a test file's top level: it registers the file's `afterEach`. */
export function testServers(): TestServers {
  const cleanups: Cleanup[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return {
    cleanups,
    async listen(server) {
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      cleanups.push(() => {
        server.closeAllConnections();
        server.close();
      });
      return (server.address() as AddressInfo).port;
    },
  };
}

/** Closes a server an `afterAll` may find never made (its `beforeAll` failed first): resolves at once then. */
export async function closeServer(server: Pick<Server, 'close'> | undefined): Promise<void> {
  if (!server) return;
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
