// Standalone test of the native core (selector parser, canonical form, UID, evaluation,
// label index, the netlink reading guards) with no Node-API in the way, so it can run under AddressSanitizer,
// UndefinedBehaviorSanitizer, LeakSanitizer and valgrind. Usage: core_test [iterations]
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/netlink_read.h"
#include "labelindex/label_index.h"
#include "selector/canonical.h"
#include "selector/evaluate.h"
#include "selector/parser.h"

using namespace palisade;

static int g_pass = 0, g_fail = 0;

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (cond) {                                                 \
      ++g_pass;                                                 \
    } else {                                                    \
      ++g_fail;                                                 \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                        \
      std::fprintf(stderr, "\n");                               \
    }                                                           \
  } while (0)

using Labels = std::map<std::string, std::string>;

static bool Eval(const selector::Node& n, const Labels& labels) {
  auto lookup = [&](const std::string& k, std::string_view* v) {
    auto it = labels.find(k);
    if (it == labels.end()) return false;
    *v = it->second;
    return true;
  };
  return selector::Evaluate(n, lookup);
}

static void TestCanonical() {
  struct Case {
    const char* in;
    const char* canon;
    const char* uid;
  };
  const Case cases[] = {
      {"", "all()", "s:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug"},
      {" all() ", "all()", "s:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug"},
      {" (all() )", "all()", "s:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug"},
      {"! (has( b)||! has(a ))", "!(has(b) || !has(a))", "s:Iss0uCleLYv1GSv_pNm7hAO58kE9jAx1NKyG3Q"},
      {"! (a == \"b\"&&! c != \"d\")", "!(a == \"b\" && !c != \"d\")", "s:lh3haoY1ikTRkd4UZu0nWSaIBknYLPJLX16d-w"},
      {"a startswith '\"'", "a starts with '\"'", nullptr},
      {"a in {\"z\", \"z\", \"x\", \"y\", \"x\", \"a\"}", "a in {\"a\", \"x\", \"y\", \"z\"}", nullptr},
  };
  for (const Case& c : cases) {
    selector::Node n;
    selector::ParseError err;
    const bool ok = selector::Parse(c.in, n, err);
    CHECK(ok, "parse %s: %s", c.in, err.message.c_str());
    if (!ok) continue;
    const std::string canon = selector::Canonical(n);
    CHECK(canon == c.canon, "canonical of %s: got %s", c.in, canon.c_str());
    if (c.uid) CHECK(selector::UniqueId(canon) == c.uid, "uid of %s", c.in);
  }
  const char* bad[] = {
      "b == b",        "'b1' == b", "b",  "a b", "!",  "foo == \"bar\" &", "foo in {\"\", ||", "\"FOO", "(",
      "(a == \"foo\"", ")",         "()", "%",   "a ", "has(foo) &&",      "a\n== \"b\""};
  for (const char* b : bad) {
    selector::Node n;
    selector::ParseError err;
    CHECK(!selector::Parse(b, n, err), "accepted bad selector %s", b);
  }
  // Deep nesting must be refused, not overflow the stack.
  std::string deep(100000, '(');
  selector::Node n;
  selector::ParseError err;
  CHECK(!selector::Parse(deep, n, err), "accepted 100000 parens");
}

// ---- randomized differential test of the label index ----------------------------------

struct Model {
  std::map<uint32_t, std::pair<Labels, std::vector<uint32_t>>> items;
  std::map<uint32_t, Labels> parents;
  std::map<uint32_t, selector::Node> sels;
};

static const char* kKeys[] = {"app", "tier", "env", "a", "b", "zone"};
static const char* kVals[] = {"x", "y", "web", "db", "", "xy", "\"q\""};

static std::string RandomSelector(std::mt19937& rng, int depth = 0) {
  auto key = [&] { return std::string(kKeys[rng() % 6]); };
  auto val = [&] {
    std::string v = kVals[rng() % 7];
    return v.find('"') == std::string::npos ? "\"" + v + "\"" : "'" + v + "'";
  };
  switch (rng() % (depth > 2 ? 9 : 12)) {
    case 0:
      return key() + " == " + val();
    case 1:
      return key() + " != " + val();
    case 2:
      return "has(" + key() + ")";
    case 3:
      return "!has(" + key() + ")";
    case 4:
      return key() + " in {" + val() + ", " + val() + "}";
    case 5:
      return key() + " not in {" + val() + "}";
    case 6:
      return key() + " contains " + val();
    case 7:
      return key() + " starts with " + val();
    case 8:
      return rng() % 3 ? key() + " ends with " + val() : "all()";
    case 9:
      return "(" + RandomSelector(rng, depth + 1) + " && " + RandomSelector(rng, depth + 1) + ")";
    case 10:
      return "(" + RandomSelector(rng, depth + 1) + " || " + RandomSelector(rng, depth + 1) + ")";
    default:
      return "!(" + RandomSelector(rng, depth + 1) + ")";
  }
}

static Labels RandomLabels(std::mt19937& rng) {
  Labels l;
  const int n = rng() % 4;
  for (int i = 0; i < n; ++i) l[kKeys[rng() % 6]] = kVals[rng() % 7];
  return l;
}

static std::vector<labelindex::Label> ToIds(labelindex::LabelIndex& idx, const Labels& l) {
  std::vector<labelindex::Label> out;
  for (auto& [k, v] : l) out.push_back({idx.Strings().Intern(k), idx.Strings().Intern(v)});
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.key < b.key; });
  return out;
}

static Labels Effective(const Model& m, uint32_t item) {
  Labels out = m.items.at(item).first;
  for (uint32_t p : m.items.at(item).second) {
    auto f = m.parents.find(p);
    if (f == m.parents.end()) continue;
    for (auto& [k, v] : f->second) out.emplace(k, v);  // emplace keeps the first
  }
  return out;
}

static void TestIndexRandom(int iterations, unsigned seed) {
  std::mt19937 rng(seed);
  labelindex::LabelIndex idx;
  Model m;
  std::set<std::pair<uint32_t, uint32_t>> seen;  // (selector, item) built from Changes()
  int checks = 0;
  for (int it = 0; it < iterations; ++it) {
    const int op = rng() % 10;
    if (op < 3) {
      const uint32_t id = rng() % 40;
      Labels l = RandomLabels(rng);
      std::vector<uint32_t> parents;
      for (int k = rng() % 3; k > 0; --k) parents.push_back(rng() % 5);
      std::vector<uint32_t> dedup;
      for (uint32_t p : parents)
        if (std::find(dedup.begin(), dedup.end(), p) == dedup.end()) dedup.push_back(p);
      m.items[id] = {l, dedup};
      idx.UpsertItem(id, ToIds(idx, l), parents);
    } else if (op == 3) {
      const uint32_t id = rng() % 40;
      m.items.erase(id);
      idx.DeleteItem(id);
    } else if (op == 4) {
      const uint32_t id = rng() % 5;
      Labels l = RandomLabels(rng);
      m.parents[id] = l;
      idx.UpsertParent(id, ToIds(idx, l));
    } else if (op == 5) {
      const uint32_t id = rng() % 5;
      m.parents.erase(id);
      idx.DeleteParent(id);
    } else if (op < 9) {
      const uint32_t id = rng() % 30;
      selector::Node n;
      selector::ParseError err;
      const std::string text = RandomSelector(rng);
      if (!selector::Parse(text, n, err)) {
        CHECK(false, "random selector did not parse: %s (%s)", text.c_str(), err.message.c_str());
        continue;
      }
      idx.UpsertSelector(id, n, selector::Canonical(n));
      m.sels[id] = n;
    } else {
      const uint32_t id = rng() % 30;
      m.sels.erase(id);
      idx.DeleteSelector(id);
    }
    const labelindex::WordBuffer& ch = idx.Changes();
    for (size_t k = 0; k < ch.size(); k += 2) {
      const uint32_t sel = ch[k], item = ch[k + 1] & ~labelindex::kStartedBit;
      const auto key = std::make_pair(sel, item);
      if (ch[k + 1] & labelindex::kStartedBit) {
        CHECK(seen.insert(key).second, "duplicate start %u/%u", sel, item);
      } else {
        CHECK(seen.erase(key) == 1, "stop without start %u/%u", sel, item);
      }
    }
    idx.Changes().clear();
    if (rng() % 4 == 0) idx.CollectStrings([](uint32_t) {});  // between some batches only
    std::set<std::pair<uint32_t, uint32_t>> expect;
    for (auto& [item, _] : m.items) {
      const Labels eff = Effective(m, item);
      for (auto& [sel, node] : m.sels) {
        if (Eval(node, eff)) expect.emplace(sel, item);
      }
    }
    ++checks;
    if (expect != seen) {
      CHECK(false, "iteration %d: index state diverged (%zu expected, %zu seen)", it, expect.size(), seen.size());
      return;
    }
  }
  CHECK(checks == iterations, "ran %d checks", checks);
  const labelindex::Stats st = idx.GetStats();
  CHECK(st.matches == seen.size(), "stats.matches %zu vs %zu", st.matches, seen.size());
  // Tear everything down: every match stops and every string is freed.
  for (auto& [id, _] : m.items) idx.DeleteItem(id);
  for (auto& [id, _] : m.parents) idx.DeleteParent(id);
  for (auto& [id, _] : m.sels) idx.DeleteSelector(id);
  const labelindex::WordBuffer& ch = idx.Changes();
  for (size_t k = 0; k < ch.size(); k += 2) seen.erase({ch[k], ch[k + 1] & ~labelindex::kStartedBit});
  CHECK(seen.empty(), "%zu matches left after deleting everything", seen.size());
  idx.Changes().clear();
  idx.CollectStrings([](uint32_t) {});
  CHECK(idx.GetStats().strings == 0, "%zu strings left after deleting everything", idx.GetStats().strings);
}

// Selectors added together to a full index are matched in one pass over the items
// (LabelIndex::Settle); settled one at a time they walk their candidates. Both must give
// the same matches, each started once, and the brute-force answer.
static void TestIndexBulkSelectors(unsigned seed) {
  std::mt19937 rng(seed);
  labelindex::LabelIndex one, bulk;
  Model m;
  for (uint32_t p = 0; p < 5; ++p) {
    m.parents[p] = RandomLabels(rng);
    one.UpsertParent(p, ToIds(one, m.parents[p]));
    bulk.UpsertParent(p, ToIds(bulk, m.parents[p]));
  }
  for (uint32_t id = 0; id < 200; ++id) {
    std::vector<uint32_t> parents;
    for (int k = rng() % 3; k > 0; --k) {
      const uint32_t p = rng() % 5;
      if (std::find(parents.begin(), parents.end(), p) == parents.end()) parents.push_back(p);
    }
    m.items[id] = {RandomLabels(rng), parents};
    one.UpsertItem(id, ToIds(one, m.items[id].first), parents);
    bulk.UpsertItem(id, ToIds(bulk, m.items[id].first), parents);
  }
  one.Changes().clear();
  bulk.Changes().clear();
  for (uint32_t id = 0; id < 150; ++id) {
    selector::Node n;
    selector::ParseError err;
    if (!selector::Parse(RandomSelector(rng), n, err)) continue;
    const std::string canonical = selector::Canonical(n);
    one.UpsertSelector(id, n, canonical);
    one.Settle();
    bulk.UpsertSelector(id, n, canonical);
    m.sels[id] = n;
  }
  std::set<std::pair<uint32_t, uint32_t>> seen, expect;
  const labelindex::WordBuffer& ch = bulk.Changes();
  for (size_t k = 0; k < ch.size(); k += 2) {
    CHECK(ch[k + 1] & labelindex::kStartedBit, "bulk: only starts");
    CHECK(seen.emplace(ch[k], ch[k + 1] & ~labelindex::kStartedBit).second, "bulk: each match started once");
  }
  for (auto& [item, _] : m.items) {
    const Labels eff = Effective(m, item);
    for (auto& [sel, node] : m.sels) {
      if (Eval(node, eff)) expect.emplace(sel, item);
    }
    const auto* a = one.MatchesOf(item);
    const auto* b = bulk.MatchesOf(item);
    CHECK(a && b && std::equal(a->begin(), a->end(), b->begin(), b->end()), "item %u: same matches both ways", item);
  }
  CHECK(seen == expect, "bulk: %zu matches, brute force %zu", seen.size(), expect.size());
  CHECK(one.Changes().size() == ch.size(), "as many transitions both ways");
}

// SmallVec against std::vector, across the inline/heap boundary both ways, with copies
// and moves (ASan/valgrind catch what the comparison does not).
template <uint32_t N>
static void TestSmallVec(unsigned seed) {
  std::mt19937 rng(seed);
  labelindex::SmallVec<uint32_t, N> v;
  std::vector<uint32_t> model;
  for (int step = 0; step < 20000; ++step) {
    const uint32_t x = rng() % 1000;
    switch (rng() % 9) {
      case 0:
      case 1:
        v.push_back(x);
        model.push_back(x);
        break;
      case 2:
        if (!model.empty()) {
          v.pop_back();
          model.pop_back();
        }
        break;
      case 3: {
        const size_t at = model.empty() ? 0 : rng() % (model.size() + 1);
        v.insert(v.begin() + at, x);
        model.insert(model.begin() + at, x);
        break;
      }
      case 4:
        if (!model.empty()) {
          const size_t at = rng() % model.size();
          v.erase(v.begin() + at);
          model.erase(model.begin() + at);
        }
        break;
      case 5: {
        std::vector<uint32_t> w(rng() % 7, x);
        v.assign(w);
        model = w;
        break;
      }
      case 6: {
        const uint32_t n = rng() % 6;
        v.resize(n);
        model.resize(n);
        break;
      }
      case 7: {
        labelindex::SmallVec<uint32_t, N> c(v);
        v = std::move(c);
        break;
      }
      case 8: {
        labelindex::SmallVec<uint32_t, N> c;
        c = v;
        labelindex::SmallVec<uint32_t, N> m(std::move(c));
        v = m;
        break;
      }
    }
    if (!(v == model)) {
      CHECK(false, "SmallVec<%u> diverged at step %d (size %u vs %zu)", N, step, v.size(), model.size());
      return;
    }
  }
  CHECK(true, "SmallVec");
}

// NlmsgOk refuses a length past the buffer even when it is 2^31 or more (libmnl's check
// lets it through and its iterator then loops forever); RecvFromKernel drops a message
// forged by another socket and still returns the kernel's answers.
static void TestNetlinkRead() {
  alignas(4) char buf[32] = {};
  auto* h = reinterpret_cast<nlmsghdr*>(buf);
  h->nlmsg_len = 16;
  CHECK(NlmsgOk(h, sizeof(buf)), "a 16-byte message in 32 bytes is fine");
  h->nlmsg_len = 0xfffffff0u;
  CHECK(!NlmsgOk(h, sizeof(buf)), "a 4 GiB length is refused");
  h->nlmsg_len = 33;
  CHECK(!NlmsgOk(h, sizeof(buf)), "a length past the buffer is refused");

  const int a = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  const int b = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  CHECK(a >= 0 && b >= 0, "netlink sockets: %s", std::strerror(errno));
  if (a < 0 || b < 0) return;
  sockaddr_nl self{};
  self.nl_family = AF_NETLINK;
  socklen_t sl = sizeof(self);
  CHECK(bind(a, reinterpret_cast<sockaddr*>(&self), sizeof(self)) == 0 &&
            getsockname(a, reinterpret_cast<sockaddr*>(&self), &sl) == 0,
        "bind");
  nlmsghdr forged{};
  forged.nlmsg_len = sizeof(forged);
  forged.nlmsg_type = RTM_NEWLINK;
  sockaddr_nl to{};
  to.nl_family = AF_NETLINK;
  to.nl_pid = self.nl_pid;
  // Without CAP_NET_ADMIN the kernel refuses the forgery itself; with it, we must drop it.
  const bool sent =
      sendto(b, &forged, sizeof(forged), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == sizeof(forged);
  alignas(4) char rbuf[1 << 16];
  errno = 0;
  CHECK(RecvFromKernel(a, rbuf, sizeof(rbuf), MSG_DONTWAIT) < 0 && errno == EAGAIN,
        "a forged message (sent: %d) was returned", sent);
  struct {
    nlmsghdr h;
    rtgenmsg g;
  } req{};
  req.h.nlmsg_len = sizeof(req);
  req.h.nlmsg_type = RTM_GETLINK;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.g.rtgen_family = AF_UNSPEC;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  CHECK(sendto(a, &req, sizeof(req), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) == sizeof(req),
        "dump request");
  const ssize_t n = RecvFromKernel(a, rbuf, sizeof(rbuf), 0);
  CHECK(n >= static_cast<ssize_t>(sizeof(nlmsghdr)) && reinterpret_cast<nlmsghdr*>(rbuf)->nlmsg_type == RTM_NEWLINK,
        "the kernel's answer: %zd", n);
  close(a);
  close(b);
}

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 3000;
  TestCanonical();
  TestNetlinkRead();
  TestSmallVec<0>(1);
  TestSmallVec<1>(2);
  TestSmallVec<2>(3);
  for (unsigned seed = 1; seed <= 4; ++seed) TestIndexRandom(iterations, seed);
  for (unsigned seed = 1; seed <= 4; ++seed) TestIndexBulkSelectors(seed);
  std::printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail == 0 ? 0 : 1;
}
