// A packet walked through the rendered filter chains exactly as the kernel walks them:
// the same Ruleset the rules backends program (src/dataplane/render), so an explanation
// cannot disagree with the kernel about order, marks or sets. It covers what the
// endpoint chains use: protocols, nets, IP sets (also IP+port), ports, ICMP, marks,
// conntrack state (a first packet is "new"), interfaces; jump, goto, return, accept,
// drop, reject, set-mark and log. Every rule that matched is recorded with its chain and
// index, so the caller can say which policy decided and why.
import { type Cidr, cidrContains, parseCidr } from '../model/net.js';
import type { Action, Chain, Match, Rule, Ruleset } from '../dataplane/render/model.js';

export interface Packet {
  src: string;
  dst: string;
  /** IP protocol number (6 tcp, 17 udp, 1 icmp). */
  proto: number;
  srcPort?: number;
  dstPort?: number;
  icmpType?: number;
  icmpCode?: number;
  /** The interface it came in on and goes out of (workload interfaces, where known). */
  iif?: string;
  oif?: string;
}

export interface Hit {
  chain: string;
  index: number;
  rule: Rule;
  /** The mark after the rule ran. */
  mark: number;
}

export interface Walk {
  verdict: 'accept' | 'drop' | 'reject' | 'return';
  /** The mark when the walk ended (a return with the accept mark set is an allow). */
  mark: number;
  hits: Hit[];
  /** The rule that ended the walk (undefined: the start chain ran out). */
  last?: Hit | undefined;
}

const parsed = new Map<string, Cidr | undefined>();
/** `ip` is inside `cidr` (a CIDR or a bare address). */
function within(cidr: string, ip: string): boolean {
  let c = parsed.get(cidr);
  if (!parsed.has(cidr)) parsed.set(cidr, (c = parseCidr(cidr)));
  return !!c && cidrContains(c, ip);
}

const protoOfName: Record<string, number> = { tcp: 6, udp: 17, sctp: 132, icmp: 1, icmpv6: 58, udplite: 136 };

/** An IP+port set member, "10.0.0.1,tcp:8080", against the packet's address and port in `dir`. */
function ipPortMember(member: string, ip: string, proto: number, port: number | undefined): boolean {
  const m = /^([^,]+),([a-z0-9]+):(\d+)$/.exec(member);
  if (!m || port === undefined) return false;
  const p = protoOfName[m[2] as string] ?? Number(m[2]);
  return p === proto && Number(m[3]) === port && within(m[1] as string, ip);
}

export class ChainWalker {
  readonly #rs: Ruleset;

  constructor(ruleset: Ruleset) {
    this.#rs = ruleset;
  }

  chain(name: string): Chain | undefined {
    return this.#rs.tables.filter.get(name);
  }

  /** Walks `start` with the packet (mark 0, conntrack state new). */
  walk(start: string, pkt: Packet): Walk {
    const hits: Hit[] = [];
    let mark = 0;
    // The call stack: chain and the index of the next rule to run there.
    const stack: Array<{ chain: Chain; next: number }> = [];
    const first = this.chain(start);
    if (!first) throw new Error(`no chain ${start} in the rendered ruleset`);
    let cur = { chain: first, next: 0 };
    for (let steps = 0; steps < 100_000; steps++) {
      const rule = cur.chain.rules[cur.next];
      if (!rule) {
        // End of a chain: back to the caller (an implicit return).
        const up = stack.pop();
        if (!up) return { verdict: 'return', mark, hits };
        cur = up;
        continue;
      }
      const index = cur.next++;
      if (!rule.match.every((m) => this.#matches(m, pkt, mark))) continue;
      const out = this.#act(rule.action, mark);
      mark = out.mark;
      const hit = { chain: cur.chain.name, index, rule, mark };
      hits.push(hit);
      const v = out.verdict;
      if (!v) continue;
      if (v.k === 'accept' || v.k === 'drop' || v.k === 'reject') return { verdict: v.k, mark, hits, last: hit };
      if (v.k === 'return') {
        const up = stack.pop();
        if (!up) return { verdict: 'return', mark, hits, last: hit };
        cur = up;
      } else if (v.k === 'jump' || v.k === 'goto') {
        const target = this.chain(v.chain);
        if (!target) throw new Error(`${cur.chain.name} rule ${index} jumps to ${v.chain}, which is not rendered`);
        if (v.k === 'jump') stack.push(cur);
        cur = { chain: target, next: 0 };
      }
    }
    throw new Error(`walking ${start} did not end (a loop in the rendered chains?)`);
  }

  #act(a: Action, mark: number): { mark: number; verdict?: Action } {
    switch (a.k) {
      case 'setMark': {
        const next = (mark & ~a.mask) | (a.mark & a.mask);
        return a.then ? { mark: next, verdict: a.then } : { mark: next };
      }
      case 'log':
      case 'notrack':
        return { mark };
      default:
        return { mark, verdict: a };
    }
  }

  #matches(m: Match, p: Packet, mark: number): boolean {
    const yes = this.#positive(m, p, mark);
    return 'neg' in m && m.neg ? !yes : yes;
  }

  #positive(m: Match, p: Packet, mark: number): boolean {
    const addr = (dir: 'src' | 'dst') => (dir === 'src' ? p.src : p.dst);
    switch (m.k) {
      case 'proto':
        return p.proto === m.proto;
      case 'net':
        return m.nets.some((n) => within(n, addr(m.dir)));
      case 'set': {
        const set = this.#rs.sets.get(m.set);
        return !!set && set.members.some((n) => within(n, addr(m.dir)));
      }
      case 'ipPortSet': {
        const set = this.#rs.sets.get(m.set);
        const port = m.dir === 'src' ? p.srcPort : p.dstPort;
        return !!set && set.members.some((x) => ipPortMember(x, addr(m.dir), p.proto, port));
      }
      case 'ports': {
        const port = m.dir === 'src' ? p.srcPort : p.dstPort;
        return (
          port !== undefined &&
          (p.proto === 6 || p.proto === 17 || p.proto === 132) &&
          m.ranges.some((r) => port >= r.first && port <= r.last)
        );
      }
      case 'icmp':
        return (
          (p.proto === 1 || p.proto === 58) && p.icmpType === m.type && (m.code === undefined || p.icmpCode === m.code)
        );
      case 'mark':
        return (mark & m.mask) === m.value;
      case 'ct':
        // The first packet of a connection.
        return m.states.includes('NEW');
      case 'ctDnat':
        // explain follows a packet sent to a workload's own address, never to a Service.
        return !!m.neg;
      case 'iface': {
        const name = m.dir === 'in' ? p.iif : p.oif;
        if (name === undefined) return false;
        return m.name.endsWith('+') ? name.startsWith(m.name.slice(0, -1)) : name === m.name;
      }
      case 'addrType':
        // Workload traffic is not addressed to or from this host's own addresses.
        return false;
      case 'rpfFailed':
        return false;
      default:
        return false;
    }
  }
}
