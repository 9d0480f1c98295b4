#include "nft/batch.h"

#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <unordered_map>

#include "common/netlink_read.h"
#include "nft/attrs.h"
#include "nft/batch_builder.h"
#include "nft/netlink.h"
#include "nft/ops.h"
#include "nft/reader.h"

namespace palisade::nft {
namespace {

// Elements per NEWSETELEM message: keeps each message well inside the 64 KiB nest limit.
constexpr uint32_t kElemsPerMessage = 256;

void TableOp(BatchBuilder& b, Reader& r, uint8_t family, uint32_t tag, bool add) {
  std::string name = r.str();
  TablePtr t(nftnl_table_alloc());
  Check(t.get());
  nftnl_table_set_str(t.get(), NFTNL_TABLE_NAME, name.c_str());
  nftnl_table_set_u32(t.get(), NFTNL_TABLE_FAMILY, family);
  nlmsghdr* h = b.Header(add ? NFT_MSG_NEWTABLE : NFT_MSG_DELTABLE, family, add ? NLM_F_CREATE : 0, tag);
  nftnl_table_nlmsg_build_payload(h, t.get());
  b.Commit(h);
}

void ChainOp(BatchBuilder& b, Reader& r, uint8_t op, uint8_t family, uint32_t tag) {
  std::string table = r.str();
  std::string name = r.str();
  if (op == kChainFlush) {
    RulePtr rule(nftnl_rule_alloc());
    Check(rule.get());
    nftnl_rule_set_str(rule.get(), NFTNL_RULE_TABLE, table.c_str());
    nftnl_rule_set_str(rule.get(), NFTNL_RULE_CHAIN, name.c_str());
    nftnl_rule_set_u32(rule.get(), NFTNL_RULE_FAMILY, family);
    nlmsghdr* h = b.Header(NFT_MSG_DELRULE, family, 0, tag);
    nftnl_rule_nlmsg_build_payload(h, rule.get());
    b.Commit(h);
    return;
  }
  ChainPtr c(nftnl_chain_alloc());
  Check(c.get());
  nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TABLE, table.c_str());
  nftnl_chain_set_str(c.get(), NFTNL_CHAIN_NAME, name.c_str());
  nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_FAMILY, family);
  if (op == kChainAdd && r.u8()) {
    uint32_t hook = r.u32();
    int32_t prio = r.i32();
    std::string type = r.str();
    uint32_t policy = r.u32();
    nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_HOOKNUM, hook);
    nftnl_chain_set_s32(c.get(), NFTNL_CHAIN_PRIO, prio);
    nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TYPE, type.c_str());
    nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_POLICY, policy);
  }
  nlmsghdr* h =
      b.Header(op == kChainAdd ? NFT_MSG_NEWCHAIN : NFT_MSG_DELCHAIN, family, op == kChainAdd ? NLM_F_CREATE : 0, tag);
  nftnl_chain_nlmsg_build_payload(h, c.get());
  b.Commit(h);
}

nftnl_set* NewSet(const std::string& table, const std::string& name, uint8_t family) {
  nftnl_set* s = nftnl_set_alloc();
  Check(s);
  nftnl_set_set_str(s, NFTNL_SET_TABLE, table.c_str());
  nftnl_set_set_str(s, NFTNL_SET_NAME, name.c_str());
  nftnl_set_set_u32(s, NFTNL_SET_FAMILY, family);
  return s;
}

void SetOp(BatchBuilder& b, Reader& r, uint8_t op, uint8_t family, uint32_t tag) {
  std::string table = r.str();
  std::string name = r.str();
  SetPtr s(NewSet(table, name, family));
  if (op == kSetAdd) {
    uint32_t id = r.u32(), flags = r.u32(), keyType = r.u32(), keyLen = r.u32(), dataType = r.u32(), dataLen = r.u32();
    uint32_t udLen;
    const uint8_t* ud = r.bytes(&udLen);
    if (udLen) nftnl_set_set_data(s.get(), NFTNL_SET_USERDATA, ud, udLen);
    if (id) nftnl_set_set_u32(s.get(), NFTNL_SET_ID, id);
    nftnl_set_set_u32(s.get(), NFTNL_SET_FLAGS, flags);
    nftnl_set_set_u32(s.get(), NFTNL_SET_KEY_TYPE, keyType);
    nftnl_set_set_u32(s.get(), NFTNL_SET_KEY_LEN, keyLen);
    if (flags & NFT_SET_MAP) {
      nftnl_set_set_u32(s.get(), NFTNL_SET_DATA_TYPE, dataType);
      nftnl_set_set_u32(s.get(), NFTNL_SET_DATA_LEN, dataLen);
    }
    nlmsghdr* h = b.Header(NFT_MSG_NEWSET, family, NLM_F_CREATE, tag);
    nftnl_set_nlmsg_build_payload(h, s.get());
    b.Commit(h);
    return;
  }
  // Delete the set, or (flush) all its elements: DELSETELEM without an element list.
  nlmsghdr* h = b.Header(op == kSetDel ? NFT_MSG_DELSET : NFT_MSG_DELSETELEM, family, 0, tag);
  if (op == kSetDel)
    nftnl_set_nlmsg_build_payload(h, s.get());
  else
    nftnl_set_elems_nlmsg_build_payload(h, s.get());
  b.Commit(h);
}

void ElemOp(BatchBuilder& b, Reader& r, uint8_t op, uint8_t family, uint32_t tag) {
  std::string table = r.str();
  std::string name = r.str();
  uint32_t id = r.u32();
  uint32_t n = r.u32();
  for (uint32_t done = 0; done < n || (n == 0 && done == 0);) {
    SetPtr s(NewSet(table, name, family));
    if (id) nftnl_set_set_u32(s.get(), NFTNL_SET_ID, id);
    uint32_t chunk = 0;
    for (; chunk < kElemsPerMessage && done < n; chunk++, done++) {
      // Owned here until the set takes it: a malformed element must not leak it (fuzzing found this).
      std::unique_ptr<nftnl_set_elem, void (*)(nftnl_set_elem*)> owned(nftnl_set_elem_alloc(), nftnl_set_elem_free);
      nftnl_set_elem* e = owned.get();
      Check(e);
      uint32_t keyLen;
      const uint8_t* key = r.bytes(&keyLen);
      // libnftnl copies a key into a 64-byte register (NFT_DATA_VALUE_MAXLEN).
      if (keyLen < 1 || keyLen > 64) throw BadInput("a set element key must be 1 to 64 bytes");
      nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, keyLen);
      uint32_t flags = r.u32();
      if (flags) nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_FLAGS, flags);
      if (r.u8()) {
        int32_t verdict = r.i32();
        std::string chain = r.str();
        nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_VERDICT, static_cast<uint32_t>(verdict));
        if (!chain.empty()) nftnl_set_elem_set_str(e, NFTNL_SET_ELEM_CHAIN, chain.c_str());
      }
      nftnl_set_elem_add(s.get(), owned.release());
    }
    if (chunk == 0) break;
    nlmsghdr* h = b.Header(op == kElemAdd ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM, family,
                           op == kElemAdd ? NLM_F_CREATE : 0, tag);
    nftnl_set_elems_nlmsg_build_payload(h, s.get());
    b.Commit(h);
  }
}

void RuleOp(BatchBuilder& b, Reader& r, uint8_t op, uint8_t family, uint32_t tag) {
  std::string table = r.str();
  std::string chain = r.str();
  RulePtr rule(nftnl_rule_alloc());
  Check(rule.get());
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_TABLE, table.c_str());
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_CHAIN, chain.c_str());
  nftnl_rule_set_u32(rule.get(), NFTNL_RULE_FAMILY, family);
  if (op == kRuleDel) {
    nftnl_rule_set_u64(rule.get(), NFTNL_RULE_HANDLE, r.u64());
    nlmsghdr* h = b.Header(NFT_MSG_DELRULE, family, 0, tag);
    nftnl_rule_nlmsg_build_payload(h, rule.get());
    b.Commit(h);
    return;
  }
  uint32_t udLen;
  const uint8_t* ud = r.bytes(&udLen);
  // The kernel keeps at most 256 bytes of rule userdata (NFT_USERDATA_MAXLEN).
  if (udLen > 256) throw BadInput("rule userdata longer than 256 bytes");
  if (udLen) nftnl_rule_set_data(rule.get(), NFTNL_RULE_USERDATA, ud, udLen);
  uint16_t nexpr = r.u16();
  for (uint16_t i = 0; i < nexpr; i++) {
    std::string name = r.str();
    nftnl_expr* e = nftnl_expr_alloc(name.c_str());
    if (!e) throw BadInput("unknown nftables expression \"" + name + "\"");
    nftnl_rule_add_expr(rule.get(), e);  // owned by the rule from here on
    uint16_t nattr = r.u16();
    uint64_t seen = 0;
    int32_t verdict = 0;
    for (uint16_t j = 0; j < nattr; j++) {
      uint16_t attr = r.u16();
      uint32_t len;
      const uint8_t* v = r.bytes(&len);
      const std::string problem = AttrProblem(name, attr, v, len);
      if (!problem.empty()) throw BadInput(problem);
      // libnftnl leaks the first copy of a string attribute set twice (found by fuzzing).
      if (attr < 64 && (seen >> attr & 1))
        throw BadInput("attribute " + std::to_string(attr) + " set twice in expression \"" + name + "\"");
      // libnftnl frees an immediate's chain only with a jump or goto verdict (found by
      // fuzzing): the chain must follow such a verdict, as the TS writer emits them.
      if (name == "immediate" && attr == NFTNL_EXPR_IMM_VERDICT) std::memcpy(&verdict, v, sizeof(verdict));
      if (name == "immediate" && attr == NFTNL_EXPR_IMM_CHAIN &&
          (!(seen >> NFTNL_EXPR_IMM_VERDICT & 1) || (verdict != NFT_JUMP && verdict != NFT_GOTO))) {
        throw BadInput("immediate.chain must follow a jump or goto immediate.verdict");
      }
      if (attr < 64) seen |= uint64_t{1} << attr;
      if (nftnl_expr_set(e, attr, v, len) < 0)
        throw BadInput("bad attribute " + std::to_string(attr) + " for expression \"" + name + "\"");
    }
  }
  nlmsghdr* h = b.Header(NFT_MSG_NEWRULE, family, NLM_F_CREATE | NLM_F_APPEND, tag);
  nftnl_rule_nlmsg_build_payload(h, rule.get());
  b.Commit(h);
}

}  // namespace

// Reads every answer: errors for failing messages, then the one ACK of the last message.
void Collect(NlSocket& sock, const BatchBuilder& b, CommitResult* out) {
  std::vector<char> buf(1 << 20);
  bool sawLast = false;
  int flags = 0;
  for (;;) {
    ssize_t n = RecvFromKernel(mnl_socket_get_fd(sock.get()), buf.data(), buf.size(), flags);
    if (n < 0) {
      if (errno == EINTR) continue;
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && sawLast) return;
      out->sysErrno = errno;
      out->sysWhat = "recv";
      return;
    }
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NlmsgOk(h, len); h = mnl_nlmsg_next(h, &len)) {
      if (h->nlmsg_type != NLMSG_ERROR || mnl_nlmsg_get_payload_len(h) < sizeof(nlmsgerr)) continue;
      auto* err = static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(h));
      uint32_t seq = err->msg.nlmsg_seq;
      uint32_t tag = UINT32_MAX;
      bool ours = b.TagOf(seq, &tag);
      if (err->error != 0) out->failures.push_back({tag, -err->error});
      // An error on the batch markers ends the exchange: nothing else will be answered.
      if (seq == b.lastSeq() || (!ours && err->error != 0)) sawLast = true;
    }
    // Once the last message is answered, take what else is queued without waiting.
    if (sawLast) flags = MSG_DONTWAIT;
  }
}

namespace {

// One part's ops into `b`; throws BadInput when they are malformed.
void BuildPart(const ByteSpan& part, BatchBuilder& b, CommitResult* out) {
  Reader r(part.data, part.size);
  while (!r.done()) {
    uint8_t op = r.u8();
    uint8_t family = r.u8();
    uint32_t tag = r.u32();
    out->ops++;
    switch (op) {
      case kTableAdd:
      case kTableDel:
        TableOp(b, r, family, tag, op == kTableAdd);
        break;
      case kChainAdd:
      case kChainFlush:
      case kChainDel:
        ChainOp(b, r, op, family, tag);
        break;
      case kSetAdd:
      case kSetDel:
      case kSetFlush:
        SetOp(b, r, op, family, tag);
        break;
      case kElemAdd:
      case kElemDel:
        ElemOp(b, r, op, family, tag);
        break;
      case kRuleAdd:
      case kRuleDel:
        RuleOp(b, r, op, family, tag);
        break;
      default:
        throw BadInput("unknown nft op " + std::to_string(op));
    }
  }
}

// The op stream into `b`; false (with out->badInput) when it is malformed.
// Each part holds whole ops: an op cut at a part's end is a truncated stream.
bool Build(const std::vector<ByteSpan>& parts, BatchBuilder& b, CommitResult* out) {
  try {
    for (const ByteSpan& part : parts) BuildPart(part, b, out);
  } catch (const BadInput& e) {
    out->badInput = e.what();
    return false;
  }
  b.End();
  out->messages = b.messages();
  out->bytes = b.buffer().size();
  return true;
}

}  // namespace

CommitResult BuildOnly(const uint8_t* ops, size_t len) {
  CommitResult out;
  BatchBuilder b(1);
  Build({ByteSpan{ops, len}}, b, &out);
  return out;
}

CommitResult Commit(const std::vector<ByteSpan>& parts) {
  CommitResult out;
  BatchBuilder b(static_cast<uint32_t>(time(nullptr)));
  if (!Build(parts, b, &out) || !out.messages) return out;
  SendAndCollect(b, &out);
  return out;
}

void SendAndCollect(BatchBuilder& b, CommitResult* out) {
  PooledSocket lease;
  if (int e = lease.Open(&out->sysWhat)) {
    out->sysErrno = e;
    return;
  }
  NlSocket& sock = lease.sock();
  sock.SizeFor(out->bytes, 4u << 20);
  // Never wait forever for an answer the kernel will not send.
  sock.ReceiveTimeout(30);
  iovec iov{b.buffer().data(), b.buffer().size()};
  sockaddr_nl snl{};
  snl.nl_family = AF_NETLINK;
  msghdr msg{};
  msg.msg_name = &snl;
  msg.msg_namelen = sizeof(snl);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (sendmsg(mnl_socket_get_fd(sock.get()), &msg, 0) < 0) {
    out->sysErrno = errno;
    out->sysWhat = "sendmsg";
    return;
  }
  Collect(sock, b, out);
  // Collect reads until the last message is answered and nothing else is queued.
  if (!out->sysErrno) lease.Reusable();
}

}  // namespace palisade::nft
