/** The iptables steps that keep workers off the host, as tables. */
import { describe, expect, it } from 'vitest';
import { FIREWALL_CHAIN, firewallCommand, firewallRemoval, firewallSteps } from './firewall-rules.js';

const joined = (family: 'ipv4' | 'ipv6') => firewallSteps(family).map((step) => step.apply.join(' '));

describe('firewallSteps', () => {
  it('ipv4: a chain of its own that lets replies through and refuses the rest, jumped to from INPUT for crl+ bridges, and link-local refused in DOCKER-USER', () => {
    expect(joined('ipv4')).toEqual([
      `-w -N ${FIREWALL_CHAIN}`,
      `-w -F ${FIREWALL_CHAIN}`,
      `-w -A ${FIREWALL_CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN`,
      `-w -A ${FIREWALL_CHAIN} -p tcp -j REJECT --reject-with tcp-reset`,
      `-w -A ${FIREWALL_CHAIN} -j REJECT --reject-with icmp-port-unreachable`,
      `-w -I INPUT 1 -i crl+ -j ${FIREWALL_CHAIN}`,
      '-w -I DOCKER-USER 1 -i crl+ -d 169.254.0.0/16 -j REJECT',
    ]);
  });

  it('with a worker-facing listener: one ACCEPT for TCP to its address and port, before the refusals, IPv4 only', () => {
    const steps = firewallSteps('ipv4', { address: '172.31.255.1', port: 8082 }).map((s) =>
      s.apply.join(' '),
    );
    expect(steps.slice(2, 6)).toEqual([
      `-w -A ${FIREWALL_CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN`,
      `-w -A ${FIREWALL_CHAIN} -p tcp -d 172.31.255.1/32 --dport 8082 -j ACCEPT`,
      `-w -A ${FIREWALL_CHAIN} -p tcp -j REJECT --reject-with tcp-reset`,
      `-w -A ${FIREWALL_CHAIN} -j REJECT --reject-with icmp-port-unreachable`,
    ]);
    expect(steps.filter((s) => s.includes('ACCEPT'))).toHaveLength(1);
    expect(
      firewallSteps('ipv6', { address: '172.31.255.1', port: 8082 }).map((s) => s.apply.join(' ')),
    ).toEqual(joined('ipv6'));
  });

  it('ipv6: the same INPUT chain with an ICMPv6 refusal, and no DOCKER-USER rule', () => {
    const steps = joined('ipv6');
    expect(steps).toContain(`-w -A ${FIREWALL_CHAIN} -j REJECT --reject-with icmp6-port-unreachable`);
    expect(steps.some((s) => s.includes('DOCKER-USER'))).toBe(false);
    expect(firewallCommand('ipv6')).toBe('ip6tables');
  });

  it('rules inserted into shared chains are checked first, so that a second start adds none', () => {
    for (const step of firewallSteps('ipv4')) {
      const inserts = step.apply.includes('-I');
      expect(step.check !== undefined).toBe(inserts);
      if (step.check)
        expect(step.check.filter((a) => a !== '-C')).toEqual(
          step.apply.filter((a) => a !== '-I' && a !== '1'),
        );
    }
  });

  it('only the chain creation may fail (the chain exists after a restart)', () => {
    expect(
      firewallSteps('ipv4')
        .filter((s) => s.mayFail)
        .map((s) => s.apply[1]),
    ).toEqual(['-N']);
  });

  it('the removal undoes every rule', () => {
    expect(firewallRemoval('ipv4').map((args) => args.join(' '))).toEqual([
      '-D DOCKER-USER -i crl+ -d 169.254.0.0/16 -j REJECT',
      `-D INPUT -i crl+ -j ${FIREWALL_CHAIN}`,
      `-F ${FIREWALL_CHAIN}`,
      `-X ${FIREWALL_CHAIN}`,
    ]);
  });
});
