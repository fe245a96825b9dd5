/**
 * `npm run bench` runs every suite; `npm run bench -- api` runs one (several names run those, in order).
 * Each suite prints its figures with the command and the machine; nothing is written to the repository.
 */
import { machineDescription } from './support.js';

type Suite = () => Promise<void>;

/** One entry per suite; `npm run bench` runs them in this order. */
const SUITES: Record<string, Suite> = {
  api: async () => (await import('./api.js')).runApiBench(),
  gateway: async () => (await import('./gateway/suite.js')).runGatewayBench(),
  controller: async () => (await import('./controller/suite.js')).runControllerBench(),
  'controller-kubernetes': async () => (await import('./controller/suite.js')).runControllerKubernetesBench(),
  memory: async () => (await import('./memory.js')).runMemoryBench(),
  abuse: async () => (await import('./abuse/suite.js')).runAbuseBench(),
  replicas: async () => (await import('./replicas.js')).runReplicasBench(),
  'cluster-history': async () => (await import('./cluster-history.js')).runClusterHistoryBench(),
  wake: async () => (await import('./wake/suite.js')).runWakeBench(),
  'node-agent-thaw': async () => (await import('./wake/node-agent-thaw.js')).benchNodeAgentThaw(),
  jobs: async () => (await import('./jobs/suite.js')).runJobsBench(),
  'model-download': async () => (await import('./model-download.js')).runModelDownloadBench(),
  'model-start': async () => (await import('./model-start.js')).runModelStartBench(),
  'usage-ledger': async () => (await import('./usage-ledger.js')).runUsageLedgerBench(),
  'sqlite-thread': async () => (await import('./sqlite-thread.js')).runSqliteThreadBench(),
  'tenant-isolation': async () => (await import('./tenant-isolation/suite.js')).runTenantIsolationBench(),
};

async function main(): Promise<void> {
  const asked = process.argv.slice(2).filter((a) => a !== '--');
  const unknown = asked.filter((name) => !Object.hasOwn(SUITES, name));
  if (unknown.length > 0) {
    console.error(
      `unknown benchmark suite(s): ${unknown.join(', ')}; available: ${Object.keys(SUITES).join(', ')}`,
    );
    process.exitCode = 2;
    return;
  }
  const names = asked.length > 0 ? asked : Object.keys(SUITES);
  console.log(`corral benchmarks: ${names.join(', ')}`);
  console.log(`machine: ${machineDescription()}`);
  for (const name of names) {
    const suite = SUITES[name];
    if (suite) await suite();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
