// A netfilter netlink socket with buffers sized for big batches and dumps, and a
// process-wide pool of open ones.
//
// Why a pool: closing a NETLINK_NETFILTER socket makes nf_tables flush its deferred frees
// (nft_rcv_nl_event -> __flush_work of the transaction destroy work, a synchronize_rcu)
// while holding the commit mutex, whenever a transaction deleted anything (set elements,
// rules of a rewritten chain). A socket per call paid that grace period at every close,
// 8-24 ms here, and made every other commit on the node wait behind it. Sockets kept open
// leave those frees to the kernel's work queue.
#pragma once

#include <libmnl/libmnl.h>

#include <cstddef>
#include <memory>
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
  // Raises the socket buffers for a message of `bytes` (forced when we may: CAP_NET_ADMIN);
  // never lowers them.
  void SizeFor(size_t sendBytes, size_t recvBytes);
  // Sets how long a receive may wait (0: for ever).
  void ReceiveTimeout(int seconds);
  mnl_socket* get() const { return nl_; }
  unsigned portid() const { return mnl_socket_get_portid(nl_); }

 private:
  mnl_socket* nl_ = nullptr;
  size_t sndBytes_ = 0;
  size_t rcvBytes_ = 0;
};

// A socket taken from the pool (or opened) for one exchange. It goes back to the pool only
// when the caller says the exchange ended with every answer read (Reusable()); otherwise,
// after an error or a partial read, it is closed.
class PooledSocket {
 public:
  PooledSocket() = default;
  ~PooledSocket();
  PooledSocket(const PooledSocket&) = delete;
  PooledSocket& operator=(const PooledSocket&) = delete;

  // An idle socket (its queue drained, no receive timeout) or a new one; 0 or a positive errno.
  int Open(std::string* what);
  NlSocket& sock() { return *s_; }
  void Reusable() { reusable_ = true; }

 private:
  std::unique_ptr<NlSocket> s_;
  bool reusable_ = false;
};

// Waits until nf_tables has run the frees its past commits deferred: what the close of a
// socket that is not pooled does. For when an object must be gone, not just unused: an
// ipset an iptables-nft rule referenced until the last commit.
void SettleDeferredFrees();

}  // namespace palisade::nft
