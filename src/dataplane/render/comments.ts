// Rule comments as Felix renders them: the `cali:<hash>` tag first, then the rule's own
// comments (what the rule does, and a policy rule's metadata.annotations as "key=value"),
// each with anything but shell-safe characters turned into "_". iptables gives each its
// own `-m comment` (at most 256 bytes); nftables has one comment per rule, "cali:<hash>;"
// and the others after it, at most 128 bytes in all, as knftables allows.
import type { Rule } from './model.js';

const SHELL_UNSAFE = /[^\w @%+=:,./-]/g;
export const MAX_IPTABLES_COMMENT = 256;
export const MAX_NFT_COMMENT = 128;

/** The rule's own comments, escaped as Felix escapes them. */
export function ruleComments(r: Rule): string[] {
  const all = r.annotations?.length
    ? [...(r.comment ? [r.comment] : []), ...r.annotations]
    : r.comment
      ? [r.comment]
      : [];
  return all.map((c) => c.replace(SHELL_UNSAFE, '_'));
}

/** The one nftables comment of a rule: "cali:<hash>;" then its comments, cut as Felix cuts them. */
export function nftComment(hash: string, r: Rule): string {
  const tag = `cali:${hash};`;
  const own = ruleComments(r);
  if (!own.length) return tag;
  const each = Math.floor((MAX_NFT_COMMENT - tag.length) / own.length);
  return [tag, ...own.map((c) => c.slice(0, each))].join(' ').slice(0, MAX_NFT_COMMENT);
}

/** The text a rule's hash covers besides its statement: a changed comment is a changed rule. */
export function commentHashText(r: Rule): string {
  const own = ruleComments(r);
  return own.length ? ` ${own.join(' ')}` : '';
}
