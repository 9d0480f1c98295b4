// libiptc transactions for iptables-legacy. libiptc keeps a little global state (the
// function name it reports errors for), so one mutex serialises every use of it.
#include "iptc/legacy.h"

#include <fcntl.h>
// libiptc's headers declare C functions without extern "C" of their own.
extern "C" {
#include <libiptc/libip6tc.h>
#include <libiptc/libiptc.h>
}
#include <linux/netfilter/x_tables.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "common/op_reader.h"
#include "xt/encode.h"
#include "xt/restore.h"
#include "xt/rule.h"

namespace palisade::iptc {
namespace {

std::mutex gLibiptc;

// One family's libiptc, entries as bytes.
struct Lib {
  xtc_handle* (*init)(const char*);
  void (*free)(xtc_handle*);
  int (*isChain)(const char*, xtc_handle*);
  const char* (*firstChain)(xtc_handle*);
  const char* (*nextChain)(xtc_handle*);
  const void* (*firstRule)(const char*, xtc_handle*);
  const void* (*nextRule)(const void*, xtc_handle*);
  const char* (*target)(const void*, xtc_handle*);
  int (*builtin)(const char*, xtc_handle*);
  const char* (*policy)(const char*, xt_counters*, xtc_handle*);
  int (*insert)(const char*, const void*, unsigned, xtc_handle*);
  int (*append)(const char*, const void*, xtc_handle*);
  int (*remove)(const char*, const void*, unsigned char*, xtc_handle*);
  int (*flush)(const char*, xtc_handle*);
  int (*create)(const char*, xtc_handle*);
  int (*destroy)(const char*, xtc_handle*);
  int (*commit)(xtc_handle*);
  const char* (*strerror)(int);
};

const Lib kLib4 = {
    iptc_init,
    iptc_free,
    iptc_is_chain,
    iptc_first_chain,
    iptc_next_chain,
    [](const char* c, xtc_handle* h) -> const void* { return iptc_first_rule(c, h); },
    [](const void* p, xtc_handle* h) -> const void* { return iptc_next_rule(static_cast<const ipt_entry*>(p), h); },
    [](const void* e, xtc_handle* h) { return iptc_get_target(static_cast<const ipt_entry*>(e), h); },
    iptc_builtin,
    iptc_get_policy,
    [](const char* c, const void* e, unsigned n, xtc_handle* h) {
      return iptc_insert_entry(c, static_cast<const ipt_entry*>(e), n, h);
    },
    [](const char* c, const void* e, xtc_handle* h) {
      return iptc_append_entry(c, static_cast<const ipt_entry*>(e), h);
    },
    [](const char* c, const void* e, unsigned char* m, xtc_handle* h) {
      return iptc_delete_entry(c, static_cast<const ipt_entry*>(e), m, h);
    },
    iptc_flush_entries,
    iptc_create_chain,
    iptc_delete_chain,
    iptc_commit,
    iptc_strerror,
};

const Lib kLib6 = {
    ip6tc_init,
    ip6tc_free,
    ip6tc_is_chain,
    ip6tc_first_chain,
    ip6tc_next_chain,
    [](const char* c, xtc_handle* h) -> const void* { return ip6tc_first_rule(c, h); },
    [](const void* p, xtc_handle* h) -> const void* { return ip6tc_next_rule(static_cast<const ip6t_entry*>(p), h); },
    [](const void* e, xtc_handle* h) { return ip6tc_get_target(static_cast<const ip6t_entry*>(e), h); },
    ip6tc_builtin,
    ip6tc_get_policy,
    [](const char* c, const void* e, unsigned n, xtc_handle* h) {
      return ip6tc_insert_entry(c, static_cast<const ip6t_entry*>(e), n, h);
    },
    [](const char* c, const void* e, xtc_handle* h) {
      return ip6tc_append_entry(c, static_cast<const ip6t_entry*>(e), h);
    },
    [](const char* c, const void* e, unsigned char* m, xtc_handle* h) {
      return ip6tc_delete_entry(c, static_cast<const ip6t_entry*>(e), m, h);
    },
    ip6tc_flush_entries,
    ip6tc_create_chain,
    ip6tc_delete_chain,
    ip6tc_commit,
    ip6tc_strerror,
};

using xt::kAppend;
using xt::kDeclare;
using xt::kDelete;
using xt::kDestroy;
using xt::kFlush;
using xt::kInsert;
using Op = xt::RestoreOpKind;

struct TxOp {
  Op op = kDeclare;
  uint32_t tag = 0;
  std::string chain;
  uint32_t pos = 0;
  std::vector<uint8_t> entry, mask;
};

struct TableTx {
  std::string name;
  uint32_t tag;
  std::vector<TxOp> ops;
};

// As xtables_parse_interface: the name and its mask, a trailing '+' matching any suffix.
void Iface(const xt::Iface& i, char* name, unsigned char* mask) {
  if (i.name.empty()) return;
  std::memcpy(name, i.name.data(), i.name.size());
  size_t n = i.name.back() == '+' ? i.name.size() - 1 : i.name.size() + 1;
  std::memset(mask, 0xff, n);
}

void Mask(const xt::Addr& a, size_t bytes, uint8_t* addr, uint8_t* mask) {
  for (size_t i = 0; i < bytes; i++) {
    int bits = static_cast<int>(a.prefix) - static_cast<int>(i * 8);
    mask[i] = bits >= 8 ? 0xff : bits <= 0 ? 0 : static_cast<uint8_t>(0xff << (8 - bits));
    addr[i] = a.bytes[i] & mask[i];
  }
}

template <typename Entry>
void Header(const xt::Rule& r, Entry* e);

template <>
void Header(const xt::Rule& r, ipt_entry* e) {
  Mask(r.src, 4, reinterpret_cast<uint8_t*>(&e->ip.src), reinterpret_cast<uint8_t*>(&e->ip.smsk));
  Mask(r.dst, 4, reinterpret_cast<uint8_t*>(&e->ip.dst), reinterpret_cast<uint8_t*>(&e->ip.dmsk));
  Iface(r.in, e->ip.iniface, e->ip.iniface_mask);
  Iface(r.out, e->ip.outiface, e->ip.outiface_mask);
  e->ip.proto = r.proto;
  if (r.isGoto) e->ip.flags |= IPT_F_GOTO;
  if (r.in.inv) e->ip.invflags |= IPT_INV_VIA_IN;
  if (r.out.inv) e->ip.invflags |= IPT_INV_VIA_OUT;
  if (r.src.inv) e->ip.invflags |= IPT_INV_SRCIP;
  if (r.dst.inv) e->ip.invflags |= IPT_INV_DSTIP;
  if (r.protoInv) e->ip.invflags |= IPT_INV_PROTO;
}

template <>
void Header(const xt::Rule& r, ip6t_entry* e) {
  Mask(r.src, 16, e->ipv6.src.s6_addr, e->ipv6.smsk.s6_addr);
  Mask(r.dst, 16, e->ipv6.dst.s6_addr, e->ipv6.dmsk.s6_addr);
  Iface(r.in, e->ipv6.iniface, e->ipv6.iniface_mask);
  Iface(r.out, e->ipv6.outiface, e->ipv6.outiface_mask);
  e->ipv6.proto = r.proto;
  if (r.proto) e->ipv6.flags |= IP6T_F_PROTO;
  if (r.isGoto) e->ipv6.flags |= IP6T_F_GOTO;
  if (r.in.inv) e->ipv6.invflags |= IP6T_INV_VIA_IN;
  if (r.out.inv) e->ipv6.invflags |= IP6T_INV_VIA_OUT;
  if (r.src.inv) e->ipv6.invflags |= IP6T_INV_SRCIP;
  if (r.dst.inv) e->ipv6.invflags |= IP6T_INV_DSTIP;
  if (r.protoInv) e->ipv6.invflags |= IP6T_INV_PROTO;
}

// The entry as iptables builds it, and (for a delete) the mask `iptables -D` compares it with.
template <typename Entry>
void Build(const xt::Rule& r, int family, xt::SetIndex& sets, TxOp* out, bool withMask) {
  xt::Blob matches[xt::kMaxMatches];
  size_t count = r.matches.size();
  for (size_t i = 0; i < count; i++) matches[i] = xt::EncodeMatch(r.matches[i], family, sets);
  xt::Blob target = xt::EncodeTarget(r.target, family);
  bool standard = r.target.kind == xt::TargetKind::Standard;
  size_t size = sizeof(Entry);
  for (size_t i = 0; i < count; i++) size += XT_ALIGN(sizeof(xt_entry_match) + matches[i].size);
  size_t targetSize = standard ? XT_ALIGN(sizeof(xt_standard_target)) : XT_ALIGN(sizeof(xt_entry_target) + target.size);
  out->entry.assign(size + targetSize, 0);
  out->mask.assign(withMask ? size + targetSize : 0, 0);
  auto mark = [&](size_t at, size_t n) {
    if (withMask) std::memset(out->mask.data() + at, 0xff, n);
  };
  auto* e = reinterpret_cast<Entry*>(out->entry.data());
  Header(r, e);
  e->target_offset = static_cast<uint16_t>(size);
  e->next_offset = static_cast<uint16_t>(size + targetSize);
  mark(0, sizeof(Entry));
  size_t at = sizeof(Entry);
  for (size_t i = 0; i < count; i++) {
    const xt::Blob& m = matches[i];
    auto* em = reinterpret_cast<xt_entry_match*>(out->entry.data() + at);
    size_t msize = XT_ALIGN(sizeof(xt_entry_match) + m.size);
    em->u.user.match_size = static_cast<uint16_t>(msize);
    std::strncpy(em->u.user.name, m.name, sizeof em->u.user.name - 1);
    em->u.user.revision = m.revision;
    std::memcpy(em->data, m.data, m.size);
    mark(at, XT_ALIGN(sizeof(xt_entry_match)) + m.userSize);
    at += msize;
  }
  auto* t = reinterpret_cast<xt_entry_target*>(out->entry.data() + at);
  t->u.user.target_size = static_cast<uint16_t>(targetSize);
  std::strncpy(t->u.user.name, target.name, sizeof t->u.user.name - 1);
  t->u.user.revision = target.revision;
  std::memcpy(t->data, target.data, target.size);
  mark(at, XT_ALIGN(sizeof(xt_entry_target)) + (standard ? sizeof(int) : target.userSize));
}

// Decodes the whole stream and builds every entry: nothing reaches the kernel yet.
std::vector<TableTx> Prepare(const uint8_t* ops, size_t len, int* family, ApplyResult* res, bool offline = false) {
  xt::RestoreTx tx = xt::DecodeRestore(ops, len);
  *family = tx.family;
  xt::SetIndex sets = offline ? xt::SetIndex::Offline(tx.family) : xt::SetIndex(tx.family);
  std::vector<TableTx> tables;
  for (auto& t : tx.tables) {
    TableTx out{std::move(t.name), t.tag, {}};
    for (auto& o : t.ops) {
      TxOp op;
      op.op = o.op;
      op.tag = o.tag;
      op.chain = std::move(o.chain);
      op.pos = o.pos;
      if (o.hasRule) {
        try {
          if (tx.family == 4)
            Build<ipt_entry>(o.rule, 4, sets, &op, o.op == kDelete);
          else
            Build<ip6t_entry>(o.rule, 6, sets, &op, o.op == kDelete);
        } catch (const xt::RuleError& e) {
          res->failed = true;
          res->failedTag = o.tag;
          res->failedErrno = e.errnum;
          res->failedWhat = e.what();
          return {};
        }
      }
      out.ops.push_back(std::move(op));
    }
    tables.push_back(std::move(out));
  }
  return tables;
}

// The xtables lock, as iptables takes it: flock on the lock file, probing every interval.
class XtablesLock {
 public:
  int Take(const LockOptions& o, double* waitedMs) {
    if (o.path.empty()) return 0;
    fd_ = open(o.path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) return errno;
    auto start = std::chrono::steady_clock::now();
    for (;;) {
      if (flock(fd_, LOCK_EX | LOCK_NB) == 0) break;
      if (errno != EWOULDBLOCK && errno != EINTR) return errno;
      auto waited = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (waited >= o.timeoutMs) return ETIMEDOUT;
      std::this_thread::sleep_for(std::chrono::milliseconds(o.intervalMs));
    }
    *waitedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return 0;
  }
  ~XtablesLock() {
    if (fd_ >= 0) close(fd_);  // closing releases the flock
  }

 private:
  int fd_ = -1;
};

using Handle = std::unique_ptr<xtc_handle, void (*)(xtc_handle*)>;

bool Run(const Lib& lib, xtc_handle* h, const TxOp& op) {
  const char* c = op.chain.c_str();
  switch (op.op) {
    case kDeclare:  // iptables-restore --noflush ":chain": made if missing, emptied if not
      return lib.isChain(c, h) ? lib.flush(c, h) : lib.create(c, h);
    case kAppend:
      return lib.append(c, op.entry.data(), h);
    case kInsert:
      return lib.insert(c, op.entry.data(), op.pos - 1, h);
    case kDelete:
      return lib.remove(c, op.entry.data(), const_cast<unsigned char*>(op.mask.data()), h);
    case kFlush:
      return lib.flush(c, h);
    case kDestroy:
      return lib.destroy(c, h);
    default:
      return false;
  }
}

void Fail(ApplyResult* res, uint32_t tag, int err, const std::string& what) {
  res->failed = true;
  res->failedTag = tag;
  res->failedErrno = err;
  res->failedWhat = what;
}

// The kernel writes back only a name's characters and its NUL: the rest of each name
// field is whatever the read buffer held. Zeroed, so two dumps of equal tables are equal.
void CleanNames(std::vector<uint8_t>& entry, size_t first, size_t targetAt) {
  auto clean = [&](size_t at) {
    char* name = reinterpret_cast<char*>(entry.data() + at + offsetof(xt_entry_match, u.user.name));
    size_t n = strnlen(name, XT_EXTENSION_MAXNAMELEN);
    std::memset(name + n, 0, XT_EXTENSION_MAXNAMELEN - n);
  };
  for (size_t at = first; at + sizeof(xt_entry_match) <= targetAt;) {
    uint16_t size = reinterpret_cast<const xt_entry_match*>(entry.data() + at)->u.match_size;
    clean(at);
    if (size < sizeof(xt_entry_match)) break;
    at += size;
  }
  if (targetAt + sizeof(xt_entry_target) <= entry.size()) clean(targetAt);
}

}  // namespace

ApplyResult Apply(const uint8_t* ops, size_t len, const LockOptions& lock) {
  ApplyResult res;
  int family = 0;
  std::vector<TableTx> tables;
  auto p0 = std::chrono::steady_clock::now();
  try {
    tables = Prepare(ops, len, &family, &res);
    res.prepareMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0).count();
  } catch (const BadOps& e) {
    res.badInput = e.what();
    return res;
  }
  if (res.failed || tables.empty()) return res;
  const Lib& lib = family == 4 ? kLib4 : kLib6;
  XtablesLock xlock;
  if (int err = xlock.Take(lock, &res.lockWaitMs)) {
    res.sysErrno = err;
    res.sysWhat = err == ETIMEDOUT ? "waiting for the xtables lock " + lock.path + " (another program holds it)"
                                   : "opening the xtables lock " + lock.path;
    return res;
  }
  std::lock_guard<std::mutex> g(gLibiptc);
  std::vector<Handle> handles;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); };
  for (const auto& t : tables) {
    auto t0 = Clock::now();
    Handle h(lib.init(t.name.c_str()), lib.free);
    res.readMs += ms(t0);
    if (!h) {
      Fail(&res, t.tag, errno, "cannot read table " + t.name + ": " + lib.strerror(errno));
      return res;
    }
    auto t1 = Clock::now();
    for (const auto& op : t.ops) {
      res.ops++;
      if (!Run(lib, h.get(), op)) {
        int err = errno;
        Fail(&res, op.tag, err, lib.strerror(err));
        return res;
      }
    }
    res.opsMs += ms(t1);
    handles.push_back(std::move(h));
  }
  for (size_t i = 0; i < tables.size(); i++) {
    auto t0 = Clock::now();
    bool ok = lib.commit(handles[i].get());
    res.commitMs += ms(t0);
    if (!ok) {
      int err = errno;
      Fail(&res, tables[i].tag, err, "the kernel refused table " + tables[i].name + ": " + lib.strerror(err));
      return res;
    }
    res.committedTables++;
  }
  return res;
}

ApplyResult PrepareOnly(const uint8_t* ops, size_t len) {
  ApplyResult res;
  int family = 0;
  try {
    for (const auto& t : Prepare(ops, len, &family, &res, true)) res.ops += static_cast<uint32_t>(t.ops.size());
  } catch (const BadOps& e) {
    res.badInput = e.what();
  }
  return res;
}

DumpResult Dump(int family, const std::string& table) {
  DumpResult res;
  const Lib& lib = family == 4 ? kLib4 : kLib6;
  std::lock_guard<std::mutex> g(gLibiptc);
  Handle h(lib.init(table.c_str()), lib.free);
  if (!h) {
    res.sysErrno = errno;
    res.sysWhat = "reading table " + table;
    return res;
  }
  for (const char* c = lib.firstChain(h.get()); c; c = lib.nextChain(h.get())) {
    DumpedChain chain{c, lib.builtin(c, h.get()) != 0, "", {}};
    if (chain.builtin) {
      xt_counters counters{};
      const char* p = lib.policy(c, &counters, h.get());
      chain.policy = p ? p : "";
    }
    for (const void* e = lib.firstRule(c, h.get()); e; e = lib.nextRule(e, h.get())) {
      const uint8_t* bytes = static_cast<const uint8_t*>(e);
      uint16_t size =
          family == 4 ? static_cast<const ipt_entry*>(e)->next_offset : static_cast<const ip6t_entry*>(e)->next_offset;
      DumpedRule rule{lib.target(e, h.get()), std::vector<uint8_t>(bytes, bytes + size)};
      size_t countersAt = family == 4 ? offsetof(ipt_entry, counters) : offsetof(ip6t_entry, counters);
      std::memset(rule.entry.data() + countersAt, 0, sizeof(xt_counters));
      CleanNames(rule.entry, family == 4 ? sizeof(ipt_entry) : sizeof(ip6t_entry),
                 family == 4 ? static_cast<const ipt_entry*>(e)->target_offset
                             : static_cast<const ip6t_entry*>(e)->target_offset);
      chain.rules.push_back(std::move(rule));
    }
    res.chains.push_back(std::move(chain));
  }
  return res;
}

}  // namespace palisade::iptc
