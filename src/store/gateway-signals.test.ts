/** The gateway signal rows' read, on every store: a database that cannot answer fails the read, and only it. */
import { describe, expect, it } from 'vitest';
import { storeTargets } from '../../test/support/stores.js';

describe.each(storeTargets())('gateway signals on $name', (target) => {
  it('a closed database fails the read with one rejection, none left unhandled to end the process', async () => {
    const { store, dispose } = await target.open();
    await dispose();
    // Both of its queries fail here; before they were awaited together the clock's rejection was unhandled
    // (vitest fails the run on one), which ended every replica when PostgreSQL stopped.
    await expect(store.gatewaySignals.read(['rep-a', 'rep-b'])).rejects.toThrow();
    await new Promise((resolve) => setImmediate(resolve));
  });
});
