// Where a planned transaction goes: NativeSink encodes it for nftCommit (rules lowered to
// expressions); NftTextSink writes the same transaction as `nft -f` input, the way
// Calico's nftables mode programs the kernel, so the two can be compared like for like.
import type { Family } from '../../render/model.js';
import { nftComment } from '../../render/comments.js';
import { nftFamily, nftRuleBody } from './text.js';
import type { DesiredChain } from './desired.js';
import { lowerRule, SetIds } from './exprs.js';
import { type ElemSpec, OpWriter, type SetSpec } from './op-writer.js';

export interface PlanSink {
  readonly length: number;
  tableAdd(f: Family, table: string): void;
  chainAdd(f: Family, table: string, chain: string, base?: { hook: number; prio: number; type: string }): void;
  chainFlush(f: Family, table: string, chain: string): void;
  chainDel(f: Family, table: string, chain: string): void;
  setAdd(f: Family, table: string, set: string, id: number, spec: SetSpec): void;
  setDel(f: Family, table: string, set: string): void;
  elems(add: boolean, f: Family, table: string, set: string, setId: number, elems: readonly ElemSpec[]): void;
  rule(f: Family, table: string, chain: DesiredChain, index: number): void;
  nextSetId(): number;
}

export class NativeSink extends OpWriter implements PlanSink {
  readonly #ids = new SetIds();

  nextSetId(): number {
    return this.#ids.next();
  }

  rule(f: Family, table: string, chain: DesiredChain, index: number): void {
    const r = chain.rules[index];
    if (!r) return;
    const lowered = lowerRule(r, f, chain.table, this.#ids);
    for (const s of lowered.anonSets) {
      this.setAdd(f, table, '__set%d', s.id, s.spec);
      this.elems(true, f, table, '__set%d', s.id, s.elems);
    }
    this.ruleAdd(
      f,
      table,
      chain.name,
      nftComment(chain.hashes[index] as string, r),
      lowered.exprs,
      r.comment ?? index + 1,
    );
  }
}

const HOOK_NAMES = ['prerouting', 'input', 'forward', 'output', 'postrouting'];

export class NftTextSink implements PlanSink {
  readonly lines: string[] = [];
  #ids = 0;

  get length(): number {
    return this.lines.length;
  }
  nextSetId(): number {
    return ++this.#ids;
  }
  text(): string {
    return `${this.lines.join('\n')}\n`;
  }

  tableAdd(f: Family, t: string) {
    this.lines.push(`add table ${nftFamily(f)} ${t}`);
  }
  chainAdd(f: Family, t: string, chain: string, base?: { hook: number; prio: number; type: string }) {
    const spec = base
      ? ` { type ${base.type} hook ${HOOK_NAMES[base.hook]} priority ${base.prio}; policy accept; }`
      : '';
    this.lines.push(`add chain ${nftFamily(f)} ${t} ${chain}${spec}`);
  }
  chainFlush(f: Family, t: string, chain: string) {
    this.lines.push(`flush chain ${nftFamily(f)} ${t} ${chain}`);
  }
  chainDel(f: Family, t: string, chain: string) {
    this.lines.push(`delete chain ${nftFamily(f)} ${t} ${chain}`);
  }
  setAdd(f: Family, t: string, set: string, _id: number, spec: SetSpec) {
    this.lines.push(
      `add ${spec.text?.includes(' : ') ? 'map' : 'set'} ${nftFamily(f)} ${t} ${set} { ${spec.text ?? ''} }`,
    );
  }
  setDel(f: Family, t: string, set: string) {
    this.lines.push(`delete set ${nftFamily(f)} ${t} ${set}`);
  }
  elems(add: boolean, f: Family, t: string, set: string, _id: number, elems: readonly ElemSpec[]) {
    const texts = elems.filter((e) => e.text !== undefined).map((e) => e.text as string);
    if (!texts.length) return;
    // Keep commands to a sane length, as nft's own scripts do.
    for (let i = 0; i < texts.length; i += 1000)
      this.lines.push(
        `${add ? 'add' : 'delete'} element ${nftFamily(f)} ${t} ${set} { ${texts.slice(i, i + 1000).join(', ')} }`,
      );
  }
  rule(f: Family, t: string, chain: DesiredChain, index: number) {
    const r = chain.rules[index];
    if (!r) return;
    const comment = JSON.stringify(nftComment(chain.hashes[index] as string, r));
    this.lines.push(`add rule ${nftFamily(f)} ${t} ${chain.name} ${nftRuleBody(r, f, chain.table)} comment ${comment}`);
  }
}
