#include "nft/netlink.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <mutex>
#include <vector>

namespace palisade::nft {

int NlSocket::Open(std::string* what) {
  // Close-on-exec: a pooled socket lives as long as the process, and the tools it runs
  // (nft, ipset, bird) must not inherit it.
  nl_ = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
  if (!nl_) {
    *what = "socket(NETLINK_NETFILTER)";
    return errno;
  }
  if (mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) {
    *what = "bind";
    return errno;
  }
  int one = 1;
  // Extended ACKs name the failing attribute; harmless where unsupported.
  setsockopt(mnl_socket_get_fd(nl_), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
  return 0;
}

void NlSocket::SizeFor(size_t sendBytes, size_t recvBytes) {
  int fd = mnl_socket_get_fd(nl_);
  auto grow = [fd](int forceOpt, int opt, size_t want, size_t* have) {
    if (want > (1u << 30)) want = 1u << 30;
    if (want <= *have) return;
    *have = want;
    int v = static_cast<int>(want);
    if (setsockopt(fd, SOL_SOCKET, forceOpt, &v, sizeof(v)) < 0) setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
  };
  grow(SO_SNDBUFFORCE, SO_SNDBUF, sendBytes + 65536, &sndBytes_);
  grow(SO_RCVBUFFORCE, SO_RCVBUF, recvBytes, &rcvBytes_);
}

void NlSocket::ReceiveTimeout(int seconds) {
  timeval tv{seconds, 0};
  setsockopt(mnl_socket_get_fd(nl_), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

namespace {

// Idle sockets; a few cover a commit, a refresh's dump and an element query at once.
constexpr size_t kMaxIdle = 4;
std::mutex poolMu;
std::vector<std::unique_ptr<NlSocket>>& Idle() {
  static auto* idle = new std::vector<std::unique_ptr<NlSocket>>();  // never destroyed: no close at exit
  return *idle;
}

// Drops anything a finished exchange left queued (none is expected).
void Drain(NlSocket& s) {
  char buf[8192];
  while (recv(mnl_socket_get_fd(s.get()), buf, sizeof(buf), MSG_DONTWAIT) >= 0) {
  }
}

}  // namespace

int PooledSocket::Open(std::string* what) {
  {
    std::lock_guard<std::mutex> l(poolMu);
    auto& idle = Idle();
    if (!idle.empty()) {
      s_ = std::move(idle.back());
      idle.pop_back();
    }
  }
  if (s_) {
    Drain(*s_);
    s_->ReceiveTimeout(0);
    return 0;
  }
  s_ = std::make_unique<NlSocket>();
  return s_->Open(what);
}

void SettleDeferredFrees() {
  NlSocket s;
  std::string what;
  // Opening is enough: closing any netfilter netlink socket flushes the deferred frees.
  s.Open(&what);
}

PooledSocket::~PooledSocket() {
  if (!s_ || !reusable_ || !s_->get()) return;
  std::lock_guard<std::mutex> l(poolMu);
  auto& idle = Idle();
  if (idle.size() < kMaxIdle) idle.push_back(std::move(s_));
}

}  // namespace palisade::nft
