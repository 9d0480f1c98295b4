// A multi-node lab: each "node" is a Lab (its host namespace, its workloads), joined by an
// underlay namespace that bridges two subnets and routes between them - node IPs in
// 10.99.0.0/24 (br0) and 10.99.1.0/24 (br1), the underlay at .1 of each; dual stack, also
// fd99:0::/64 and fd99:1::/64 (node 10.99.S.X is fd99:S::X) - so VXLAN, CrossSubnet and a
// cut link can be tried with real packets. Only these namespaces are touched.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

import { Lab } from './lab.js';

export interface LabNode {
  name: string;
  lab: Lab;
  /** The node's underlay address (on its eth1). */
  ip: string;
  /** Its IPv6 underlay address (fd99:S::X for 10.99.S.X). */
  ip6: string;
  prefix: number;
}

/** The IPv6 underlay address of the node at 10.99.S.X. */
export const underlayV6 = (ip: string) => {
  const [, , s, x] = ip.split('.');
  return `fd99:${s}::${x}`;
};

export class MultiNodeLab {
  readonly id = randomBytes(2).toString('hex');
  readonly underlay: string;
  readonly nodes: LabNode[] = [];

  constructor() {
    this.underlay = `palisade-mn-${this.id}-under`;
    execFileSync('ip', ['netns', 'add', this.underlay]);
    const u = (args: string[]) => execFileSync('ip', ['netns', 'exec', this.underlay, ...args]);
    u(['ip', 'link', 'set', 'lo', 'up']);
    u(['sysctl', '-q', '-w', 'net.ipv4.ip_forward=1']);
    u(['sysctl', '-q', '-w', 'net.ipv6.conf.all.forwarding=1']);
    for (const [br, addr, addr6] of [
      ['br0', '10.99.0.1/24', 'fd99:0::1/64'],
      ['br1', '10.99.1.1/24', 'fd99:1::1/64'],
    ] as const) {
      u(['ip', 'link', 'add', br, 'type', 'bridge']);
      u(['sysctl', '-q', '-w', `net.ipv6.conf.${br}.accept_dad=0`]);
      u(['ip', 'addr', 'add', addr, 'dev', br]);
      u(['ip', '-6', 'addr', 'add', addr6, 'dev', br, 'nodad']);
      u(['ip', 'link', 'set', br, 'up']);
    }
  }

  /** Adds a node whose underlay address is `ip` (10.99.0.x or 10.99.1.x). */
  addNode(name: string, ip: string): LabNode {
    const lab = new Lab(`palisade-mn${this.nodes.length}`);
    const subnet = ip.startsWith('10.99.1.') ? 1 : 0;
    const port = `u${this.id}${this.nodes.length}`;
    execFileSync('ip', [
      'link',
      'add',
      port,
      'netns',
      this.underlay,
      'type',
      'veth',
      'peer',
      'name',
      'eth1',
      'netns',
      lab.host,
    ]);
    const u = (args: string[]) => execFileSync('ip', ['netns', 'exec', this.underlay, ...args]);
    u(['ip', 'link', 'set', port, 'master', `br${subnet}`]);
    u(['ip', 'link', 'set', port, 'up']);
    const ip6 = underlayV6(ip);
    lab.sh(lab.host, 'sysctl', ['-q', '-w', 'net.ipv6.conf.eth1.accept_dad=0']);
    // A cut link keeps its IPv6 address, as its IPv4 one (the kernel's default flushes it).
    lab.sh(lab.host, 'sysctl', ['-q', '-w', 'net.ipv6.conf.eth1.keep_addr_on_down=1']);
    lab.sh(lab.host, 'ip', ['addr', 'add', `${ip}/24`, 'dev', 'eth1']);
    lab.sh(lab.host, 'ip', ['-6', 'addr', 'add', `${ip6}/64`, 'dev', 'eth1', 'nodad']);
    lab.sh(lab.host, 'ip', ['link', 'set', 'eth1', 'up']);
    this.#underlayRoutes(lab, subnet);
    const node = { name, lab, ip, ip6, prefix: 24 };
    this.nodes.push(node);
    return node;
  }

  /** Cuts (or restores) a node's underlay link. */
  setLink(node: LabNode, up: boolean): void {
    node.lab.sh(node.lab.host, 'ip', ['link', 'set', 'eth1', up ? 'up' : 'down']);
    // The kernel drops the route to the other subnet with the link; put it back.
    if (up) this.#underlayRoutes(node.lab, node.ip.startsWith('10.99.1.') ? 1 : 0);
  }

  /** The routes to the other subnet, via the underlay router, both families. */
  #underlayRoutes(lab: Lab, subnet: number): void {
    lab.sh(lab.host, 'ip', ['route', 'replace', '10.99.0.0/16', 'via', `10.99.${subnet}.1`]);
    // onlink: right after the link comes back its IPv6 prefix route may not be there yet.
    lab.sh(lab.host, 'ip', [
      '-6',
      'route',
      'replace',
      'fd99::/16',
      'via',
      `fd99:${subnet}::1`,
      'dev',
      'eth1',
      'onlink',
    ]);
  }

  destroy(): void {
    for (const n of this.nodes) n.lab.destroy();
    spawnSync('ip', ['netns', 'del', this.underlay]);
  }
}
