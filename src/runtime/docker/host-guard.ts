/**
 * What Corral changes on the host to keep Docker workers in: the iptables rules of firewall-rules.ts and nosuid,nodev
 * mounts on network storage paths (mount-table.ts). I/O only; each is done once per process, and where it cannot be
 * done (not root, no iptables, an engine on another machine) one warning says so and what to do by hand.
 */
import { execFile } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import type { Logger } from 'pino';
import {
  FIREWALL_CHAIN,
  firewallCommand,
  firewallSteps,
  holeRemoval,
  type IpFamily,
  installationRuleRemovals,
  type WorkerListenerHole,
} from './firewall-rules.js';
import { parseMountInfo, storagePlan } from './mount-table.js';

export interface CommandResult {
  code: number;
  stderr: string;
  /** What the command printed, where its caller reads it (a listing). */
  stdout?: string;
}

export type RunCommand = (command: string, args: string[]) => Promise<CommandResult>;

export interface HostGuardOptions {
  logger: Logger;
  /** Install the firewall rules (config `workers.sandbox.network.blockHost`). */
  blockHost: boolean;
  /** The worker-facing listener workers may reach through the firewall (jobs); absent: none. */
  workerListener?: WorkerListenerHole;
  /** Make storage paths nosuid,nodev mounts (config `workers.sandbox.storage.nosuid`). */
  storageNosuid: boolean;
  /**
   * Why the host cannot be changed from here, or undefined when it can: not root, or the engine runs on another
   * machine (DOCKER_HOST), whose firewall and mounts this process does not see.
   */
  unable?: string;
  run?: RunCommand;
  readMountInfo?: () => string;
  realpath?: (path: string) => string;
}

export function runCommand(command: string, args: string[]): Promise<CommandResult> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: 15_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 127) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr).trim() || (error?.message ?? '') });
    });
  });
}

export class HostGuard {
  readonly #o: HostGuardOptions;
  readonly #logger: Logger;
  #firewall: Promise<boolean> | undefined;
  readonly #storages = new Map<string, Promise<boolean>>();

  constructor(options: HostGuardOptions) {
    this.#o = options;
    this.#logger = options.logger.child({ part: 'host-guard' });
  }

  /** Installs the firewall rules (once); true when workers are kept off the host. */
  firewall(): Promise<boolean> {
    this.#firewall ??= this.#applyFirewall();
    return this.#firewall;
  }

  /**
   * Takes this process's hole for the worker-facing listener away (it stops listening), once the rules went up;
   * another installation's rules, and the shared ones, stay.
   */
  async release(): Promise<void> {
    const listener = this.#o.workerListener;
    if (!listener || !this.#firewall || !(await this.#firewall)) return;
    const result = await (this.#o.run ?? runCommand)(firewallCommand('ipv4'), holeRemoval(listener));
    if (result.code !== 0)
      this.#logger.warn({ why: result.stderr, workerListener: listener }, 'cannot remove the listener hole');
  }

  /** Makes the storage path a nosuid,nodev mount (once per path); true when it is one. */
  protectStorage(hostPath: string): Promise<boolean> {
    let done = this.#storages.get(hostPath);
    if (!done) {
      done = this.#protect(hostPath);
      this.#storages.set(hostPath, done);
    }
    return done;
  }

  async #applyFirewall(): Promise<boolean> {
    if (!this.#o.blockHost) {
      this.#logger.warn(
        'workers are not kept off the host: workers.sandbox.network has blockHost off or isolation none (docs/workers.md)',
      );
      return false;
    }
    if (this.#o.unable) {
      this.#logger.warn(
        { why: this.#o.unable },
        'workers are not kept off the host: cannot install the iptables rules; install them by hand (docs/workers.md#keeping-workers-off-the-host)',
      );
      return false;
    }
    const failure = (await this.#applyFamily('ipv4')) ?? undefined;
    if (failure) {
      this.#logger.warn(
        { why: failure },
        'workers are not kept off the host: cannot install the iptables rules; install them by hand (docs/workers.md#keeping-workers-off-the-host)',
      );
      return false;
    }
    const ipv6 = await this.#applyFamily('ipv6');
    this.#logger.info(
      {
        ipv6: ipv6 === undefined,
        ...(ipv6 ? { ipv6Problem: ipv6 } : {}),
        ...(this.#o.workerListener ? { workerListener: this.#o.workerListener } : {}),
      },
      'workers kept off the host: iptables chain CORRAL-WORKERS on INPUT, 169.254.0.0/16 refused in DOCKER-USER',
    );
    return true;
  }

  /** Undefined on success, else what failed. */
  async #applyFamily(family: IpFamily): Promise<string | undefined> {
    const run = this.#o.run ?? runCommand;
    const command = firewallCommand(family);
    for (const step of firewallSteps(family, this.#o.workerListener)) {
      if (step.check && (await run(command, step.check)).code === 0) continue;
      const result = await run(command, step.apply);
      if (result.code !== 0 && !step.mayFail) return `${command} ${step.apply.join(' ')}: ${result.stderr}`;
    }
    return undefined;
  }

  async #protect(hostPath: string): Promise<boolean> {
    if (!this.#o.storageNosuid) return false;
    const log = this.#logger.child({ hostPath });
    const byHand = `mount --bind ${hostPath} ${hostPath} && mount -o remount,bind,nosuid,nodev ${hostPath}`;
    if (this.#o.unable) {
      log.warn(
        { why: this.#o.unable, byHand },
        'network storage is not mounted nosuid,nodev: a setuid file a worker writes there could give root on the host',
      );
      return false;
    }
    try {
      const path = (this.#o.realpath ?? realpathSync)(hostPath);
      const table = (this.#o.readMountInfo ?? (() => readFileSync('/proc/self/mountinfo', 'utf8')))();
      const plan = storagePlan(parseMountInfo(table), path);
      if (plan.action === 'none') return true;
      const run = this.#o.run ?? runCommand;
      for (const args of plan.commands) {
        const result = await run('mount', args);
        if (result.code !== 0) throw new Error(`mount ${args.join(' ')}: ${result.stderr}`);
      }
      log.info({ action: plan.action }, 'network storage mounted nosuid,nodev');
      return true;
    } catch (error) {
      log.warn(
        { why: (error as Error).message, byHand },
        'network storage is not mounted nosuid,nodev: a setuid file a worker writes there could give root on the host',
      );
      // Tried again at the next worker that mounts it (the path may not exist yet).
      this.#storages.delete(hostPath);
      return false;
    }
  }
}

/**
 * Every rule of `installationId` in the shared chain (iptables -S), as the iptables arguments that delete it;
 * deleted too unless `dryRun`. Those that could not be deleted are in `failed`. For `corral cleanup`.
 */
export async function removeInstallationRules(options: {
  installationId: string;
  dryRun: boolean;
  run?: RunCommand;
}): Promise<{ removed: string[]; failed: string[] }> {
  const run = options.run ?? runCommand;
  const command = firewallCommand('ipv4');
  const listing = await run(command, ['-w', '-S', FIREWALL_CHAIN]);
  // No chain: no rule of anyone's.
  if (listing.code !== 0) return { removed: [], failed: [] };
  const removed: string[] = [];
  const failed: string[] = [];
  for (const args of installationRuleRemovals(listing.stdout ?? '', options.installationId)) {
    const text = `${command} ${args.join(' ')}`;
    if (options.dryRun || (await run(command, args)).code === 0) removed.push(text);
    else failed.push(text);
  }
  return { removed, failed };
}

/** Why this process cannot change the host the engine runs on, or undefined when it can. */
export function hostGuardUnable(options: {
  engineAddress: string;
  uid: number | undefined;
}): string | undefined {
  if (!options.engineAddress.startsWith('/')) {
    return `the Docker engine is at ${options.engineAddress}, not on this machine`;
  }
  if (options.uid !== 0) return 'corral runs as a user other than root';
  return undefined;
}
