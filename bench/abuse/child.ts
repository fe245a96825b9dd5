/** The entry of the abuse suite's flooding child process (forked by suite.ts, never imported). */
import { flooderChild } from './flooder.js';

flooderChild().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
