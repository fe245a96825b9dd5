/**
 * The entry of the throughput figure's workers process (forked by protocol-workers.ts `driveInChild`, never
 * imported): runs the protocol workers it is sent, answers their figures, and exits.
 */
import { type DriveSettings, drive, type WorkerUrls } from './protocol-workers.js';

process.once('message', (message) => {
  const { urls, settings } = message as { urls: WorkerUrls[]; settings: DriveSettings };
  drive(urls, settings)
    .then((figures) => process.send?.(figures, () => process.exit(0)))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
});
