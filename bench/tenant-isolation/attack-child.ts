/**
 * The entry of tenant A's process (forked by attack-process.ts, never imported): runs the attack it is sent
 * (tenant-a.ts), stops it when told to (the bound passed), answers its report and exits.
 */
import { setMaxListeners } from 'node:events';
import { type AttackTarget, attack } from './tenant-a.js';

const stop = new AbortController();
// Every request of the attack listens to this one signal (node:http adds a listener per request).
setMaxListeners(0, stop.signal);
process.on('message', (message: unknown) => {
  if (message === 'stop') {
    stop.abort();
    return;
  }
  attack(message as AttackTarget, stop.signal)
    .then((report) => process.send?.({ report }, () => process.exit(0)))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
});
