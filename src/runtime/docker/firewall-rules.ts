/**
 * The iptables rules that keep Docker workers off the host's own services, as argument lists. Pure: the host
 * guard (host-guard.ts) runs them. Traffic from a worker bridge (`crl+`) to an address of the host itself goes
 * through INPUT (the bridge gateway, the host's LAN address, anything listening on 0.0.0.0); traffic routed
 * elsewhere goes through FORWARD, where Docker leaves DOCKER-USER to the operator: there only link-local
 * 169.254.0.0/16 (cloud metadata services) is refused. Replies to connections the host opened (the gateway's
 * requests to a worker's published port) pass.
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

/** The steps for one family, in order; running them again changes nothing. */
export function firewallSteps(family: IpFamily): FirewallStep[] {
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
