/**
 * The iptables rules that keep Docker workers off the host's own services, as argument lists. Pure: the host
 * guard (host-guard.ts) runs them. Traffic from a worker bridge (`crl+`) to an address of the host itself goes
 * through INPUT (the bridge gateway, the host's LAN address, anything listening on 0.0.0.0); traffic routed
 * elsewhere goes through FORWARD, where Docker leaves DOCKER-USER to the operator: there only link-local
 * 169.254.0.0/16 (cloud metadata services) is refused. Replies to connections the host opened (the gateway's
 * requests to a worker's published port) pass, and so do narrow holes: TCP to a worker-facing listener's address
 * and port (jobs: workers take jobs and post results there), one per listener, each marked with its installation's
 * id, so that installations sharing the host add and remove only their own.
 */
import { BRIDGE_PREFIX } from './sandbox.js';

export const FIREWALL_CHAIN = 'CORRAL-WORKERS';
const BRIDGES = `${BRIDGE_PREFIX}+`;

export type IpFamily = 'ipv4' | 'ipv6';

/** One step: `apply` runs unless `check` (iptables -C) says the rule is already there. */
export interface FirewallStep {
  check?: string[];
  apply: string[];
  /** A step that may fail without harm (creating a chain that exists). */
  mayFail?: boolean;
}

export function firewallCommand(family: IpFamily): string {
  return family === 'ipv4' ? 'iptables' : 'ip6tables';
}

/**
 * The worker-facing listener workers may reach: an IPv4 address of the host and a TCP port, and the installation
 * whose hole it is (several installations may share one host, and so the chain).
 */
export interface WorkerListenerHole {
  address: string;
  port: number;
  installationId: string;
}

/**
 * The steps for one family, in order; running them again changes nothing, and several installations may run them
 * at once. The chain is shared by every installation on the host: it is made if absent and never flushed (that
 * deleted other installations' holes); each of its rules is appended only when absent, after the ones before it
 * were seen, so that two starts at once keep the order (a duplicate of a refusal may result: harmless). An
 * installation's hole (holeSteps) is inserted at the top, before the refusals.
 */
export function firewallSteps(family: IpFamily, listener?: WorkerListenerHole): FirewallStep[] {
  const unreachable = family === 'ipv4' ? 'icmp-port-unreachable' : 'icmp6-port-unreachable';
  const appended = (rule: string[]): FirewallStep => ({
    check: ['-w', '-C', FIREWALL_CHAIN, ...rule],
    apply: ['-w', '-A', FIREWALL_CHAIN, ...rule],
  });
  const jump = ['INPUT', '-i', BRIDGES, '-j', FIREWALL_CHAIN];
  const steps: FirewallStep[] = [
    // Fails when the chain exists (made by an earlier start, or by another installation's start just now).
    { apply: ['-w', '-N', FIREWALL_CHAIN], mayFail: true },
    appended(['-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN']),
    // Refused rather than dropped, so that a worker's attempt fails at once instead of hanging until a timeout.
    appended(['-p', 'tcp', '-j', 'REJECT', '--reject-with', 'tcp-reset']),
    appended(['-j', 'REJECT', '--reject-with', unreachable]),
    ...(listener && family === 'ipv4' ? [holeStep(listener)] : []),
    { check: ['-w', '-C', ...jump], apply: ['-w', '-I', ...jump.slice(0, 1), '1', ...jump.slice(1)] },
  ];
  if (family === 'ipv4') {
    const metadata = ['DOCKER-USER', '-i', BRIDGES, '-d', '169.254.0.0/16', '-j', 'REJECT'];
    steps.push({
      check: ['-w', '-C', ...metadata],
      apply: ['-w', '-I', ...metadata.slice(0, 1), '1', ...metadata.slice(1)],
    });
  }
  return steps;
}

/** The installation's hole, inserted at the top of the chain unless it is there. */
function holeStep(listener: WorkerListenerHole): FirewallStep {
  const rule = holeRule(listener);
  return { check: ['-w', '-C', FIREWALL_CHAIN, ...rule], apply: ['-w', '-I', FIREWALL_CHAIN, '1', ...rule] };
}

/** The comment that marks an installation's rules: how it finds, and removes, its own and no other's. */
export function installationComment(installationId: string): string {
  return `corral-installation:${installationId}`;
}

/** TCP to the listener's address and port, arriving from a worker bridge (the chain is jumped to for those only). */
export function holeRule(listener: WorkerListenerHole): string[] {
  return [
    '-p',
    'tcp',
    '-d',
    `${listener.address}/32`,
    '--dport',
    String(listener.port),
    '-m',
    'comment',
    '--comment',
    installationComment(listener.installationId),
    '-j',
    'ACCEPT',
  ];
}

/** The arguments that delete one hole (this process's own, when it stops). */
export function holeRemoval(listener: WorkerListenerHole): string[] {
  return ['-w', '-D', FIREWALL_CHAIN, ...holeRule(listener)];
}

/**
 * The arguments that delete each of an installation's rules found in `listing` (what `iptables -S CORRAL-WORKERS`
 * prints): every hole its starts left, whatever their ports (`corral cleanup`). Others' rules are left alone.
 */
export function installationRuleRemovals(listing: string, installationId: string): string[][] {
  const comment = installationComment(installationId);
  return listing
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith(`-A ${FIREWALL_CHAIN} `))
    .map((line) => line.split(/\s+/).map((word) => word.replace(/^"(.*)"$/, '$1')))
    .filter((words) => words.some((word, i) => word === comment && words[i - 1] === '--comment'))
    .map((words) => ['-w', '-D', ...words.slice(1)]);
}

/** What an operator runs to take the shared rules away, once no installation on the host uses them (docs/workers.md). */
export function firewallRemoval(family: IpFamily): string[][] {
  const removal = [
    ['-D', 'INPUT', '-i', BRIDGES, '-j', FIREWALL_CHAIN],
    ['-F', FIREWALL_CHAIN],
    ['-X', FIREWALL_CHAIN],
  ];
  if (family === 'ipv4')
    removal.unshift(['-D', 'DOCKER-USER', '-i', BRIDGES, '-d', '169.254.0.0/16', '-j', 'REJECT']);
  return removal;
}
