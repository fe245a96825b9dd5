/** The iptables steps that keep workers off the host, as tables. */
import { describe, expect, it } from 'vitest';
import {
  FIREWALL_CHAIN,
  firewallCommand,
  firewallRemoval,
  firewallSteps,
  holeRemoval,
  installationRuleRemovals,
} from './firewall-rules.js';

const joined = (family: 'ipv4' | 'ipv6') => firewallSteps(family).map((step) => step.apply.join(' '));
const HOLE = { address: '172.31.255.1', port: 8082, installationId: 'inst-a' };
const HOLE_RULE = `-p tcp -d 172.31.255.1/32 --dport 8082 -m comment --comment corral-installation:inst-a -j ACCEPT`;

describe('firewallSteps', () => {
  it('ipv4: a chain of its own that lets replies through and refuses the rest, jumped to from INPUT for crl+ bridges, and link-local refused in DOCKER-USER', () => {
    expect(joined('ipv4')).toEqual([
      `-w -N ${FIREWALL_CHAIN}`,
      `-w -A ${FIREWALL_CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN`,
      `-w -A ${FIREWALL_CHAIN} -p tcp -j REJECT --reject-with tcp-reset`,
      `-w -A ${FIREWALL_CHAIN} -j REJECT --reject-with icmp-port-unreachable`,
      `-w -I INPUT 1 -i crl+ -j ${FIREWALL_CHAIN}`,
      '-w -I DOCKER-USER 1 -i crl+ -d 169.254.0.0/16 -j REJECT',
    ]);
  });

  it("never flushes the chain: other installations' holes are in it", () => {
    for (const family of ['ipv4', 'ipv6'] as const) {
      const flags = firewallSteps(family, HOLE).map((step) => step.apply[1]);
      expect(flags).not.toContain('-F');
      expect(flags).not.toContain('-X');
    }
  });

  it("with a worker-facing listener: one ACCEPT for TCP to its address and port, marked with the installation's id, at the top of the chain, IPv4 only", () => {
    const steps = firewallSteps('ipv4', HOLE).map((s) => s.apply.join(' '));
    expect(steps.filter((s) => s.includes('ACCEPT'))).toEqual([`-w -I ${FIREWALL_CHAIN} 1 ${HOLE_RULE}`]);
    expect(firewallSteps('ipv6', HOLE).map((s) => s.apply.join(' '))).toEqual(joined('ipv6'));
  });

  it('ipv6: the same INPUT chain with an ICMPv6 refusal, and no DOCKER-USER rule', () => {
    const steps = joined('ipv6');
    expect(steps).toContain(`-w -A ${FIREWALL_CHAIN} -j REJECT --reject-with icmp6-port-unreachable`);
    expect(steps.some((s) => s.includes('DOCKER-USER'))).toBe(false);
    expect(firewallCommand('ipv6')).toBe('ip6tables');
  });

  it('every rule is checked first, so that a second start (or another installation) adds none', () => {
    for (const step of firewallSteps('ipv4', HOLE)) {
      if (step.apply[1] === '-N') continue;
      expect(step.check?.filter((a) => a !== '-C')).toEqual(
        step.apply.filter((a) => a !== '-I' && a !== '-A' && a !== '1'),
      );
    }
  });

  it('only the chain creation may fail (the chain exists after a restart, or another start made it)', () => {
    expect(
      firewallSteps('ipv4')
        .filter((s) => s.mayFail)
        .map((s) => s.apply[1]),
    ).toEqual(['-N']);
  });

  it('the shared removal undoes every shared rule', () => {
    expect(firewallRemoval('ipv4').map((args) => args.join(' '))).toEqual([
      '-D DOCKER-USER -i crl+ -d 169.254.0.0/16 -j REJECT',
      `-D INPUT -i crl+ -j ${FIREWALL_CHAIN}`,
      `-F ${FIREWALL_CHAIN}`,
      `-X ${FIREWALL_CHAIN}`,
    ]);
  });
});

describe("an installation's own rules", () => {
  it('its hole is deleted by the rule it was added with', () => {
    expect(holeRemoval(HOLE).join(' ')).toBe(`-w -D ${FIREWALL_CHAIN} ${HOLE_RULE}`);
  });

  it("finds its holes in iptables -S, every port, and never another installation's or the shared rules", () => {
    const listing = [
      `-N ${FIREWALL_CHAIN}`,
      `-A ${FIREWALL_CHAIN} -d 172.31.1.1/32 -p tcp -m tcp --dport 45229 -m comment --comment corral-installation:inst-a -j ACCEPT`,
      `-A ${FIREWALL_CHAIN} -d 172.31.2.1/32 -p tcp -m tcp --dport 8082 -m comment --comment corral-installation:inst-b -j ACCEPT`,
      `-A ${FIREWALL_CHAIN} -d 172.31.1.1/32 -p tcp -m tcp --dport 40001 -m comment --comment "corral-installation:inst-a" -j ACCEPT`,
      `-A ${FIREWALL_CHAIN} -d 172.31.3.1/32 -p tcp -m tcp --dport 8082 -m comment --comment corral-installation:inst-ab -j ACCEPT`,
      `-A ${FIREWALL_CHAIN} -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`,
      `-A ${FIREWALL_CHAIN} -p tcp -j REJECT --reject-with tcp-reset`,
    ].join('\n');
    expect(installationRuleRemovals(listing, 'inst-a').map((args) => args.join(' '))).toEqual([
      `-w -D ${FIREWALL_CHAIN} -d 172.31.1.1/32 -p tcp -m tcp --dport 45229 -m comment --comment corral-installation:inst-a -j ACCEPT`,
      `-w -D ${FIREWALL_CHAIN} -d 172.31.1.1/32 -p tcp -m tcp --dport 40001 -m comment --comment corral-installation:inst-a -j ACCEPT`,
    ]);
    expect(installationRuleRemovals(listing, 'inst-c')).toEqual([]);
  });
});
