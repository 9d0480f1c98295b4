// A multi-node lab: each "node" is a Lab (its host namespace, its workloads), joined by an
// underlay namespace that bridges two subnets and routes between them - node IPs in
// 10.99.0.0/24 (br0) and 10.99.1.0/24 (br1), the underlay at .1 of each - so VXLAN,
// CrossSubnet and a cut link can be tried with real packets. Only these namespaces are
// touched.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

import { Lab } from './lab.js';

export interface LabNode {
  name: string;
  lab: Lab;
  /** The node's underlay address (on its eth1). */
  ip: string;
  prefix: number;
}

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
    for (const [br, addr] of [
      ['br0', '10.99.0.1/24'],
      ['br1', '10.99.1.1/24'],
    ] as const) {
      u(['ip', 'link', 'add', br, 'type', 'bridge']);
      u(['ip', 'addr', 'add', addr, 'dev', br]);
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
    lab.sh(lab.host, 'ip', ['addr', 'add', `${ip}/24`, 'dev', 'eth1']);
    lab.sh(lab.host, 'ip', ['link', 'set', 'eth1', 'up']);
    lab.sh(lab.host, 'ip', ['route', 'add', '10.99.0.0/16', 'via', `10.99.${subnet}.1`]);
    const node = { name, lab, ip, prefix: 24 };
    this.nodes.push(node);
    return node;
  }

  /** Cuts (or restores) a node's underlay link. */
  setLink(node: LabNode, up: boolean): void {
    node.lab.sh(node.lab.host, 'ip', ['link', 'set', 'eth1', up ? 'up' : 'down']);
    // The kernel drops the route to the other subnet with the link; put it back.
    if (up)
      node.lab.sh(node.lab.host, 'ip', [
        'route',
        'replace',
        '10.99.0.0/16',
        'via',
        `10.99.${node.ip.startsWith('10.99.1.') ? 1 : 0}.1`,
      ]);
  }

  destroy(): void {
    for (const n of this.nodes) n.lab.destroy();
    spawnSync('ip', ['netns', 'del', this.underlay]);
  }
}
