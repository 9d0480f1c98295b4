#include "selector/canonical.h"

#include <openssl/evp.h>

#include "common/base64.h"

namespace palisade::selector {
namespace {

void AppendQuoted(std::string& out, const std::string& s) {
  const char q = s.find('"') == std::string::npos ? '"' : '\'';
  out += q;
  out += s;
  out += q;
}

void AppendLabelOp(std::string& out, const Node& n, const char* op) {
  out += n.label;
  out += op;
  AppendQuoted(out, n.value);
}

void AppendSet(std::string& out, const Node& n, const char* op) {
  out += n.label;
  out += op;
  out += '{';
  for (size_t i = 0; i < n.values.size(); ++i) {
    if (i) out += ", ";
    AppendQuoted(out, n.values[i]);
  }
  out += '}';
}

void Append(std::string& out, const Node& n) {
  switch (n.op) {
    case Op::All:
      out += "all()";
      return;
    case Op::Global:
      out += "global()";
      return;
    case Op::Has:
      out += "has(";
      out += n.label;
      out += ')';
      return;
    case Op::Eq:
      AppendLabelOp(out, n, " == ");
      return;
    case Op::Ne:
      AppendLabelOp(out, n, " != ");
      return;
    case Op::Contains:
      AppendLabelOp(out, n, " contains ");
      return;
    case Op::StartsWith:
      AppendLabelOp(out, n, " starts with ");
      return;
    case Op::EndsWith:
      AppendLabelOp(out, n, " ends with ");
      return;
    case Op::In:
      AppendSet(out, n, " in ");
      return;
    case Op::NotIn:
      AppendSet(out, n, " not in ");
      return;
    case Op::Not:
      out += '!';
      Append(out, n.children[0]);
      return;
    case Op::And:
    case Op::Or: {
      const char* sep = n.op == Op::And ? " && " : " || ";
      out += '(';
      for (size_t i = 0; i < n.children.size(); ++i) {
        if (i) out += sep;
        Append(out, n.children[i]);
      }
      out += ')';
      return;
    }
  }
}

}  // namespace

void PrefixLabels(Node& n, const std::string& prefix) {
  if (!n.label.empty()) n.label.insert(0, prefix);
  for (Node& c : n.children) PrefixLabels(c, prefix);
}

std::string Canonical(const Node& root) {
  std::string out;
  out.reserve(64);
  Append(out, root);
  return out;
}

std::string UniqueId(const std::string& canonical) {
  const std::string input = "s:" + canonical;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &len, EVP_sha224(), nullptr) != 1) return {};
  std::string out = "s:";
  palisade::Base64UrlNoPad(digest, len, out);
  return out;
}

}  // namespace palisade::selector
