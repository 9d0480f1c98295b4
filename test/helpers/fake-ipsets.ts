// An in-memory ipset kernel for unit tests, as the ipset netlink commands behave: sets
// created, destroyed, swapped (only of one type) and filled; a missing set or a member
// named in `failMember` fails with the kernel's errno. `log` records each op.
import type { IpsetDataplane } from '../../src/dataplane/ipsets/ipsets.js';
import type { IpsetOp, IpsetResult, ListedIpset } from '../../src/native/ipset.js';

export class FakeKernel implements IpsetDataplane {
  readonly sets = new Map<string, { type: string; family: 4 | 6; maxelem: number; members: Set<string> }>();
  readonly log: string[] = [];
  /** Fails the add of this member (as a full set would). */
  failMember: string | undefined;

  async apply(ops: IpsetOp[]): Promise<IpsetResult> {
    const failures: IpsetResult['failures'] = [];
    ops.forEach((o, tag) => {
      this.log.push(
        `${o.op} ${o.name}${o.op === 'add' || o.op === 'del' ? ` ${o.members.length}` : ''}${o.op === 'swap' ? ` ${o.other}` : ''}`,
      );
      const s = this.sets.get(o.name);
      switch (o.op) {
        case 'create':
          if (s && s.type !== o.type) failures.push({ tag, errno: 4097, member: -1 });
          else if (!s)
            this.sets.set(o.name, { type: o.type, family: o.family, maxelem: o.maxelem, members: new Set() });
          return;
        case 'destroy':
          if (!this.sets.delete(o.name)) failures.push({ tag, errno: 2, member: -1 });
          return;
        case 'flush':
          s?.members.clear();
          return;
        case 'swap': {
          const other = this.sets.get(o.other);
          if (!s || !other) failures.push({ tag, errno: 2, member: -1 });
          else if (s.type !== other.type)
            failures.push({ tag, errno: 4102, member: -1 }); // the kernel swaps only sets of one type
          else [this.sets.set(o.name, other), this.sets.set(o.other, s)];
          return;
        }
        case 'add':
        case 'del':
          if (!s) return void failures.push({ tag, errno: 2, member: -1 });
          for (let i = 0; i < o.members.length; i++) {
            const m = o.members[i] as string;
            if (o.op === 'add' && m === this.failMember) return void failures.push({ tag, errno: 4105, member: i });
            if (o.op === 'add') s.members.add(m);
            else s.members.delete(m);
          }
      }
    });
    return { ops: ops.length, messages: ops.length, failures };
  }

  async list(prefix: string): Promise<ListedIpset[]> {
    return [...this.sets]
      .filter(([n]) => n.startsWith(prefix))
      .map(([name, s]) => ({
        name,
        type: s.type,
        family: s.family,
        revision: 0,
        maxelem: s.maxelem,
        members: [...s.members],
      }));
  }
}
