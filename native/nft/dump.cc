#include "nft/dump.h"

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <sched.h>

#include <cerrno>
#include <ctime>
#include <functional>

#include "common/netlink_read.h"
#include "nft/netlink.h"

namespace palisade::nft {
namespace {

int Trampoline(const nlmsghdr* h, void* data) { return (*static_cast<DumpParse*>(data))(h); }

// One request and every answer to it, up to the kernel's end of it (a dump's DONE, an
// acknowledgement) or an error; each answer to `parse` when given.
int Exchange(NlSocket& sock, uint16_t type, uint8_t family, uint16_t flags, const std::function<void(nlmsghdr*)>& build,
             DumpParse* parse) {
  static thread_local std::vector<char> buf(256 * 1024);
  uint32_t seq = static_cast<uint32_t>(time(nullptr));
  nlmsghdr* h = nftnl_nlmsg_build_hdr(buf.data(), type, family, flags, seq);
  build(h);
  if (mnl_socket_sendto(sock.get(), h, h->nlmsg_len) < 0) return errno;
  for (;;) {
    ssize_t n = RecvFromKernel(mnl_socket_get_fd(sock.get()), buf.data(), buf.size(), 0);
    if (n < 0) return errno == EINTR ? EINTR : errno;
    int r = mnl_cb_run(buf.data(), n, seq, sock.portid(), parse ? Trampoline : nullptr, parse);
    if (r < 0) return errno;
    if (r == MNL_CB_STOP) return 0;
    // A reschedule between two parts of a dump: each part is read under rcu_read_lock,
    // and this thread, always back in the kernel for the next, gave RCU no quiescent
    // state for tens of ms. A commit beside the dump waits for a grace period: 20 members
    // of a 250,000-element set took 55 ms at the median, 215-223 ms at worst; with this,
    // 15 and 31-40 (docs/dataplane.md, "Refresh timers").
    if (flags & NLM_F_DUMP) sched_yield();
  }
}

}  // namespace

int DumpRequest(NlSocket& sock, uint16_t type, uint8_t family, const std::function<void(nlmsghdr*)>& build,
                DumpParse parse) {
  return Exchange(sock, type, family, NLM_F_DUMP, build, &parse);
}

// The object, then the acknowledgement; or only an error.
int GetRequest(NlSocket& sock, uint16_t type, uint8_t family, const std::function<void(nlmsghdr*)>& build) {
  return Exchange(sock, type, family, NLM_F_ACK, build, nullptr);
}

namespace {

// The table's chains, with their hook declarations (the kernel filters by family; we by table).
int ListChains(NlSocket& sock, uint8_t family, const std::string& table, DumpResult& out) {
  return DumpRequest(
      sock, NFT_MSG_GETCHAIN, family, [](nlmsghdr*) {},
      [&](const nlmsghdr* h) {
        nftnl_chain* c = nftnl_chain_alloc();
        if (!c) return MNL_CB_ERROR;
        if (nftnl_chain_nlmsg_parse(h, c) == 0 && table == nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE)) {
          DumpChain d;
          d.name = nftnl_chain_get_str(c, NFTNL_CHAIN_NAME);
          if (nftnl_chain_is_set(c, NFTNL_CHAIN_HOOKNUM)) {
            d.base = true;
            d.hook = nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM);
            d.prio = nftnl_chain_get_s32(c, NFTNL_CHAIN_PRIO);
            if (nftnl_chain_is_set(c, NFTNL_CHAIN_TYPE)) d.type = nftnl_chain_get_str(c, NFTNL_CHAIN_TYPE);
            if (nftnl_chain_is_set(c, NFTNL_CHAIN_POLICY)) d.policy = nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY);
          }
          out.exists = true;
          out.chains.push_back(std::move(d));
        }
        nftnl_chain_free(c);
        return MNL_CB_OK;
      });
}

// One chain's rules. The kernel resumes a multi-part rule dump by counting rules from
// the start of the family's first chain: one dump of a whole 200,000-rule table walked
// O(n^2) rules (26 s on 6.18); a dump filtered to one chain walks only it.
int ListRules(NlSocket& sock, uint8_t family, const std::string& table, const std::string& chain, DumpResult& out) {
  return DumpRequest(
      sock, NFT_MSG_GETRULE, family,
      [&](nlmsghdr* h) {
        nftnl_rule* r = nftnl_rule_alloc();
        if (!r) return;
        nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table.c_str());
        nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain.c_str());
        nftnl_rule_nlmsg_build_payload(h, r);
        nftnl_rule_free(r);
      },
      [&](const nlmsghdr* h) {
        nftnl_rule* r = nftnl_rule_alloc();
        if (!r) return MNL_CB_ERROR;
        if (nftnl_rule_nlmsg_parse(h, r) == 0) {
          DumpRule d;
          d.chain = nftnl_rule_get_str(r, NFTNL_RULE_CHAIN);
          d.handle = nftnl_rule_get_u64(r, NFTNL_RULE_HANDLE);
          uint32_t len = 0;
          if (nftnl_rule_is_set(r, NFTNL_RULE_USERDATA)) {
            const void* ud = nftnl_rule_get_data(r, NFTNL_RULE_USERDATA, &len);
            d.udata.assign(static_cast<const char*>(ud), len);
          }
          out.rules.push_back(std::move(d));
        }
        nftnl_rule_free(r);
        return MNL_CB_OK;
      });
}

// The table's named sets and maps, headers only (anonymous sets belong to their rules).
int ListSets(NlSocket& sock, uint8_t family, const std::string& table, DumpResult& out) {
  return DumpRequest(
      sock, NFT_MSG_GETSET, family,
      [&](nlmsghdr* h) {
        nftnl_set* s = nftnl_set_alloc();
        if (!s) return;
        nftnl_set_set_str(s, NFTNL_SET_TABLE, table.c_str());
        nftnl_set_nlmsg_build_payload(h, s);
        nftnl_set_free(s);
      },
      [&](const nlmsghdr* h) {
        nftnl_set* s = nftnl_set_alloc();
        if (!s) return MNL_CB_ERROR;
        if (nftnl_set_nlmsg_parse(h, s) == 0) {
          // A table holding sets and no chain exists too (else a cold start would create
          // its sets again, and the kernel refuse that, at every retry).
          out.exists = true;
          uint32_t flags = nftnl_set_get_u32(s, NFTNL_SET_FLAGS);
          if (!(flags & NFT_SET_ANONYMOUS)) {
            DumpSet d;
            d.name = nftnl_set_get_str(s, NFTNL_SET_NAME);
            d.flags = flags;
            d.keyType = nftnl_set_get_u32(s, NFTNL_SET_KEY_TYPE);
            d.keyLen = nftnl_set_get_u32(s, NFTNL_SET_KEY_LEN);
            if (nftnl_set_is_set(s, NFTNL_SET_DATA_TYPE)) d.dataType = nftnl_set_get_u32(s, NFTNL_SET_DATA_TYPE);
            out.sets.push_back(std::move(d));
          }
        }
        nftnl_set_free(s);
        return MNL_CB_OK;
      });
}

int ListElems(NlSocket& sock, uint8_t family, const std::string& table, DumpSet& set) {
  return DumpRequest(
      sock, NFT_MSG_GETSETELEM, family,
      [&](nlmsghdr* h) {
        nftnl_set* s = nftnl_set_alloc();
        if (!s) return;
        nftnl_set_set_str(s, NFTNL_SET_TABLE, table.c_str());
        nftnl_set_set_str(s, NFTNL_SET_NAME, set.name.c_str());
        nftnl_set_elems_nlmsg_build_payload(h, s);
        nftnl_set_free(s);
      },
      [&](const nlmsghdr* h) {
        nftnl_set* s = nftnl_set_alloc();
        if (!s) return MNL_CB_ERROR;
        if (nftnl_set_elems_nlmsg_parse(h, s) == 0) {
          nftnl_set_elems_iter* it = nftnl_set_elems_iter_create(s);
          for (nftnl_set_elem* el = it ? nftnl_set_elems_iter_next(it) : nullptr; el;
               el = nftnl_set_elems_iter_next(it)) {
            DumpElem d;
            uint32_t len = 0;
            const void* k = nftnl_set_elem_get(el, NFTNL_SET_ELEM_KEY, &len);
            if (k) d.key.assign(static_cast<const char*>(k), len);
            if (nftnl_set_elem_is_set(el, NFTNL_SET_ELEM_FLAGS))
              d.flags = nftnl_set_elem_get_u32(el, NFTNL_SET_ELEM_FLAGS);
            if (nftnl_set_elem_is_set(el, NFTNL_SET_ELEM_VERDICT)) {
              d.hasVerdict = true;
              d.verdict = static_cast<int32_t>(nftnl_set_elem_get_u32(el, NFTNL_SET_ELEM_VERDICT));
              if (nftnl_set_elem_is_set(el, NFTNL_SET_ELEM_CHAIN))
                d.chain = nftnl_set_elem_get_str(el, NFTNL_SET_ELEM_CHAIN);
            }
            set.elems.push_back(std::move(d));
          }
          if (it) nftnl_set_elems_iter_destroy(it);
        }
        nftnl_set_free(s);
        return MNL_CB_OK;
      });
}

// Each named chain's rules and each named set's elements (a part of a check: no catalogue).
// ENOENT: that set is not there (`gone`).
int DumpParts(NlSocket& sock, uint8_t family, const std::string& table, const DumpScope& scope, DumpResult& out) {
  for (const std::string& name : scope.rulesOf) {
    DumpChain c;
    c.name = name;
    int e = ListRules(sock, family, table, name, out);
    if (e && e != ENOENT) return e;
    out.chains.push_back(std::move(c));
  }
  for (const std::string& name : scope.elementsOf) {
    DumpSet s;
    s.name = name;
    int e = ListElems(sock, family, table, s);
    if (e == ENOENT)
      s.gone = true;
    else if (e)
      return e;
    out.sets.push_back(std::move(s));
  }
  return 0;
}

}  // namespace

namespace {

DumpResult DumpWith(NlSocket& sock, uint8_t family, const std::string& table, const DumpScope* scope) {
  DumpResult out;
  sock.SizeFor(0, 8u << 20);
  auto fail = [&](int e, const char* what) {
    out.sysErrno = e;
    out.sysWhat = what;
    return out;
  };
  if (scope && !scope->catalogue) {
    out.exists = true;
    if (int e = DumpParts(sock, family, table, *scope, out)) return fail(e, "dump rules and set elements");
    return out;
  }
  if (int e = ListChains(sock, family, table, out)) return fail(e, "dump chains");
  if (!scope) {
    for (const DumpChain& chain : out.chains) {
      // ENOENT: the chain went away since the chain dump (someone else's doing: it is drift).
      int e = ListRules(sock, family, table, chain.name, out);
      if (e && e != ENOENT) return fail(e, "dump rules");
    }
  }
  int e = ListSets(sock, family, table, out);
  if (e && e != ENOENT) return fail(e, "dump sets");
  if (scope) return out;
  for (DumpSet& set : out.sets) {
    e = ListElems(sock, family, table, set);
    if (e && e != ENOENT) return fail(e, "dump set elements");
  }
  return out;
}

}  // namespace

DumpResult Dump(uint8_t family, const std::string& table, const DumpScope* scope) {
  PooledSocket lease;
  std::string what;
  if (int e = lease.Open(&what)) {
    DumpResult out;
    out.sysErrno = e;
    out.sysWhat = what;
    return out;
  }
  DumpResult out = DumpWith(lease.sock(), family, table, scope);
  // Each request was read to its end (NLMSG_DONE, or the one error that answers it).
  if (!out.sysErrno) lease.Reusable();
  return out;
}

}  // namespace palisade::nft
