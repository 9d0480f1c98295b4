// Rules whose match is an OR across different kinds of criteria (numeric ports or named
// ports; in iptables also several CIDRs or more than 15 ports) cannot be one kernel rule.
// Felix renders them with two scratch mark bits; so do we: scratch0 = "all blocks matched
// so far", scratch1 = "this block matched". Each block is a list of alternatives.
import type { Marks } from './marks.js';
import type { Action, Match, Rule } from './model.js';

export function blockRules(
  blocks: Match[][][],
  common: Match[],
  finals: (match: Match[]) => Rule[],
  marks: Marks,
): Rule[] {
  const { scratch0: all, scratch1: one } = marks;
  const out: Rule[] = [{ match: [], action: { k: 'setMark', mark: all, mask: all | one } }];
  for (const alternatives of blocks) {
    for (const alt of alternatives)
      out.push({
        match: [{ k: 'mark', value: all, mask: all }, ...alt],
        action: { k: 'setMark', mark: one, mask: one },
      });
    out.push({ match: [{ k: 'mark', value: 0, mask: one }], action: { k: 'setMark', mark: 0, mask: all } });
    out.push({ match: [], action: { k: 'setMark', mark: 0, mask: one } });
  }
  out.push(...finals([{ k: 'mark', value: all, mask: all }, ...common]));
  return out;
}

export const setMark = (mark: number): Action => ({ k: 'setMark', mark, mask: mark });
export const clearMark = (mask: number): Action => ({ k: 'setMark', mark: 0, mask });
export const markSet = (bit: number): Match => ({ k: 'mark', value: bit, mask: bit });
export const markClear = (bit: number): Match => ({ k: 'mark', value: 0, mask: bit });
export const markNotClear = (mask: number): Match => ({ k: 'mark', value: 0, mask, neg: true });
