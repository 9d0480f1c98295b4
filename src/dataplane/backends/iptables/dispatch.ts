// Felix's dispatch tree (felix/rules/dispatch.go buildSingleDispatchChainTree): in iptables
// mode a verdict map becomes rules, and with hundreds of endpoints one flat chain would make
// the last interface's packets walk hundreds of rules. So, as Felix: the interface names,
// sorted, share a common prefix; they are binned by the next character; a bin of one gets
// its rule in the root chain, a bin of several a `-i <prefix>+ -g <chain>-<char>` rule and a
// child chain with one rule per interface and a copy of the root's end rules (the goto never
// comes back). An endpoint added or removed rewrites its child chain, not the whole map.
import type { Chain, Rule, VerdictMap } from '../../render/model.js';

/** The longest prefix all names share. */
function commonPrefix(names: string[]): string {
  if (!names.length) return '';
  let p = names[0] as string;
  for (const n of names) while (!n.startsWith(p)) p = p.slice(0, -1);
  return p;
}

/** The chain itself, or (when it holds a verdict map) its root and child chains. */
export function dispatchChains(name: string, rules: Rule[], maps: Map<string, VerdictMap>): Chain[] {
  const at = rules.findIndex((r) => r.action.k === 'vmap');
  const lookup = rules[at];
  if (lookup?.action.k !== 'vmap') return [{ name, rules }];
  const { iface, map } = lookup.action;
  const entries = maps.get(map)?.entries ?? new Map();
  const names = [...entries.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const common = commonPrefix(names);
  const bins = new Map<string, string[]>();
  for (const n of names) {
    const prefix = n.length > common.length ? n.slice(0, common.length + 1) : common;
    bins.set(prefix, [...(bins.get(prefix) ?? []), n]);
  }
  const endRules = rules.slice(at + 1);
  const direct = (n: string): Rule => ({
    match: [...lookup.match, { k: 'iface', dir: iface, name: n }],
    action: entries.get(n),
  });
  const root: Rule[] = rules.slice(0, at);
  const children: Chain[] = [];
  for (const [prefix, members] of bins) {
    if (members.length === 1) {
      root.push(direct(members[0] as string));
      continue;
    }
    const child = `${name}-${prefix.slice(common.length)}`;
    root.push({
      match: [...lookup.match, { k: 'iface', dir: iface, name: `${prefix}+` }],
      action: { k: 'goto', chain: child },
    });
    children.push({ name: child, rules: [...members.map(direct), ...endRules] });
  }
  // Any further map in the same chain (palisade renders one per chain) stays flat.
  return [...children, { name, rules: [...root, ...endRules] }];
}
