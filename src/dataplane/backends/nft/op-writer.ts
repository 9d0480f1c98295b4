// Writes the op stream native/nft/ops.h reads. Every op carries a tag: its index here,
// with a description kept on this side so a kernel refusal names the object.
import { NFPROTO, type NftFamily, UDATA_RULE_COMMENT } from './consts.js';

export const OP = {
  tableAdd: 1,
  tableDel: 2,
  chainAdd: 3,
  chainFlush: 4,
  chainDel: 5,
  setAdd: 6,
  setDel: 7,
  setFlush: 8,
  elemAdd: 9,
  elemDel: 10,
  ruleAdd: 11,
  ruleDel: 12,
} as const;

export interface Expr {
  name: string;
  /** A string is a C string (latin1, NUL-terminated): names, written without a Buffer of their own. */
  attrs: Array<[number, Uint8Array | string]>;
}

export interface ElemSpec {
  /**
   * The key's bytes in lowercase hex. A string, not a Buffer: a node holds a cluster's
   * worth of elements for hours, and a small Buffer copied with Buffer.from keeps an 8 KB
   * slab of Node's pool alive (under churn: thousands of slabs for a few MB of keys),
   * while one of its own is a typed array of ~100 bytes. The hex is also the start of the
   * element's id, and sorts as the bytes do.
   */
  key: string;
  flags: number;
  verdict?: { code: number; chain: string } | undefined;
  /** nft syntax of the element (interval ends have none: their start says it all). */
  text?: string | undefined;
}

export interface SetSpec {
  flags: number;
  keyType: number;
  keyLen: number;
  dataType?: number;
  dataLen?: number;
  /** Set userdata (nft's TLVs: how `nft list` should print the keys). */
  udata?: Uint8Array;
  /** nft syntax of the type and flags, e.g. "type ipv4_addr; flags interval;". */
  text?: string;
}

/** A lowercase hex digit's value, -1 for anything else. */
const nibble = (c: number) => (c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1);

/**
 * The size of the stream's parts. One buffer doubled as it grew, and a cold apply of
 * 100,000 rules (~50 MB) copied 32 MB in one step: a 20 ms block of the event loop.
 */
const PART_BYTES = 1 << 20;

export class OpWriter {
  /** Full parts, each ending at an op's end (the native reader takes whole ops per part). */
  readonly #parts: Buffer[] = [];
  // Small at first: an incremental apply is a few KB, and 64 KB up front was a fresh
  // ArrayBuffer per apply. Parts double from here up to PART_BYTES.
  #buf = Buffer.allocUnsafe(1 << 12);
  #len = 0;
  /** Where the op being written starts in #buf. */
  #opStart = 0;
  /**
   * What each op is about, kept in parts (its kind, the object's name, a detail) and made
   * into words only for an op the kernel refuses: a string per op, made as it was
   * written, lived until the commit, and a cold apply's 100,000 of them made the young
   * generation's collections copy them (pauses of 20-30 ms while the kernel committed).
   */
  readonly #kinds: number[] = [];
  readonly #names: string[] = [];
  readonly #details: Array<string | number | bigint | undefined> = [];

  get length(): number {
    return this.#kinds.length;
  }

  /** The op with this tag, in words ("rule in filter-cali-fw-eth0: #3"). */
  describe(tag: number): string | undefined {
    const name = this.#names[tag];
    const detail = this.#details[tag];
    switch (this.#kinds[tag]) {
      case OP.tableAdd:
        return `table ${name}`;
      case OP.tableDel:
        return `delete table ${name}`;
      case OP.chainAdd:
        return `chain ${name}`;
      case OP.chainFlush:
        return `flush chain ${name}`;
      case OP.chainDel:
        return `delete chain ${name}`;
      case OP.setAdd:
        return `set ${name}`;
      case OP.setDel:
        return `delete set ${name}`;
      case OP.setFlush:
        return `flush set ${name}`;
      case OP.elemAdd:
        return `add ${detail} elements to ${name}`;
      case OP.elemDel:
        return `delete ${detail} elements from ${name}`;
      case OP.ruleAdd:
        return `rule in ${name}: ${typeof detail === 'number' ? `#${detail}` : detail}`;
      case OP.ruleDel:
        return `delete rule ${detail} in ${name}`;
      default:
        return undefined;
    }
  }

  #need(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    // Only the op being written moves to the next part (all of it, so no op is split).
    const partial = this.#len - this.#opStart;
    const next = Buffer.allocUnsafe(Math.max(Math.min(PART_BYTES, 2 * this.#buf.length), 2 * (partial + n)));
    this.#buf.copy(next, 0, this.#opStart, this.#len);
    if (this.#opStart > 0) this.#parts.push(this.#buf.subarray(0, this.#opStart));
    this.#buf = next;
    this.#len = partial;
    this.#opStart = 0;
  }
  #u8(v: number) {
    this.#need(1);
    this.#buf[this.#len++] = v;
  }
  #u16(v: number) {
    this.#need(2);
    this.#buf.writeUInt16LE(v, this.#len);
    this.#len += 2;
  }
  #u32(v: number) {
    this.#need(4);
    this.#buf.writeUInt32LE(v >>> 0, this.#len);
    this.#len += 4;
  }
  #i32(v: number) {
    this.#need(4);
    this.#buf.writeInt32LE(v, this.#len);
    this.#len += 4;
  }
  #u64(v: bigint) {
    this.#need(8);
    this.#buf.writeBigUInt64LE(v, this.#len);
    this.#len += 8;
  }
  // Names (tables, chains, sets, expressions) are ASCII: copied a char at a time, without
  // the two native calls (byteLength, write) a string cost; anything else goes as UTF-8.
  #str(s: string) {
    const n = s.length;
    this.#need(2 + n);
    const buf = this.#buf;
    const at = this.#len + 2;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) return this.#utf8(s);
      buf[at + i] = c;
    }
    buf.writeUInt16LE(n, this.#len);
    this.#len = at + n;
  }
  #utf8(s: string) {
    const n = Buffer.byteLength(s);
    this.#u16(n);
    this.#need(n);
    this.#len += this.#buf.write(s, this.#len);
  }
  #bytes(b: Uint8Array) {
    const n = b.length;
    this.#u32(n);
    this.#need(n);
    // Most values are a register or a code: a loop beats set()'s call for those.
    if (n <= 16) for (let i = 0; i < n; i++) this.#buf[this.#len + i] = b[i] as number;
    else this.#buf.set(b, this.#len);
    this.#len += n;
  }
  // Decoded here, not by Buffer#write(hex): a native call per key cost 5x as much on a
  // cold apply's hundreds of thousands of elements.
  #hex(hex: string) {
    const n = hex.length >> 1;
    if (hex.length !== n * 2) throw new Error(`OpWriter: element key "${hex.slice(0, 40)}" is not hex bytes`);
    this.#u32(n);
    this.#need(n);
    const buf = this.#buf;
    for (let i = 0; i < n; i++) {
      const hi = nibble(hex.charCodeAt(2 * i));
      const lo = nibble(hex.charCodeAt(2 * i + 1));
      if ((hi | lo) < 0) throw new Error(`OpWriter: element key "${hex.slice(0, 40)}" is not hex bytes`);
      buf[this.#len + i] = (hi << 4) | lo;
    }
    this.#len += n;
  }
  #head(op: number, family: NftFamily, name: string, detail?: string | number | bigint) {
    this.#opStart = this.#len;
    this.#u8(op);
    this.#u8(NFPROTO[family]);
    this.#u32(this.#kinds.length);
    this.#kinds.push(op);
    this.#names.push(name);
    this.#details.push(detail);
  }

  tableAdd(f: NftFamily, table: string) {
    this.#head(OP.tableAdd, f, table);
    this.#str(table);
  }
  tableDel(f: NftFamily, table: string) {
    this.#head(OP.tableDel, f, table);
    this.#str(table);
  }
  chainAdd(f: NftFamily, table: string, chain: string, base?: { hook: number; prio: number; type: string }) {
    this.#head(OP.chainAdd, f, chain);
    this.#str(table);
    this.#str(chain);
    this.#u8(base ? 1 : 0);
    if (base) {
      this.#u32(base.hook);
      this.#i32(base.prio);
      this.#str(base.type);
      this.#u32(1); // policy accept: we only ever decide by verdict
    }
  }
  chainFlush(f: NftFamily, table: string, chain: string) {
    this.#head(OP.chainFlush, f, chain);
    this.#str(table);
    this.#str(chain);
  }
  chainDel(f: NftFamily, table: string, chain: string) {
    this.#head(OP.chainDel, f, chain);
    this.#str(table);
    this.#str(chain);
  }
  setAdd(f: NftFamily, table: string, set: string, id: number, spec: SetSpec) {
    this.#head(OP.setAdd, f, set);
    this.#str(table);
    this.#str(set);
    this.#u32(id);
    this.#u32(spec.flags);
    this.#u32(spec.keyType);
    this.#u32(spec.keyLen);
    this.#u32(spec.dataType ?? 0);
    this.#u32(spec.dataLen ?? 0);
    this.#bytes(spec.udata ?? new Uint8Array(0));
  }
  setDel(f: NftFamily, table: string, set: string) {
    this.#head(OP.setDel, f, set);
    this.#str(table);
    this.#str(set);
  }
  setFlush(f: NftFamily, table: string, set: string) {
    this.#head(OP.setFlush, f, set);
    this.#str(table);
    this.#str(set);
  }
  elems(add: boolean, f: NftFamily, table: string, set: string, setId: number, elems: readonly ElemSpec[]) {
    this.#head(add ? OP.elemAdd : OP.elemDel, f, set, elems.length);
    this.#str(table);
    this.#str(set);
    this.#u32(setId);
    this.#u32(elems.length);
    for (const e of elems) {
      this.#hex(e.key);
      this.#u32(e.flags);
      this.#u8(e.verdict ? 1 : 0);
      if (e.verdict) {
        this.#i32(e.verdict.code);
        this.#str(e.verdict.chain);
      }
    }
  }
  /**
   * `udata`: the rule's userdata, or its comment (written as the comment TLV `nft list`
   * shows). `what`: the rule's own comment, or its position in the chain (from 1).
   */
  ruleAdd(
    f: NftFamily,
    table: string,
    chain: string,
    udata: Uint8Array | string,
    exprs: readonly Expr[],
    what: string | number,
  ) {
    this.#head(OP.ruleAdd, f, chain, what);
    this.#str(table);
    this.#str(chain);
    if (typeof udata === 'string') this.#commentUdata(udata);
    else this.#bytes(udata);
    this.#u16(exprs.length);
    for (let i = 0; i < exprs.length; i++) this.#expr(exprs[i] as Expr);
  }
  // The comment TLV in place, not in a Buffer of its own per rule (100,000 of them in a
  // cold plan, for the scavenger). Our comments are ASCII (render/comments.ts escapes the
  // rest); anything else goes as UTF-8.
  #commentUdata(comment: string) {
    const n = comment.length;
    let ascii = n <= 250;
    for (let i = 0; ascii && i < n; i++) ascii = comment.charCodeAt(i) < 0x80;
    if (!ascii) return this.#bytes(commentTlv(comment));
    this.#need(4 + n + 3);
    const buf = this.#buf;
    let p = this.#len;
    buf.writeUInt32LE(n + 3, p);
    p += 4;
    buf[p++] = UDATA_RULE_COMMENT;
    buf[p++] = n + 1;
    for (let i = 0; i < n; i++) buf[p++] = comment.charCodeAt(i);
    buf[p++] = 0;
    this.#len = p;
  }
  // An expression in one write: its size first, then its bytes stored one by one. Written
  // a field at a time, each with a call and a bounds check, the rules' encoding was half
  // of a cold plan (2.2 µs of a rule's ~4.2 µs, 100,000 rules; ~1.8 µs now). Expression
  // names are exprs.ts's ASCII constants.
  #expr(e: Expr) {
    const name = e.name;
    const attrs = e.attrs;
    let size = 4 + name.length;
    for (let i = 0; i < attrs.length; i++) {
      const v = (attrs[i] as [number, Uint8Array | string])[1];
      size += 6 + (typeof v === 'string' ? v.length + 1 : v.length);
    }
    this.#need(size);
    const buf = this.#buf;
    let p = this.#len;
    buf[p++] = name.length & 0xff;
    buf[p++] = name.length >>> 8;
    for (let i = 0; i < name.length; i++) buf[p++] = name.charCodeAt(i);
    buf[p++] = attrs.length & 0xff;
    buf[p++] = attrs.length >>> 8;
    for (let i = 0; i < attrs.length; i++) {
      const [id, v] = attrs[i] as [number, Uint8Array | string];
      buf[p++] = id & 0xff;
      buf[p++] = id >>> 8;
      // A string is a C string: latin1 with its NUL, as Buffer.from(`${v}\0`, 'latin1').
      const n = typeof v === 'string' ? v.length + 1 : v.length;
      buf[p++] = n & 0xff;
      buf[p++] = (n >>> 8) & 0xff;
      buf[p++] = (n >>> 16) & 0xff;
      buf[p++] = n >>> 24;
      if (typeof v === 'string') {
        for (let j = 0; j < v.length; j++) buf[p++] = v.charCodeAt(j) & 0xff;
        buf[p++] = 0;
      } else if (n <= 16) for (let j = 0; j < n; j++) buf[p++] = v[j] as number;
      else {
        buf.set(v, p);
        p += n;
      }
    }
    this.#len = p;
  }
  ruleDel(f: NftFamily, table: string, chain: string, handle: bigint) {
    this.#head(OP.ruleDel, f, chain, handle);
    this.#str(table);
    this.#str(chain);
    this.#u64(handle);
  }

  /** The stream's parts in order (what nftCommit takes), each holding whole ops. */
  parts(): Uint8Array[] {
    return [...this.#parts, this.#buf.subarray(0, this.#len)];
  }

  /** The stream as one array (a copy when it spans parts). */
  bytes(): Uint8Array {
    return this.#parts.length ? Buffer.concat(this.parts()) : this.#buf.subarray(0, this.#len);
  }
}

/** A rule's comment as its userdata: the TLV `nft list` shows (type, length, the UTF-8 bytes and a NUL). */
export function commentTlv(comment: string): Buffer {
  const n = Buffer.byteLength(comment) + 1;
  const out = Buffer.allocUnsafe(2 + n);
  out[0] = UDATA_RULE_COMMENT;
  out[1] = n;
  out.write(comment, 2, 'utf8');
  out[1 + n] = 0;
  return out;
}
