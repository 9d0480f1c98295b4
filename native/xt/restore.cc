#include "xt/restore.h"

#include <linux/netfilter/x_tables.h>

namespace palisade::xt {

RestoreTx DecodeRestore(const uint8_t* ops, size_t len) {
  OpReader r(ops, len, "iptables op stream");
  RestoreTx tx;
  tx.family = r.u8();
  if (tx.family != 4 && tx.family != 6) throw BadOps("the iptables op stream starts with its family, 4 or 6");
  while (!r.done()) {
    auto op = static_cast<RestoreOpKind>(r.u8());
    uint32_t tag = r.u32();
    if (op == kTable) {
      RestoreTable t;
      t.name = r.str(XT_TABLE_MAXNAMELEN - 1);
      t.tag = tag;
      tx.tables.push_back(std::move(t));
      continue;
    }
    if (tx.tables.empty()) throw BadOps("an iptables op before its table");
    if (op < kDeclare || op > kDestroy) throw BadOps("unknown iptables op " + std::to_string(op));
    RestoreOp o;
    o.op = op;
    o.tag = tag;
    o.chain = r.str(kChainMax);
    if (op == kInsert) {
      o.pos = r.u32();
      if (o.pos < 1) throw BadOps("rule positions start at 1");
    }
    if (op == kAppend || op == kInsert || op == kDelete) {
      o.rule = DecodeRule(r, tx.family);
      o.hasRule = true;
    }
    tx.tables.back().ops.push_back(std::move(o));
  }
  return tx;
}

}  // namespace palisade::xt
