#include "rtnl/rules.h"

#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>

#include "rtnl/request.h"

namespace palisade::rtnl {
namespace {

uint32_t U32At(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// One op's message into `buf`; "" or why the op is malformed.
std::string BuildRule(const uint8_t* p, char* buf) {
  if (p[0] != kRuleAdd && p[0] != kRuleDelete) return "unknown rule op " + std::to_string(p[0]);
  if (p[5] != 4 && p[5] != 6) return "rule op family " + std::to_string(p[5]) + " (expected 4 or 6)";
  const uint32_t table = U32At(p + 11);
  if (!table) return "rule op without a table";
  nlmsghdr* h = mnl_nlmsg_put_header(buf);
  h->nlmsg_type = p[0] == kRuleAdd ? RTM_NEWRULE : RTM_DELRULE;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (p[0] == kRuleAdd ? NLM_F_CREATE | NLM_F_EXCL : 0);
  auto* r = static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(h, sizeof(fib_rule_hdr)));
  r->family = p[5] == 6 ? AF_INET6 : AF_INET;
  r->action = FR_ACT_TO_TBL;
  r->table = table < 256 ? static_cast<uint8_t>(table) : static_cast<uint8_t>(RT_TABLE_UNSPEC);
  if (p[6] & 1) r->flags |= FIB_RULE_INVERT;
  mnl_attr_put_u32(h, FRA_PRIORITY, U32At(p + 7));
  mnl_attr_put_u32(h, FRA_TABLE, table);
  if (U32At(p + 19)) {
    mnl_attr_put_u32(h, FRA_FWMARK, U32At(p + 15));
    mnl_attr_put_u32(h, FRA_FWMASK, U32At(p + 19));
  }
  return "";
}

}  // namespace

RouteResult ApplyRules(const uint8_t* ops, size_t len) {
  RouteResult out;
  if (len % kRuleOpSize) {
    out.badInput = "rule op stream length is not a multiple of the op size";
    return out;
  }
  // Checked whole before anything is sent: a bad stream changes nothing.
  std::vector<std::vector<char>> msgs;
  for (size_t off = 0; off < len; off += kRuleOpSize) {
    msgs.emplace_back(256, 0);
    out.badInput = BuildRule(ops + off, msgs.back().data());
    if (!out.badInput.empty()) return out;
  }
  if (msgs.empty()) return out;
  RtnlSocket s;
  if (int e = s.Open(&out.sysWhat)) {
    out.sysErrno = e;
    return out;
  }
  for (size_t i = 0; i < msgs.size(); i++) {
    const RequestStatus st = Request(s, reinterpret_cast<nlmsghdr*>(msgs[i].data()), [](const nlmsghdr*) {});
    if (st.sysErrno) {
      out.sysErrno = st.sysErrno;
      out.sysWhat = st.sysWhat;
      return out;
    }
    if (st.err) out.failures.push_back({U32At(ops + i * kRuleOpSize + 1), st.err});
    out.ops++;
  }
  return out;
}

RuleDump DumpRules() {
  RuleDump out;
  RtnlSocket s;
  if (int e = s.Open(&out.sysWhat)) {
    out.sysErrno = e;
    return out;
  }
  char buf[256];
  for (int fam : {AF_INET, AF_INET6}) {
    nlmsghdr* h = mnl_nlmsg_put_header(buf);
    h->nlmsg_type = RTM_GETRULE;
    h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    auto* rq = static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(h, sizeof(fib_rule_hdr)));
    rq->family = static_cast<uint8_t>(fam);
    const RequestStatus st = Request(s, h, [&](const nlmsghdr* m) {
      if (mnl_nlmsg_get_payload_len(m) < sizeof(fib_rule_hdr)) return;
      auto* r = static_cast<const fib_rule_hdr*>(mnl_nlmsg_get_payload(m));
      DumpedRule d{r->family == AF_INET6 ? 6 : 4, 0, r->table, 0, 0, (r->flags & FIB_RULE_INVERT) != 0, r->action};
      mnl_attr_parse(
          m, sizeof(fib_rule_hdr),
          [](const nlattr* a, void* p) {
            auto* d = static_cast<DumpedRule*>(p);
            if (mnl_attr_validate(a, MNL_TYPE_U32) < 0) return MNL_CB_OK;
            switch (mnl_attr_get_type(a)) {
              case FRA_PRIORITY:
                d->priority = mnl_attr_get_u32(a);
                break;
              case FRA_TABLE:
                d->table = mnl_attr_get_u32(a);
                break;
              case FRA_FWMARK:
                d->mark = mnl_attr_get_u32(a);
                break;
              case FRA_FWMASK:
                d->mask = mnl_attr_get_u32(a);
                break;
            }
            return MNL_CB_OK;
          },
          &d);
      out.rules.push_back(d);
    });
    if (st.sysErrno || st.err) {
      out.sysErrno = st.sysErrno ? st.sysErrno : st.err;
      out.sysWhat = st.sysErrno ? st.sysWhat : "dump rules";
      return out;
    }
  }
  return out;
}

}  // namespace palisade::rtnl
