// The rtnetlink interface monitor: one owned thread, subscribed to link and address
// changes, keeping the interface table natively and delivering what changed as batches
// of events (one callback per wakeup). A full dump at start and after ENOBUFS (the
// kernel dropped events) resynchronises; interfaces matching InterfaceExclude are
// dropped here, before anything crosses to JS. Plain C++: the N-API side adapts it.
#pragma once

#include <linux/netlink.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace palisade::rtnl {

struct Event {
  // kRouteDeleted: a route of protocol 3 (ours) left the main table.
  // kOverflow: the kernel dropped events (ENOBUFS); a full dump follows.
  enum Kind { kIface, kAddrs, kRouteDeleted, kOverflow } kind;
  std::string name;
  int index = 0;
  // kIface: "up", "down" or "gone".
  std::string state;
  // kAddrs: the interface's addresses now (empty when it has none or is gone);
  // kRouteDeleted: the route's destination.
  std::vector<std::string> addrs;
};

class Monitor {
 public:
  using Deliver = std::function<void(std::vector<Event>&&)>;

  // `exclude`: exact names, or regular expressions written as /.../ (Felix's syntax).
  // `rcvbuf`: the socket's receive buffer in bytes (tests make it tiny to force ENOBUFS).
  Monitor(std::vector<std::string> exclude, Deliver deliver, int rcvbuf = 4 << 20);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // Starts the thread; returns once its socket is bound (0) or failed (errno, and what).
  int Start(std::string* what);
  // Stops and joins the thread (idempotent).
  void Stop();
  // Asks the thread for a full dump (the refresh timer).
  void Resync();
  bool running() const { return thread_.joinable(); }

  // Applies a buffer of rtnetlink messages as if the event socket had delivered it (the
  // thread's own path, and the fuzz target's entry: no thread or socket needed).
  void Feed(const char* buf, int len, std::vector<Event>* out);

 private:
  struct Iface {
    std::string name;
    bool up = false;
    std::set<std::string> addrs;
    // The addresses before a resync's dump, compared with what the dump finds.
    std::set<std::string> before;
    unsigned gen = 0;
  };

  void Run();
  bool Excluded(const std::string& name) const;
  int DumpInto(int type, std::vector<Event>* out);
  void FullResync(std::vector<Event>* out);
  void Handle(const nlmsghdr* h, std::vector<Event>* out);
  void FinishResync(std::vector<Event>* out);

  std::vector<std::string> exact_;
  std::vector<std::regex> patterns_;
  Deliver deliver_;
  std::thread thread_;
  int fd_ = -1;
  int dumpFd_ = -1;
  uint32_t dumpSeq_ = 0;
  int rcvbuf_;
  int stopFd_ = -1;
  int resyncFd_ = -1;

  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
  int startErr_ = 0;
  std::string startWhat_;

  std::map<int, Iface> ifaces_;
  unsigned gen_ = 0;
  bool resyncing_ = false;
};

}  // namespace palisade::rtnl
