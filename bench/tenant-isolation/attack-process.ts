/**
 * Tenant A's attack in a child process (attack-child.ts, through tsx), as the abuse suite runs its flood: the
 * measuring process only waits for its report. `stop` aborts what is left of it; the child is killed if it does not
 * answer within a grace after that.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from './settings.js';
import type { AttackReport, AttackTarget } from './tenant-a.js';

const CHILD_FILE = fileURLToPath(new URL('./attack-child.ts', import.meta.url));
const GRACE_MS = 15_000;

export interface RunningAttack {
  child: ChildProcess;
  /** The report, once tenant A is done or stopped. */
  report: Promise<AttackReport>;
  /** Aborts what is left of the attack; the report follows. */
  stop(): void;
}

export function startAttack(target: AttackTarget): RunningAttack {
  const child = fork(CHILD_FILE, [], {
    cwd: REPO_ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const report = new Promise<AttackReport>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { report: AttackReport }).report));
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(new Error(`tenant A's process ended without a report (code ${code}, signal ${signal})`)),
    );
  });
  child.send(target);
  return {
    child,
    report,
    stop: () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.send('stop');
      setTimeout(() => child.kill('SIGKILL'), GRACE_MS).unref();
    },
  };
}
