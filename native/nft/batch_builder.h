// The pieces of an nftables netlink batch every builder shares (the nft backend's op
// stream in batch.cc, the native iptables-nft transport in iptc/nft.cc): libnftnl object
// ownership, the batch buffer with each message's tag, and one send-and-collect.
#pragma once

#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netlink.h>

#include <cstdint>
#include <memory>
#include <new>
#include <unordered_map>
#include <vector>

#include "nft/batch.h"
#include "nft/netlink.h"

namespace palisade::nft {

// Headroom reserved before building any one message.
constexpr size_t kMaxMessage = 256 * 1024;

template <typename T, void (*Free)(const T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using TablePtr = std::unique_ptr<nftnl_table, Deleter<nftnl_table, nftnl_table_free>>;
using ChainPtr = std::unique_ptr<nftnl_chain, Deleter<nftnl_chain, nftnl_chain_free>>;
using RulePtr = std::unique_ptr<nftnl_rule, Deleter<nftnl_rule, nftnl_rule_free>>;
using SetPtr = std::unique_ptr<nftnl_set, Deleter<nftnl_set, nftnl_set_free>>;

inline void Check(const void* p) {
  if (!p) throw std::bad_alloc();
}

class BatchBuilder {
 public:
  explicit BatchBuilder(uint32_t seq) : seq_(seq) {
    nlmsghdr* h = nftnl_batch_begin(Reserve(), seq_++);
    Commit(h);
  }

  // Starts a message; the caller fills the payload, then calls Commit().
  nlmsghdr* Header(uint16_t type, uint16_t family, uint16_t flags, uint32_t tag) {
    tags_[seq_] = tag;
    last_ = seq_;
    messages_++;
    return nftnl_nlmsg_build_hdr(Reserve(), type, family, flags, seq_++);
  }
  void Commit(nlmsghdr* h) {
    lastOffset_ = used_;
    used_ += NLMSG_ALIGN(h->nlmsg_len);
  }
  // Closes the batch: asks for an ACK of the last object message only.
  void End() {
    if (messages_) reinterpret_cast<nlmsghdr*>(buf_.data() + lastOffset_)->nlmsg_flags |= NLM_F_ACK;
    nlmsghdr* h = nftnl_batch_end(Reserve(), seq_++);
    Commit(h);
    buf_.resize(used_);
  }

  std::vector<char>& buffer() { return buf_; }
  size_t messages() const { return messages_; }
  uint32_t lastSeq() const { return last_; }
  bool TagOf(uint32_t seq, uint32_t* tag) const {
    auto it = tags_.find(seq);
    if (it == tags_.end()) return false;
    *tag = it->second;
    return true;
  }

 private:
  char* Reserve() {
    if (buf_.size() < used_ + kMaxMessage) buf_.resize(used_ + kMaxMessage + buf_.size() / 2);
    return buf_.data() + used_;
  }
  std::vector<char> buf_;
  size_t used_ = 0;
  size_t lastOffset_ = 0;
  uint32_t seq_;
  uint32_t last_ = 0;
  size_t messages_ = 0;
  std::unordered_map<uint32_t, uint32_t> tags_;
};

// Reads every answer: errors for failing messages, then the one ACK of the last message.
void Collect(NlSocket& sock, const BatchBuilder& b, CommitResult* out);
// Sends the closed batch on a fresh socket and collects the answers into `out`.
void SendAndCollect(BatchBuilder& b, CommitResult* out);

}  // namespace palisade::nft
