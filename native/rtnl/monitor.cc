#include "rtnl/monitor.h"
#include "rtnl/routes.h"

#include "common/netlink_read.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace palisade::rtnl {
namespace {

constexpr size_t kBuf = 1 << 16;
// DumpInto's answer when the kernel marked the dump interrupted (NLM_F_DUMP_INTR).
constexpr int kInterrupted = -1;

}  // namespace

Monitor::Monitor(std::vector<std::string> exclude, Deliver deliver, int rcvbuf)
    : deliver_(std::move(deliver)), rcvbuf_(rcvbuf) {
  for (const std::string& e : exclude) {
    if (e.size() >= 2 && e.front() == '/' && e.back() == '/')
      patterns_.emplace_back(e.substr(1, e.size() - 2));
    else
      exact_.push_back(e);
  }
}

Monitor::~Monitor() { Stop(); }

bool Monitor::Excluded(const std::string& name) const {
  for (const std::string& e : exact_)
    if (e == name) return true;
  for (const std::regex& r : patterns_)
    if (std::regex_search(name, r)) return true;
  return false;
}

int Monitor::Start(std::string* what) {
  if (thread_.joinable()) return 0;
  stopFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  resyncFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stopFd_ < 0 || resyncFd_ < 0) {
    *what = "eventfd";
    return errno;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    ready_ = false;
  }
  thread_ = std::thread([this] { Run(); });
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [this] { return ready_; });
  if (startErr_) {
    l.unlock();
    thread_.join();
    *what = startWhat_;
    return startErr_;
  }
  return 0;
}

void Monitor::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  if (write(stopFd_, &one, sizeof(one)) < 0) {
    // The eventfd cannot be full at 1; nothing else to do.
  }
  thread_.join();
  close(stopFd_);
  close(resyncFd_);
  stopFd_ = resyncFd_ = -1;
}

void Monitor::Resync() {
  uint64_t one = 1;
  if (resyncFd_ >= 0 && write(resyncFd_, &one, sizeof(one)) < 0) {
    // Already pending.
  }
}

// A dump on its own socket, read to the end before anything else: events that arrive
// meanwhile wait in the event socket and are applied after it (eventually consistent).
// Returns 0, an errno, or kInterrupted when the kernel says the table changed during the
// dump (NLM_F_DUMP_INTR): then it may have missed entries.
int Monitor::DumpInto(int type, std::vector<Event>* out) {
  std::vector<char> buf(kBuf);
  nlmsghdr* h = mnl_nlmsg_put_header(buf.data());
  h->nlmsg_type = static_cast<uint16_t>(type);
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  h->nlmsg_seq = ++dumpSeq_;
  auto* g = static_cast<rtgenmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(rtgenmsg)));
  g->rtgen_family = AF_UNSPEC;
  if (send(dumpFd_, h, h->nlmsg_len, 0) < 0) return errno;
  bool interrupted = false;
  for (;;) {
    ssize_t n = RecvFromKernel(dumpFd_, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    int len = static_cast<int>(n);
    for (auto* m = reinterpret_cast<nlmsghdr*>(buf.data()); NlmsgOk(m, len); m = mnl_nlmsg_next(m, &len)) {
      if (m->nlmsg_seq != dumpSeq_) continue;
      if (m->nlmsg_flags & NLM_F_DUMP_INTR) interrupted = true;
      if (m->nlmsg_type == NLMSG_DONE) return interrupted ? kInterrupted : 0;
      if (m->nlmsg_type == NLMSG_ERROR)
        return mnl_nlmsg_get_payload_len(m) < sizeof(nlmsgerr)
                   ? EPROTO
                   : -static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(m))->error;
      Handle(m, out);
    }
  }
}

void Monitor::FullResync(std::vector<Event>* out) {
  for (auto& entry : ifaces_) {
    entry.second.before = std::move(entry.second.addrs);
    entry.second.addrs.clear();
  }
  resyncing_ = true;
  // An interrupted dump (links or addresses changed meanwhile, as when hundreds of links
  // are being made after an overflow) can miss entries whose events were dropped: a link
  // would then stay unknown until the next resync. Dump again, a few times, instead.
  for (int tries = 0; tries < 5; tries++) {
    gen_++;
    if (DumpInto(RTM_GETLINK, out) != kInterrupted) break;
  }
  for (int tries = 0; tries < 5; tries++) {
    for (auto& entry : ifaces_) entry.second.addrs.clear();
    if (DumpInto(RTM_GETADDR, out) != kInterrupted) break;
  }
  FinishResync(out);
}

void Monitor::Feed(const char* buf, int len, std::vector<Event>* out) {
  for (auto* h = reinterpret_cast<const nlmsghdr*>(buf); NlmsgOk(h, len); h = mnl_nlmsg_next(h, &len)) Handle(h, out);
}

// Every message's fixed header is checked for length before it is read: the kernel's
// messages are well formed, but this is the code that must never trust a byte count.
void Monitor::Handle(const nlmsghdr* h, std::vector<Event>* out) {
  const size_t payload = mnl_nlmsg_get_payload_len(h);
  if (h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK) {
    if (payload < sizeof(ifinfomsg)) return;
    auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(h));
    std::string name;
    mnl_attr_parse(
        h, sizeof(*ifi),
        [](const nlattr* a, void* data) {
          if (mnl_attr_get_type(a) == IFLA_IFNAME && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
            *static_cast<std::string*>(data) = mnl_attr_get_str(a);
          return MNL_CB_OK;
        },
        &name);
    if (name.empty() || Excluded(name)) return;
    auto it = ifaces_.find(ifi->ifi_index);
    if (h->nlmsg_type == RTM_DELLINK) {
      if (it == ifaces_.end()) return;
      out->push_back({Event::kIface, it->second.name, ifi->ifi_index, "gone", {}});
      if (!it->second.addrs.empty()) out->push_back({Event::kAddrs, it->second.name, ifi->ifi_index, "", {}});
      ifaces_.erase(it);
      return;
    }
    bool up = (ifi->ifi_flags & IFF_RUNNING) != 0;
    if (it == ifaces_.end()) {
      Iface& f = ifaces_[ifi->ifi_index];
      f.name = name;
      f.up = up;
      f.gen = gen_;
      out->push_back({Event::kIface, name, ifi->ifi_index, up ? "up" : "down", {}});
      return;
    }
    Iface& f = it->second;
    f.gen = gen_;
    if (f.name != name) {
      // A rename: the old name is gone, the new one appears.
      out->push_back({Event::kIface, f.name, ifi->ifi_index, "gone", {}});
      f.name = name;
      out->push_back({Event::kIface, name, ifi->ifi_index, up ? "up" : "down", {}});
      f.up = up;
      return;
    }
    if (f.up != up) {
      f.up = up;
      out->push_back({Event::kIface, name, ifi->ifi_index, up ? "up" : "down", {}});
    }
    return;
  }
  if (h->nlmsg_type == RTM_DELROUTE) {
    if (payload < sizeof(rtmsg)) return;
    auto* rt = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(h));
    if (rt->rtm_protocol != RTPROT_BOOT || rt->rtm_table != RT_TABLE_MAIN) return;
    const RouteAttrs r = ParseRouteAttrs(h);
    auto it = ifaces_.find(r.oif);
    if (!r.dst || it == ifaces_.end()) return;
    out->push_back(
        {Event::kRouteDeleted, it->second.name, r.oif, "", {AddrString(rt->rtm_family, r.dst, rt->rtm_dst_len)}});
    return;
  }
  if (h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR) {
    if (payload < sizeof(ifaddrmsg)) return;
    auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(h));
    auto it = ifaces_.find(static_cast<int>(ifa->ifa_index));
    if (it == ifaces_.end() || (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)) return;
    struct Found {
      uint16_t alen;
      const void* local = nullptr;
      const void* address = nullptr;
    } found{static_cast<uint16_t>(ifa->ifa_family == AF_INET ? 4 : 16)};
    mnl_attr_parse(
        h, sizeof(*ifa),
        [](const nlattr* a, void* data) {
          auto* f = static_cast<Found*>(data);
          if (mnl_attr_get_payload_len(a) != f->alen) return MNL_CB_OK;
          if (mnl_attr_get_type(a) == IFA_LOCAL) f->local = mnl_attr_get_payload(a);
          if (mnl_attr_get_type(a) == IFA_ADDRESS) f->address = mnl_attr_get_payload(a);
          return MNL_CB_OK;
        },
        &found);
    const void* addr = found.local ? found.local : found.address;
    if (!addr) return;
    std::string s = AddrString(ifa->ifa_family, addr, ifa->ifa_prefixlen);
    Iface& f = it->second;
    bool changed = h->nlmsg_type == RTM_NEWADDR ? f.addrs.insert(s).second : f.addrs.erase(s) > 0;
    // During a resync the dump rebuilds the lists; FinishResync reports the differences.
    if (changed && !resyncing_) {
      // Coalesce: one addrs event per interface per batch, with the final list.
      for (Event& e : *out) {
        if (e.kind == Event::kAddrs && e.index == it->first) {
          e.addrs.assign(f.addrs.begin(), f.addrs.end());
          return;
        }
      }
      out->push_back({Event::kAddrs, f.name, it->first, "", std::vector<std::string>(f.addrs.begin(), f.addrs.end())});
    }
  }
}

// After a full dump: whatever was not seen again is gone.
void Monitor::FinishResync(std::vector<Event>* out) {
  for (auto it = ifaces_.begin(); it != ifaces_.end();) {
    Iface& f = it->second;
    if (f.gen != gen_) {
      out->push_back({Event::kIface, f.name, it->first, "gone", {}});
      if (!f.before.empty()) out->push_back({Event::kAddrs, f.name, it->first, "", {}});
      it = ifaces_.erase(it);
      continue;
    }
    if (f.addrs != f.before)
      out->push_back({Event::kAddrs, f.name, it->first, "", std::vector<std::string>(f.addrs.begin(), f.addrs.end())});
    f.before.clear();
    ++it;
  }
  resyncing_ = false;
}

void Monitor::Run() {
  auto fail = [this](int err, const char* what) {
    std::lock_guard<std::mutex> l(mu_);
    startErr_ = err;
    startWhat_ = what;
    ready_ = true;
    cv_.notify_all();
  };
  fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd_ < 0) return fail(errno, "socket(NETLINK_ROUTE)");
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0) {
    int e = errno;
    close(fd_);
    fd_ = -1;
    return fail(e, "bind");
  }
  if (setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf_, sizeof(rcvbuf_)) < 0) {
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf_, sizeof(rcvbuf_));
  }
  dumpFd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (dumpFd_ < 0) {
    int e = errno;
    close(fd_);
    fd_ = -1;
    return fail(e, "socket(NETLINK_ROUTE) for dumps");
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    startErr_ = 0;
    ready_ = true;
    cv_.notify_all();
  }

  std::vector<char> buf(kBuf);
  std::vector<Event> batch;
  FullResync(&batch);
  if (!batch.empty()) {
    deliver_(std::move(batch));
    batch.clear();
  }
  for (;;) {
    pollfd fds[3] = {{fd_, POLLIN, 0}, {stopFd_, POLLIN, 0}, {resyncFd_, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) break;
    if (fds[2].revents) {
      uint64_t v;
      if (read(resyncFd_, &v, sizeof(v)) < 0) {
        // Nothing pending after all.
      }
      FullResync(&batch);
    }
    // Drain everything queued now, then keep collecting while more follows within 2 ms
    // (a burst: many interfaces at once), up to 20 ms: one batch, one JS callback.
    // The kernel dropped events (ENOBUFS; or one did not fit the buffer, ENOSPC): the
    // table can no longer be trusted, and a full dump follows. Not at once, though: the
    // kernel reports ENOBUFS once per congestion and stays silent about further drops
    // until the queue has been emptied, so a dump taken before that could miss links
    // created meanwhile (seen: 150 of 600 veths lost for good). The queue is drained
    // first; the dump then covers every drop, and any drop after it raises a new ENOBUFS.
    auto drain = [&] {
      bool overflowed = false;
      for (;;) {
        ssize_t n = RecvFromKernel(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == ENOBUFS || errno == ENOSPC) {
            overflowed = true;
            continue;
          }
          if (!overflowed) return;  // EAGAIN: drained
          overflowed = false;
          batch.push_back({Event::kOverflow, "", 0, "", {}});
          FullResync(&batch);
          continue;  // what arrived during the dump
        }
        Feed(buf.data(), static_cast<int>(n), &batch);
      }
    };
    if (fds[0].revents & (POLLIN | POLLERR)) {
      drain();
      for (int waited = 0; waited < 20 && batch.size() < 4096; waited += 2) {
        pollfd more[2] = {{fd_, POLLIN, 0}, {stopFd_, POLLIN, 0}};
        if (poll(more, 2, 2) <= 0 || more[1].revents) break;
        drain();
      }
    }
    if (!batch.empty()) {
      deliver_(std::move(batch));
      batch.clear();
    }
  }
  close(dumpFd_);
  dumpFd_ = -1;
  close(fd_);
  fd_ = -1;
}

}  // namespace palisade::rtnl
