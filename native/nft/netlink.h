// A netfilter netlink socket with buffers sized for big batches and dumps.
#pragma once

#include <libmnl/libmnl.h>

#include <cstddef>
#include <string>

namespace palisade::nft {

class NlSocket {
 public:
  NlSocket() = default;
  ~NlSocket() {
    if (nl_) mnl_socket_close(nl_);
  }
  NlSocket(const NlSocket&) = delete;
  NlSocket& operator=(const NlSocket&) = delete;

  // Opens and binds; returns 0 or a positive errno (and what failed).
  int Open(std::string* what);
  // Raises the socket buffers for a message of `bytes` (forced when we may: CAP_NET_ADMIN).
  void SizeFor(size_t sendBytes, size_t recvBytes);
  mnl_socket* get() const { return nl_; }
  unsigned portid() const { return mnl_socket_get_portid(nl_); }

 private:
  mnl_socket* nl_ = nullptr;
};

}  // namespace palisade::nft
