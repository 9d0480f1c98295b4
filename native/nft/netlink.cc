#include "nft/netlink.h"

#include <linux/netlink.h>
#include <sys/socket.h>

#include <cerrno>

namespace palisade::nft {

int NlSocket::Open(std::string* what) {
  nl_ = mnl_socket_open(NETLINK_NETFILTER);
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
  auto grow = [fd](int forceOpt, int opt, size_t want) {
    if (want > (1u << 30)) want = 1u << 30;
    int v = static_cast<int>(want);
    if (setsockopt(fd, SOL_SOCKET, forceOpt, &v, sizeof(v)) < 0) setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
  };
  grow(SO_SNDBUFFORCE, SO_SNDBUF, sendBytes + 65536);
  grow(SO_RCVBUFFORCE, SO_RCVBUF, recvBytes);
}

}  // namespace palisade::nft
