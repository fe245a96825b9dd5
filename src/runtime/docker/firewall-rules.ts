/**
 * The iptables rules that keep Docker workers off the host's own services, as argument lists. Pure: the host
 * guard (host-guard.ts) runs them. Traffic from a worker bridge (`crl+`) to an address of the host itself goes
 * through INPUT (the bridge gateway, the host's LAN address, anything listening on 0.0.0.0); traffic routed
 * elsewhere goes through FORWARD, where Docker leaves DOCKER-USER to the operator: there only link-local
 * 169.254.0.0/16 (cloud metadata services) is refused. Replies to connections the host opened (the gateway's
 * requests to a worker's published port) pass, and so does one narrow hole: TCP to the worker-facing listener's
 * address and port (jobs: workers take jobs and post results there), when it is given.
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

/** The worker-facing listener workers may reach: an IPv4 address of the host and a TCP port. */
export interface WorkerListenerHole {
  address: string;
  port: number;
}

/**
 * The steps for one family, in order; running them again changes nothing. `listener`: the one address and port
 * workers may reach on the host (IPv4 only: the ip6tables chain gets no hole).
 */
export function firewallSteps(family: IpFamily, listener?: WorkerListenerHole): FirewallStep[] {
  const unreachable = family === 'ipv4' ? 'icmp-port-unreachable' : 'icmp6-port-unreachable';
  const jump = ['INPUT', '-i', BRIDGES, '-j', FIREWALL_CHAIN];
  const steps: FirewallStep[] = [
    { apply: ['-w', '-N', FIREWALL_CHAIN], mayFail: true },
    // The chain is Corral's own: rewritten whole at every start, so that an older version's rules go.
    { apply: ['-w', '-F', FIREWALL_CHAIN] },
    {
      apply: [
        '-w',
        '-A',
        FIREWALL_CHAIN,
        '-m',
        'conntrack',
        '--ctstate',
        'ESTABLISHED,RELATED',
        '-j',
        'RETURN',
      ],
    },
    ...(listener && family === 'ipv4'
      ? [{ apply: ['-w', '-A', FIREWALL_CHAIN, ...listenerMatch(listener), '-j', 'ACCEPT'] }]
      : []),
    // Refused rather than dropped, so that a worker's attempt fails at once instead of hanging until a timeout.
    { apply: ['-w', '-A', FIREWALL_CHAIN, '-p', 'tcp', '-j', 'REJECT', '--reject-with', 'tcp-reset'] },
    { apply: ['-w', '-A', FIREWALL_CHAIN, '-j', 'REJECT', '--reject-with', unreachable] },
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

/** TCP to the listener's address and port, arriving from a worker bridge (the chain is jumped to for those only). */
export function listenerMatch(listener: WorkerListenerHole): string[] {
  return ['-p', 'tcp', '-d', `${listener.address}/32`, '--dport', String(listener.port)];
}

/** What an operator runs to take the rules away (docs/workers.md shows it too). */
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
