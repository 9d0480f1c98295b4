// The iptables-nft transport. Layout facts (checked against iptables-nft-restore 1.8.9 by
// test/kernel/iptables-native.test.ts, expression for expression):
// - tables and builtin chains are made on first use, with iptables-nft's hooks,
//   priorities, types and policy accept; an existing chain is never redeclared (its
//   policy may be someone else's, e.g. docker's FORWARD DROP);
// - a rule is: interfaces (meta iifname/oifname + cmp, a trailing '+' comparing the
//   prefix only), protocol (meta l4proto), addresses (payload of the whole bytes of the
//   prefix, or all 4/16 bytes with a bitwise when the prefix ends inside a byte), then
//   each match (mark and limit in native expressions, the others as xt compat matches),
//   a counter, and the target (immediate verdicts, xt compat targets);
// - `:chain` makes the chain or flushes it; -D finds the rule by its comment and verdict
//   (palisade deletes only its own rules from builtin chains), consecutive -I 1..k become head inserts in
//   reverse order.
#include "iptc/nft.h"

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/x_tables.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <set>

#include "nft/batch_builder.h"
#include "nft/dump.h"
#include "xt/encode.h"
#include "xt/restore.h"

namespace palisade::iptc {
namespace {

using nft::BatchBuilder;
using nft::ChainPtr;
using nft::Check;
using nft::RulePtr;
using nft::TablePtr;

struct Builtin {
  const char* table;
  const char* chain;
  uint32_t hook;
  int32_t prio;
  const char* type;
};

// iptables-nft's builtin chains (the same for IPv4 and IPv6).
const Builtin kBuiltins[] = {
    {"raw", "PREROUTING", NF_INET_PRE_ROUTING, -300, "filter"},
    {"raw", "OUTPUT", NF_INET_LOCAL_OUT, -300, "filter"},
    {"mangle", "PREROUTING", NF_INET_PRE_ROUTING, -150, "filter"},
    {"mangle", "INPUT", NF_INET_LOCAL_IN, -150, "filter"},
    {"mangle", "FORWARD", NF_INET_FORWARD, -150, "filter"},
    {"mangle", "OUTPUT", NF_INET_LOCAL_OUT, -150, "route"},
    {"mangle", "POSTROUTING", NF_INET_POST_ROUTING, -150, "filter"},
    {"filter", "INPUT", NF_INET_LOCAL_IN, 0, "filter"},
    {"filter", "FORWARD", NF_INET_FORWARD, 0, "filter"},
    {"filter", "OUTPUT", NF_INET_LOCAL_OUT, 0, "filter"},
    {"nat", "PREROUTING", NF_INET_PRE_ROUTING, -100, "nat"},
    {"nat", "INPUT", NF_INET_LOCAL_IN, 100, "nat"},
    {"nat", "OUTPUT", NF_INET_LOCAL_OUT, -100, "nat"},
    {"nat", "POSTROUTING", NF_INET_POST_ROUTING, 100, "nat"},
};

const Builtin* FindBuiltin(const std::string& table, const std::string& chain) {
  for (const auto& b : kBuiltins)
    if (table == b.table && chain == b.chain) return &b;
  return nullptr;
}

struct KernelRule {
  uint64_t handle = 0;
  bool hasComment = false;
  std::string comment;
  bool hasVerdict = false;
  int32_t verdict = 0;
  std::string chain;
};

struct KernelTable {
  bool exists = false;
  std::set<std::string> chains;
  std::map<std::string, std::vector<KernelRule>> rules;
};

// ---- reading what the kernel has ----

int ListChains(nft::NlSocket& sock, uint8_t family, const std::string& table, KernelTable* out) {
  return nft::DumpRequest(
      sock, NFT_MSG_GETCHAIN, family, [](nlmsghdr*) {},
      [&](const nlmsghdr* h) {
        nftnl_chain* c = nftnl_chain_alloc();
        if (!c) return MNL_CB_ERROR;
        if (nftnl_chain_nlmsg_parse(h, c) == 0 && table == nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE)) {
          out->exists = true;
          out->chains.insert(nftnl_chain_get_str(c, NFTNL_CHAIN_NAME));
        }
        nftnl_chain_free(c);
        return MNL_CB_OK;
      });
}

int ReadRule(nftnl_expr* e, void* data) {
  auto* k = static_cast<KernelRule*>(data);
  const char* name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
  if (!k->hasComment && !std::strcmp(name, "match") &&
      !std::strcmp(nftnl_expr_get_str(e, NFTNL_EXPR_MT_NAME), "comment")) {
    uint32_t len = 0;
    const char* info = static_cast<const char*>(nftnl_expr_get(e, NFTNL_EXPR_MT_INFO, &len));
    k->hasComment = true;
    k->comment.assign(info, info ? strnlen(info, len) : 0);
  } else if (!std::strcmp(name, "immediate") && nftnl_expr_is_set(e, NFTNL_EXPR_IMM_VERDICT)) {
    k->hasVerdict = true;
    k->verdict = static_cast<int32_t>(nftnl_expr_get_u32(e, NFTNL_EXPR_IMM_VERDICT));
    if (nftnl_expr_is_set(e, NFTNL_EXPR_IMM_CHAIN)) k->chain = nftnl_expr_get_str(e, NFTNL_EXPR_IMM_CHAIN);
  }
  return 0;
}

int ListRules(nft::NlSocket& sock, uint8_t family, const std::string& table, const std::string& chain,
              std::vector<KernelRule>* out) {
  return nft::DumpRequest(
      sock, NFT_MSG_GETRULE, family,
      [&](nlmsghdr* h) {
        RulePtr r(nftnl_rule_alloc());
        if (!r) return;
        nftnl_rule_set_str(r.get(), NFTNL_RULE_TABLE, table.c_str());
        nftnl_rule_set_str(r.get(), NFTNL_RULE_CHAIN, chain.c_str());
        nftnl_rule_nlmsg_build_payload(h, r.get());
      },
      [&](const nlmsghdr* h) {
        RulePtr r(nftnl_rule_alloc());
        if (!r) return MNL_CB_ERROR;
        if (nftnl_rule_nlmsg_parse(h, r.get()) == 0 && chain == nftnl_rule_get_str(r.get(), NFTNL_RULE_CHAIN) &&
            table == nftnl_rule_get_str(r.get(), NFTNL_RULE_TABLE)) {
          KernelRule k;
          k.handle = nftnl_rule_get_u64(r.get(), NFTNL_RULE_HANDLE);
          nftnl_expr_foreach(r.get(), ReadRule, &k);
          out->push_back(std::move(k));
        }
        return MNL_CB_OK;
      });
}

// ---- building a rule as iptables-nft does ----

class RuleWriter {
 public:
  explicit RuleWriter(nftnl_rule* r) : r_(r) {}

  nftnl_expr* Expr(const char* name) {
    nftnl_expr* e = nftnl_expr_alloc(name);
    Check(e);
    nftnl_rule_add_expr(r_, e);  // the rule owns it from here
    return e;
  }
  void Meta(uint32_t key) {
    nftnl_expr* e = Expr("meta");
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
  }
  void Cmp(bool neq, const void* data, uint32_t len) {
    nftnl_expr* e = Expr("cmp");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, neq ? NFT_CMP_NEQ : NFT_CMP_EQ);
    nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
  }
  void Payload(uint32_t offset, uint32_t len) {
    nftnl_expr* e = Expr("payload");
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
  }
  void Bitwise(const void* mask, uint32_t len) {
    static const uint8_t kZero[16] = {};
    nftnl_expr* e = Expr("bitwise");
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, kZero, len);
  }

  void Iface(uint32_t key, const xt::Iface& i) {
    if (i.name.empty()) return;
    Meta(key);
    bool prefix = i.name.back() == '+';
    // With its NUL for an exact name; the characters before the '+' for a prefix.
    Cmp(i.inv, i.name.c_str(), static_cast<uint32_t>(prefix ? i.name.size() - 1 : i.name.size() + 1));
  }

  // As iptables-nft's add_addr: the whole bytes of the prefix, or the whole address
  // through a mask when the prefix ends inside a byte.
  void Addr(const xt::Addr& a, uint32_t offset, uint32_t size) {
    if (!a.prefix) return;
    uint8_t mask[16] = {}, data[16] = {};
    for (uint32_t i = 0; i < size; i++) {
      int bits = static_cast<int>(a.prefix) - static_cast<int>(i * 8);
      mask[i] = bits >= 8 ? 0xff : bits <= 0 ? 0 : static_cast<uint8_t>(0xff << (8 - bits));
      data[i] = a.bytes[i] & mask[i];
    }
    uint32_t full = a.prefix / 8;
    bool bitwise = a.prefix % 8 != 0;
    uint32_t len = bitwise ? size : full;
    Payload(offset, len);
    if (bitwise) Bitwise(mask, len);
    Cmp(a.inv, data, len);
  }

  void Compat(const char* kind, const xt::Blob& b) {
    // The info as iptables hands it over, padded to the x_tables alignment. libnftnl keeps
    // (and frees) the pointer it is given for a match's or target's info: heap, not stack.
    void* info = std::calloc(1, XT_ALIGN(b.size));
    Check(info);
    std::memcpy(info, b.data, b.size);
    bool target = !std::strcmp(kind, "target");
    nftnl_expr* e = Expr(kind);
    // The match and target attributes are alike but of two enums.
    auto attr = [&](int tg, int mt) { return static_cast<uint16_t>(target ? tg : mt); };
    nftnl_expr_set_str(e, attr(NFTNL_EXPR_TG_NAME, NFTNL_EXPR_MT_NAME), b.name);
    nftnl_expr_set_u32(e, attr(NFTNL_EXPR_TG_REV, NFTNL_EXPR_MT_REV), b.revision);
    nftnl_expr_set(e, attr(NFTNL_EXPR_TG_INFO, NFTNL_EXPR_MT_INFO), info, XT_ALIGN(b.size));
  }

  void Mark(const xt::Match& m) {
    Meta(NFT_META_MARK);
    if (m.mask != 0xffffffff) Bitwise(&m.mask, sizeof m.mask);
    Cmp(m.inv, &m.value, sizeof m.value);
  }

  // As iptables-nft turns an xt_rateinfo into a limit: the coarsest unit that still
  // gives a whole rate.
  void Limit(const xt::Match& m) {
    static const uint64_t kMult[] = {10000ull * 24 * 60 * 60, 10000ull * 60 * 60, 10000ull * 60, 10000ull};
    uint64_t avg = m.value;
    size_t i = 1;
    for (; i < 4; i++)
      if (avg > kMult[i] || kMult[i] / avg < kMult[i] % avg) break;
    nftnl_expr* e = Expr("limit");
    nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_RATE, kMult[i - 1] / avg);
    nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_UNIT, kMult[i - 1] / 10000);
    nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_BURST, m.mask);
    nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_TYPE, NFT_LIMIT_PKTS);
    nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_FLAGS, 0);
  }

  void Counter() {
    nftnl_expr* e = Expr("counter");
    nftnl_expr_set_u64(e, NFTNL_EXPR_CTR_BYTES, 0);
    nftnl_expr_set_u64(e, NFTNL_EXPR_CTR_PACKETS, 0);
  }

  void Verdict(const xt::Rule& r) {
    const std::string& n = r.target.name;
    nftnl_expr* e = Expr("immediate");
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
    if (n == "ACCEPT")
      nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, NF_ACCEPT);
    else if (n == "DROP")
      nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, NF_DROP);
    else if (n == "RETURN")
      nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, static_cast<uint32_t>(NFT_RETURN));
    else {
      nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, static_cast<uint32_t>(r.isGoto ? NFT_GOTO : NFT_JUMP));
      nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, n.c_str());
    }
  }

 private:
  nftnl_rule* r_;
};

void Translate(const xt::Rule& r, int family, xt::SetIndex& sets, nftnl_rule* out) {
  RuleWriter w(out);
  w.Iface(NFT_META_IIFNAME, r.in);
  w.Iface(NFT_META_OIFNAME, r.out);
  if (r.proto) {
    w.Meta(NFT_META_L4PROTO);
    w.Cmp(r.protoInv, &r.proto, 1);
  }
  // The addresses' offsets in the IPv4 and IPv6 headers.
  w.Addr(r.src, family == 4 ? 12 : 8, family == 4 ? 4 : 16);
  w.Addr(r.dst, family == 4 ? 16 : 24, family == 4 ? 4 : 16);
  for (const auto& m : r.matches) {
    if (m.kind == xt::MatchKind::Mark)
      w.Mark(m);
    else if (m.kind == xt::MatchKind::Limit)
      w.Limit(m);
    else
      w.Compat("match", xt::EncodeMatch(m, family, sets));
  }
  w.Counter();
  if (r.target.kind == xt::TargetKind::Standard)
    w.Verdict(r);
  else
    w.Compat("target", xt::EncodeTarget(r.target, family));
  // What nft_compat hands the xt matches' checks as the entry's protocol (multiport needs it).
  nftnl_rule_set_u32(out, NFTNL_RULE_COMPAT_PROTO, r.proto);
  nftnl_rule_set_u32(out, NFTNL_RULE_COMPAT_FLAGS, r.protoInv ? NFT_RULE_COMPAT_F_INV : 0);
}

// ---- the batch ----

struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class TxBuilder {
 public:
  TxBuilder(BatchBuilder& b, uint8_t family, int ipFamily, xt::SetIndex& sets)
      : b_(b), family_(family), ip_(ipFamily), sets_(sets) {}

  void Table(const xt::RestoreTable& t, KernelTable& k) {
    table_ = t.name;
    kernel_ = &k;
    touched_.clear();
    consumed_.clear();
    if (!k.exists) {
      TablePtr tp(nftnl_table_alloc());
      Check(tp.get());
      nftnl_table_set_str(tp.get(), NFTNL_TABLE_NAME, table_.c_str());
      nftnl_table_set_u32(tp.get(), NFTNL_TABLE_FAMILY, family_);
      nlmsghdr* h = b_.Header(NFT_MSG_NEWTABLE, family_, NLM_F_CREATE, t.tag);
      nftnl_table_nlmsg_build_payload(h, tp.get());
      b_.Commit(h);
      k.exists = true;
    }
    tag_ = t.tag;
    const auto& ops = t.ops;
    for (size_t i = 0; i < ops.size(); i++) {
      tag_ = ops[i].tag;
      // A run of -I c 1, -I c 2, ... -I c k: the same rules inserted at the head, last first.
      size_t run = 0;
      if (ops[i].op == xt::kInsert && ops[i].pos == 1) {
        while (i + run + 1 < ops.size() && ops[i + run + 1].op == xt::kInsert &&
               ops[i + run + 1].chain == ops[i].chain && ops[i + run + 1].pos == run + 2)
          run++;
        for (size_t j = i + run + 1; j-- > i;) {
          tag_ = ops[j].tag;
          Rule(ops[j], NLM_F_CREATE, 0);
        }
        i += run;
        continue;
      }
      Op(ops[i]);
    }
  }

  /** The op being built (what a thrown RuleError is about). */
  uint32_t tag() const { return tag_; }

 private:
  void Op(const xt::RestoreOp& o) {
    switch (o.op) {
      case xt::kDeclare:
        if (Known(o.chain))
          Flush(o);
        else
          Chain(NFT_MSG_NEWCHAIN, o.chain, o.tag, nullptr);
        break;
      case xt::kAppend:
        Rule(o, NLM_F_CREATE | NLM_F_APPEND, 0);
        break;
      case xt::kInsert:
        Insert(o);
        break;
      case xt::kDelete:
        Delete(o);
        break;
      case xt::kFlush:
        Flush(o);
        break;
      case xt::kDestroy:
        Chain(NFT_MSG_DELCHAIN, o.chain, o.tag, nullptr);
        kernel_->chains.erase(o.chain);
        break;
      default:
        throw BadOps("unknown iptables op");
    }
  }

  bool Known(const std::string& chain) const { return kernel_->chains.count(chain) > 0; }

  void Chain(uint16_t type, const std::string& name, uint32_t tag, const Builtin* base) {
    ChainPtr c(nftnl_chain_alloc());
    Check(c.get());
    nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TABLE, table_.c_str());
    nftnl_chain_set_str(c.get(), NFTNL_CHAIN_NAME, name.c_str());
    nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_FAMILY, family_);
    if (base) {
      nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_HOOKNUM, base->hook);
      nftnl_chain_set_s32(c.get(), NFTNL_CHAIN_PRIO, base->prio);
      nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TYPE, base->type);
      nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_POLICY, NF_ACCEPT);
    }
    nlmsghdr* h = b_.Header(type, family_, type == NFT_MSG_NEWCHAIN ? NLM_F_CREATE : 0, tag);
    nftnl_chain_nlmsg_build_payload(h, c.get());
    b_.Commit(h);
    if (type == NFT_MSG_NEWCHAIN) kernel_->chains.insert(name);
  }

  // A builtin chain iptables-nft would make on first use.
  void EnsureChain(const xt::RestoreOp& o) {
    if (Known(o.chain)) return;
    if (const Builtin* b = FindBuiltin(table_, o.chain)) Chain(NFT_MSG_NEWCHAIN, o.chain, o.tag, b);
  }

  void Flush(const xt::RestoreOp& o) {
    RulePtr r(nftnl_rule_alloc());
    Check(r.get());
    nftnl_rule_set_str(r.get(), NFTNL_RULE_TABLE, table_.c_str());
    nftnl_rule_set_str(r.get(), NFTNL_RULE_CHAIN, o.chain.c_str());
    nftnl_rule_set_u32(r.get(), NFTNL_RULE_FAMILY, family_);
    nlmsghdr* h = b_.Header(NFT_MSG_DELRULE, family_, 0, o.tag);
    nftnl_rule_nlmsg_build_payload(h, r.get());
    b_.Commit(h);
    touched_.insert(o.chain);
  }

  void Rule(const xt::RestoreOp& o, uint16_t flags, uint64_t after) {
    EnsureChain(o);
    RulePtr r(nftnl_rule_alloc());
    Check(r.get());
    nftnl_rule_set_str(r.get(), NFTNL_RULE_TABLE, table_.c_str());
    nftnl_rule_set_str(r.get(), NFTNL_RULE_CHAIN, o.chain.c_str());
    nftnl_rule_set_u32(r.get(), NFTNL_RULE_FAMILY, family_);
    if (after) nftnl_rule_set_u64(r.get(), NFTNL_RULE_POSITION, after);
    Translate(o.rule, ip_, sets_, r.get());
    nlmsghdr* h = b_.Header(NFT_MSG_NEWRULE, family_, flags, o.tag);
    nftnl_rule_nlmsg_build_payload(h, r.get());
    b_.Commit(h);
    touched_.insert(o.chain);
  }

  // -I c N (N > 1) outside a run: after the kernel's rule N-1, when nothing in this batch
  // changed the chain before.
  void Insert(const xt::RestoreOp& o) {
    auto it = kernel_->rules.find(o.chain);
    if (touched_.count(o.chain) || it == kernel_->rules.end())
      throw Unsupported("an insert at a position inside a chain this transaction already changed");
    const auto& rules = it->second;
    if (o.pos - 1 > rules.size()) throw xt::RuleError("the insert position is past the end of " + o.chain, ERANGE);
    if (o.pos - 1 == rules.size()) return Rule(o, NLM_F_CREATE | NLM_F_APPEND, 0);
    Rule(o, NLM_F_CREATE | NLM_F_APPEND, rules[o.pos - 2].handle);
  }

  // -D c <rule>: the first kernel rule with the same comment and verdict, as palisade's
  // hooks are told apart. A rule with an extension target (FORWARD's appended MARK) has
  // no verdict: it is found by its `cali:` hash comment alone, which only our rules carry
  // (iptables-nft may have written its target as native expressions or as xt compat).
  void Delete(const xt::RestoreOp& o) {
    std::string comment;
    bool hasComment = false;
    for (const auto& m : o.rule.matches)
      if (m.kind == xt::MatchKind::Comment) {
        comment = m.text;
        hasComment = true;
        break;
      }
    const auto& t = o.rule.target;
    bool extension = t.kind != xt::TargetKind::Standard;
    if (extension && (!hasComment || comment.rfind("cali:", 0) != 0))
      throw Unsupported("a delete of a rule with an extension target and no cali: hash");
    int32_t verdict = t.name == "ACCEPT"   ? NF_ACCEPT
                      : t.name == "DROP"   ? NF_DROP
                      : t.name == "RETURN" ? NFT_RETURN
                      : o.rule.isGoto      ? NFT_GOTO
                                           : NFT_JUMP;
    std::string chain = !extension && (verdict == NFT_JUMP || verdict == NFT_GOTO) ? t.name : "";
    auto it = kernel_->rules.find(o.chain);
    if (it != kernel_->rules.end()) {
      for (const auto& k : it->second) {
        bool sameTarget = extension ? !k.hasVerdict : k.hasVerdict && k.verdict == verdict && k.chain == chain;
        if (consumed_.count(k.handle) || k.hasComment != hasComment || k.comment != comment || !sameTarget) continue;
        consumed_.insert(k.handle);
        RulePtr r(nftnl_rule_alloc());
        Check(r.get());
        nftnl_rule_set_str(r.get(), NFTNL_RULE_TABLE, table_.c_str());
        nftnl_rule_set_str(r.get(), NFTNL_RULE_CHAIN, o.chain.c_str());
        nftnl_rule_set_u32(r.get(), NFTNL_RULE_FAMILY, family_);
        nftnl_rule_set_u64(r.get(), NFTNL_RULE_HANDLE, k.handle);
        nlmsghdr* h = b_.Header(NFT_MSG_DELRULE, family_, 0, o.tag);
        nftnl_rule_nlmsg_build_payload(h, r.get());
        b_.Commit(h);
        touched_.insert(o.chain);
        return;
      }
    }
    throw xt::RuleError("no such rule in " + o.chain + " (does a matching rule exist in that chain?)", ENOENT);
  }

  BatchBuilder& b_;
  uint8_t family_;
  int ip_;
  xt::SetIndex& sets_;
  std::string table_;
  KernelTable* kernel_ = nullptr;
  std::set<std::string> touched_;
  std::set<uint64_t> consumed_;
  uint32_t tag_ = 0;
};

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Whether the table exists, and which of `names` it has: one request each.
int AskChains(nft::NlSocket& sock, uint8_t family, const std::string& table, const std::set<std::string>& names,
              KernelTable* out) {
  int e = nft::GetRequest(sock, NFT_MSG_GETTABLE, family, [&](nlmsghdr* h) {
    TablePtr t(nftnl_table_alloc());
    if (!t) return;
    nftnl_table_set_str(t.get(), NFTNL_TABLE_NAME, table.c_str());
    nftnl_table_nlmsg_build_payload(h, t.get());
  });
  if (e) return e;
  out->exists = true;
  for (const auto& name : names) {
    e = nft::GetRequest(sock, NFT_MSG_GETCHAIN, family, [&](nlmsghdr* h) {
      ChainPtr c(nftnl_chain_alloc());
      if (!c) return;
      nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TABLE, table.c_str());
      nftnl_chain_set_str(c.get(), NFTNL_CHAIN_NAME, name.c_str());
      nftnl_chain_nlmsg_build_payload(h, c.get());
    });
    if (e == 0)
      out->chains.insert(name);
    else if (e != ENOENT)
      return e;
  }
  return 0;
}

// Up to this many chains named in a table's ops are asked for by name; more (a cold
// restore declares thousands) are read in one dump of the family's chains. Under churn a
// restore names a few dozen in a table of 20,000 or more, whose dump took 19 ms.
constexpr size_t kAskChainsMax = 256;

// Which chains of each table the ops name exist, and the rules of chains a delete or a
// positioned insert needs. On a pooled socket: closing one makes nf_tables flush the frees
// of past commits under the commit mutex (nft/netlink.h).
int ReadKernel(const xt::RestoreTx& tx, uint8_t family, std::map<std::string, KernelTable>* out, std::string* what) {
  nft::PooledSocket lease;
  if (int e = lease.Open(what)) return e;
  nft::NlSocket& sock = lease.sock();
  sock.SizeFor(0, 4u << 20);
  for (const auto& t : tx.tables) {
    KernelTable& k = (*out)[t.name];
    std::set<std::string> named;
    for (const auto& o : t.ops) named.insert(o.chain);
    int e = named.size() <= kAskChainsMax ? AskChains(sock, family, t.name, named, &k)
                                          : ListChains(sock, family, t.name, &k);
    if (e && e != ENOENT) {
      *what = "listing the chains of " + t.name;
      return e;
    }
    for (const auto& o : t.ops) {
      bool needs = o.op == xt::kDelete || (o.op == xt::kInsert && o.pos > 1);
      if (!needs || !k.chains.count(o.chain) || k.rules.count(o.chain)) continue;
      if (int e = ListRules(sock, family, t.name, o.chain, &k.rules[o.chain]); e && e != ENOENT) {
        *what = "listing the rules of " + o.chain;
        return e;
      }
    }
  }
  lease.Reusable();
  return 0;
}

// The batch for `tx` against `kernel` into `b`; false (with res filled) when it cannot be built.
bool BuildTx(const xt::RestoreTx& tx, std::map<std::string, KernelTable>& kernel, BatchBuilder& b, xt::SetIndex& sets,
             NftApplyResult* res) {
  uint8_t family = tx.family == 4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
  TxBuilder builder(b, family, tx.family, sets);
  try {
    for (const auto& t : tx.tables) {
      builder.Table(t, kernel[t.name]);
      res->ops += static_cast<uint32_t>(t.ops.size());
    }
  } catch (const Unsupported& e) {
    res->unsupported = e.what();
    return false;
  } catch (const xt::RuleError& e) {
    res->failed = true;
    res->failedTag = builder.tag();
    res->failedErrno = e.errnum;
    res->failedWhat = e.what();
    return false;
  }
  b.End();
  res->messages = static_cast<uint32_t>(b.messages());
  return true;
}

}  // namespace

NftApplyResult BuildOnlyNft(const uint8_t* ops, size_t len) {
  NftApplyResult res;
  try {
    xt::RestoreTx tx = xt::DecodeRestore(ops, len);
    std::map<std::string, KernelTable> none;
    BatchBuilder b(1);
    xt::SetIndex sets = xt::SetIndex::Offline(tx.family);
    BuildTx(tx, none, b, sets, &res);
  } catch (const BadOps& e) {
    res.badInput = e.what();
  }
  return res;
}

NftApplyResult ApplyNft(const uint8_t* ops, size_t len) {
  NftApplyResult res;
  auto t0 = std::chrono::steady_clock::now();
  xt::RestoreTx tx;
  try {
    tx = xt::DecodeRestore(ops, len);
  } catch (const BadOps& e) {
    res.badInput = e.what();
    return res;
  }
  if (tx.tables.empty()) return res;
  uint8_t family = tx.family == 4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
  auto t1 = std::chrono::steady_clock::now();
  std::map<std::string, KernelTable> kernel;
  if (int e = ReadKernel(tx, family, &kernel, &res.sysWhat)) {
    res.sysErrno = e;
    return res;
  }
  res.readMs = Since(t1);
  auto t2 = std::chrono::steady_clock::now();
  BatchBuilder b(static_cast<uint32_t>(time(nullptr)));
  xt::SetIndex sets(tx.family);
  if (!BuildTx(tx, kernel, b, sets, &res)) return res;
  res.prepareMs = std::chrono::duration<double, std::milli>(t1 - t0).count() + Since(t2);
  nft::CommitResult out;
  out.bytes = b.buffer().size();
  auto t3 = std::chrono::steady_clock::now();
  if (b.messages()) nft::SendAndCollect(b, &out);
  res.commitMs = Since(t3);
  if (out.sysErrno) {
    res.sysErrno = out.sysErrno;
    res.sysWhat = out.sysWhat;
    return res;
  }
  if (!out.failures.empty()) {
    res.failed = true;
    res.failedTag = out.failures[0].tag;
    res.failedErrno = out.failures[0].err;
    res.failedWhat = std::string("the kernel refused it: ") + std::strerror(out.failures[0].err);
  }
  return res;
}

}  // namespace palisade::iptc
