// The interfaces the monitor reports: name -> index, oper state, addresses. Updated from
// the monitor's event batches; the managers read it during apply.
import type { IfaceEvent } from '../../native/rtnl.js';

export interface IfaceState {
  name: string;
  index: number;
  up: boolean;
  addrs: string[];
}

export class InterfaceTable {
  readonly byName = new Map<string, IfaceState>();

  /** Applies a batch; returns the names whose state changed. */
  apply(events: readonly IfaceEvent[]): Set<string> {
    const changed = new Set<string>();
    for (const e of events) {
      if (e.type === 'routeDeleted' || e.type === 'ifaceOverflow') continue;
      changed.add(e.name);
      if (e.type === 'ifaceUpdate') {
        if (e.state === 'gone') this.byName.delete(e.name);
        else {
          const cur = this.byName.get(e.name);
          if (cur) {
            cur.index = e.index;
            cur.up = e.state === 'up';
          } else this.byName.set(e.name, { name: e.name, index: e.index, up: e.state === 'up', addrs: [] });
        }
      } else {
        const cur = this.byName.get(e.name);
        if (cur) cur.addrs = e.addrs;
      }
    }
    return changed;
  }
}
