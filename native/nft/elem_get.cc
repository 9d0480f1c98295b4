#include "nft/elem_get.h"

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "common/netlink_read.h"
#include "nft/netlink.h"

namespace palisade::nft {
namespace {

// Requests a send carries: each answer (the element, or an error) is one message of
// ~100 bytes, so a round's answers fit the receive buffer with room to spare.
constexpr size_t kPerRound = 512;

// One request for one element: table, set, and a list of one element with its key.
// Returns its length, aligned.
size_t PutRequest(char* at, uint8_t family, uint32_t seq, const std::string& table, const std::string& set,
                  const char* key, uint32_t keyLen) {
  nlmsghdr* h = nftnl_nlmsg_build_hdr(at, NFT_MSG_GETSETELEM, family, 0, seq);
  mnl_attr_put_strz(h, NFTA_SET_ELEM_LIST_TABLE, table.c_str());
  mnl_attr_put_strz(h, NFTA_SET_ELEM_LIST_SET, set.c_str());
  nlattr* list = mnl_attr_nest_start(h, NFTA_SET_ELEM_LIST_ELEMENTS);
  nlattr* elem = mnl_attr_nest_start(h, NFTA_LIST_ELEM);
  nlattr* k = mnl_attr_nest_start(h, NFTA_SET_ELEM_KEY);
  mnl_attr_put(h, NFTA_DATA_VALUE, keyLen, key);
  mnl_attr_nest_end(h, k);
  mnl_attr_nest_end(h, elem);
  mnl_attr_nest_end(h, list);
  return MNL_ALIGN(h->nlmsg_len);
}

// An upper bound of PutRequest's length.
size_t RequestBytes(const std::string& table, const std::string& set, uint32_t keyLen) {
  return MNL_ALIGN(sizeof(nlmsghdr)) + MNL_ALIGN(sizeof(nfgenmsg)) + MNL_ATTR_HDRLEN + MNL_ALIGN(table.size() + 1) +
         MNL_ATTR_HDRLEN + MNL_ALIGN(set.size() + 1) + 3 * MNL_ATTR_HDRLEN + MNL_ATTR_HDRLEN + MNL_ALIGN(keyLen);
}

// Reads the answers to requests seq0 .. seq0+count-1 into present[first ..]. An answer
// is the element (present) or an error (ENOENT: absent; anything else fails the round).
int ReadAnswers(NlSocket& sock, uint32_t seq0, size_t count, uint8_t* present, std::vector<char>& buf,
                std::string* what) {
  size_t answered = 0;
  std::vector<uint8_t> seen(count, 0);
  while (answered < count) {
    ssize_t n = RecvFromKernel(mnl_socket_get_fd(sock.get()), buf.data(), buf.size(), 0);
    if (n < 0) {
      *what = "recv";
      return errno;
    }
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); NlmsgOk(h, len); h = mnl_nlmsg_next(h, &len)) {
      if (h->nlmsg_pid != sock.portid() || h->nlmsg_seq - seq0 >= count) continue;
      const size_t i = h->nlmsg_seq - seq0;
      if (seen[i]) continue;
      if (h->nlmsg_type == NLMSG_ERROR) {
        if (h->nlmsg_len < mnl_nlmsg_size(sizeof(nlmsgerr))) {
          *what = "a truncated netlink error";
          return EPROTO;
        }
        const int err = -static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h))->error;
        if (err != 0 && err != ENOENT) {
          *what = "get set element";
          return err;
        }
        present[i] = 0;
      } else if (h->nlmsg_type == ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWSETELEM)) {
        present[i] = 1;
      } else {
        continue;
      }
      seen[i] = 1;
      answered++;
    }
  }
  return 0;
}

}  // namespace

ElemGetResult GetElems(uint8_t family, const std::string& table, const std::string& set, const std::string& keys,
                       uint32_t keyLen) {
  ElemGetResult out;
  const size_t count = keyLen ? keys.size() / keyLen : 0;
  out.present.assign(count, 0);
  if (!count) return out;
  PooledSocket lease;
  if (int e = lease.Open(&out.sysWhat)) {
    out.sysErrno = e;
    return out;
  }
  NlSocket& sock = lease.sock();
  const size_t each = RequestBytes(table, set, keyLen);
  sock.SizeFor(each * kPerRound, 1u << 20);
  std::vector<char> req(each * kPerRound);
  std::vector<char> answers(64 * 1024);
  uint32_t seq = static_cast<uint32_t>(time(nullptr));
  for (size_t from = 0; from < count; from += kPerRound) {
    const size_t n = std::min(kPerRound, count - from);
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
      bytes += PutRequest(req.data() + bytes, family, seq + static_cast<uint32_t>(i), table, set,
                          keys.data() + (from + i) * keyLen, keyLen);
    if (mnl_socket_sendto(sock.get(), req.data(), bytes) < 0) {
      out.sysErrno = errno;
      out.sysWhat = "send";
      return out;
    }
    if (int e = ReadAnswers(sock, seq, n, out.present.data() + from, answers, &out.sysWhat)) {
      out.sysErrno = e;
      return out;
    }
    seq += static_cast<uint32_t>(n);
  }
  lease.Reusable();
  return out;
}

}  // namespace palisade::nft
