#include "selector/parser.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace palisade::selector {
namespace {

enum class Tok : uint8_t {
  Label,
  String,
  LBrace,
  RBrace,
  Comma,
  Eq,
  Ne,
  In,
  Not,
  NotIn,
  Contains,
  StartsWith,
  EndsWith,
  All,
  Has,
  LParen,
  RParen,
  And,
  Or,
  Global,
  End,
};

struct Token {
  Tok kind;
  size_t offset;          // where the token starts in the input
  std::string_view text;  // label name or string literal contents
};

const char* kOperandExpected = "a label, has(...), all(), global(), '!' or '('";
const char* kOperatorExpected = "an operator: ==, !=, in, not in, contains, starts with or ends with";

bool IsLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '/' || c == '-';
}

// Calico treats only space and tab as white space; anything else is an error.
bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string Describe(std::string_view in, size_t at) {
  if (at >= in.size()) return "end of input";
  std::string s = "'";
  s += in[at];
  s += "'";
  return s;
}

std::string DescribeToken(std::string_view in, const Token& t) {
  switch (t.kind) {
    case Tok::End:
      return "end of input";
    case Tok::Label:
      return "label '" + std::string(t.text) + "'";
    case Tok::String:
      return "string \"" + std::string(t.text) + "\"";
    default:
      break;
  }
  // Everything else is an operator or punctuation: show its source text.
  size_t end = t.offset;
  while (end < in.size() && !IsSpace(in[end]) && end - t.offset < 12) {
    ++end;
    if (in[end - 1] == '(' || in[end - 1] == ')' || in[end - 1] == '{' || in[end - 1] == '}' || in[end - 1] == ',') {
      break;
    }
  }
  return "'" + std::string(in.substr(t.offset, end - t.offset)) + "'";
}

class Tokenizer {
 public:
  explicit Tokenizer(std::string_view in) : in_(in) {}

  bool Run(std::vector<Token>& out, ParseError& err) {
    size_t p = 0;
    for (;;) {
      while (p < in_.size() && IsSpace(in_[p])) ++p;
      if (p == in_.size()) {
        out.push_back({Tok::End, p, {}});
        return true;
      }
      const bool afterLabel = !out.empty() && out.back().kind == Tok::Label;
      const char c = in_[p];
      switch (c) {
        case '(':
          out.push_back({Tok::LParen, p, {}});
          ++p;
          continue;
        case ')':
          out.push_back({Tok::RParen, p, {}});
          ++p;
          continue;
        case '{':
          out.push_back({Tok::LBrace, p, {}});
          ++p;
          continue;
        case '}':
          out.push_back({Tok::RBrace, p, {}});
          ++p;
          continue;
        case ',':
          out.push_back({Tok::Comma, p, {}});
          ++p;
          continue;
        case '"':
        case '\'': {
          const size_t close = in_.find(c, p + 1);
          if (close == std::string_view::npos) {
            return Fail(err, p, "unterminated string", std::string("a closing ") + c, "end of input");
          }
          out.push_back({Tok::String, p, in_.substr(p + 1, close - p - 1)});
          p = close + 1;
          continue;
        }
        case '=':
          if (p + 1 < in_.size() && in_[p + 1] == '=') {
            out.push_back({Tok::Eq, p, {}});
            p += 2;
            continue;
          }
          return Fail(err, p, "single '='", "'=='", Describe(in_, p + 1));
        case '!':
          if (p + 1 < in_.size() && in_[p + 1] == '=') {
            out.push_back({Tok::Ne, p, {}});
            p += 2;
          } else {
            out.push_back({Tok::Not, p, {}});
            p += 1;
          }
          continue;
        case '&':
          if (p + 1 < in_.size() && in_[p + 1] == '&') {
            out.push_back({Tok::And, p, {}});
            p += 2;
            continue;
          }
          return Fail(err, p, "single '&'", "'&&'", Describe(in_, p + 1));
        case '|':
          if (p + 1 < in_.size() && in_[p + 1] == '|') {
            out.push_back({Tok::Or, p, {}});
            p += 2;
            continue;
          }
          return Fail(err, p, "single '|'", "'||'", Describe(in_, p + 1));
        default:
          break;
      }
      if (afterLabel) {
        if (!Operator(out, p, err)) return false;
        continue;
      }
      if (!Word(out, p, err)) return false;
    }
  }

 private:
  bool StartsWith(size_t p, std::string_view word) const { return in_.substr(p, word.size()) == word; }

  size_t SkipSpace(size_t p) const {
    while (p < in_.size() && IsSpace(in_[p])) ++p;
    return p;
  }

  // After a label, Calico looks for a word operator (and accepts "notin", "startswith",
  // "endswith" because it skips white space between the two words).
  bool Operator(std::vector<Token>& out, size_t& p, ParseError& err) {
    const size_t start = p;
    auto second = [&](size_t after, std::string_view word, Tok kind) {
      size_t q = SkipSpace(after);
      if (!StartsWith(q, word)) {
        Fail(err, q, "incomplete operator after label '" + std::string(out.back().text) + "'",
             "'" + std::string(word) + "'", Describe(in_, q));
        return false;
      }
      out.push_back({kind, start, {}});
      p = q + word.size();
      return true;
    };
    if (StartsWith(p, "contains")) {
      out.push_back({Tok::Contains, p, {}});
      p += 8;
      return true;
    }
    if (StartsWith(p, "starts")) return second(p + 6, "with", Tok::StartsWith);
    if (StartsWith(p, "ends")) return second(p + 4, "with", Tok::EndsWith);
    if (StartsWith(p, "not")) return second(p + 3, "in", Tok::NotIn);
    if (StartsWith(p, "in")) {
      out.push_back({Tok::In, p, {}});
      p += 2;
      return true;
    }
    return Fail(err, p, "unexpected characters after label '" + std::string(out.back().text) + "'", kOperatorExpected,
                Describe(in_, p));
  }

  bool Call(std::vector<Token>& out, size_t& p, size_t nameLen, Tok kind, ParseError& err) {
    const size_t start = p;
    size_t q = SkipSpace(p + nameLen);
    std::string_view label;
    if (kind == Tok::Has) {
      size_t e = q;
      while (e < in_.size() && IsLabelChar(in_[e])) ++e;
      if (e == q) return Fail(err, q, "no label name in has()", "a label name", Describe(in_, q));
      label = in_.substr(q, e - q);
      q = SkipSpace(e);
    }
    if (q >= in_.size() || in_[q] != ')') {
      return Fail(err, q, "unclosed " + std::string(in_.substr(start, nameLen - 1)) + "()", "')'", Describe(in_, q));
    }
    out.push_back({kind, start, label});
    p = q + 1;
    return true;
  }

  bool Word(std::vector<Token>& out, size_t& p, ParseError& err) {
    if (StartsWith(p, "has(")) return Call(out, p, 4, Tok::Has, err);
    if (StartsWith(p, "all(")) return Call(out, p, 4, Tok::All, err);
    if (StartsWith(p, "global(")) return Call(out, p, 7, Tok::Global, err);
    size_t e = p;
    while (e < in_.size() && IsLabelChar(in_[e])) ++e;
    if (e == p) return Fail(err, p, "unexpected character", kOperandExpected, Describe(in_, p));
    out.push_back({Tok::Label, p, in_.substr(p, e - p)});
    p = e;
    return true;
  }

  static bool Fail(ParseError& err, size_t at, std::string msg, std::string expected, std::string found) {
    err.offset = at;
    err.message = std::move(msg);
    err.expected = std::move(expected);
    err.found = std::move(found);
    return false;
  }

  std::string_view in_;
};

// Recursive descent over the token list, mirroring Calico's parseOrExpression /
// parseAndExpression / parseOperation. The token list always ends with Tok::End, so
// looking one token ahead never runs off the end.
class Parser {
 public:
  Parser(std::string_view in, const std::vector<Token>& toks) : in_(in), toks_(toks) {}

  bool Root(Node& out, ParseError& err) {
    if (toks_[0].kind == Tok::End) {
      out = Node{};  // the empty selector is all()
      return true;
    }
    if (!OrExpr(out, err, 0)) return false;
    if (toks_[i_].kind != Tok::End) {
      return Fail(err, toks_[i_], "unexpected content after the end of the expression",
                  "'&&', '||' or the end of the selector");
    }
    return true;
  }

 private:
  // Guards the C++ stack against pathological nesting such as 100,000 '('.
  static constexpr int kMaxDepth = 256;

  // `next (sep next)*`: one operand stays itself, more become one node of `op`, in source
  // order (Calico does not flatten or reorder).
  bool Chain(Node& out, ParseError& err, int depth, Tok sep, Op op, bool (Parser::*next)(Node&, ParseError&, int)) {
    Node first;
    if (!(this->*next)(first, err, depth)) return false;
    if (toks_[i_].kind != sep) {
      out = std::move(first);
      return true;
    }
    Node n;
    n.op = op;
    n.children.push_back(std::move(first));
    while (toks_[i_].kind == sep) {
      ++i_;
      Node operand;
      if (!(this->*next)(operand, err, depth)) return false;
      n.children.push_back(std::move(operand));
    }
    out = std::move(n);
    return true;
  }

  bool OrExpr(Node& out, ParseError& err, int depth) {
    return Chain(out, err, depth, Tok::Or, Op::Or, &Parser::AndExpr);
  }

  bool AndExpr(Node& out, ParseError& err, int depth) {
    return Chain(out, err, depth, Tok::And, Op::And, &Parser::Operation);
  }

  bool Operation(Node& out, ParseError& err, int depth) {
    bool negated = false;
    while (toks_[i_].kind == Tok::Not) {
      negated = !negated;
      ++i_;
    }
    const Token& t = toks_[i_];
    Node n;
    switch (t.kind) {
      case Tok::Has:
        n.op = Op::Has;
        n.label = std::string(t.text);
        ++i_;
        break;
      case Tok::All:
        n.op = Op::All;
        ++i_;
        break;
      case Tok::Global:
        n.op = Op::Global;
        ++i_;
        break;
      case Tok::Label:
        if (!LabelOp(n, err)) return false;
        break;
      case Tok::LParen: {
        if (depth >= kMaxDepth) return Fail(err, t, "parentheses nested too deeply", "at most 256 levels");
        ++i_;
        if (!OrExpr(n, err, depth + 1)) return false;
        if (toks_[i_].kind != Tok::RParen) return Fail(err, toks_[i_], "unbalanced parentheses", "')'");
        ++i_;
        break;
      }
      default:
        return Fail(err, t, "missing operand", kOperandExpected);
    }
    if (negated) {
      Node wrap;
      wrap.op = Op::Not;
      wrap.children.push_back(std::move(n));
      out = std::move(wrap);
    } else {
      out = std::move(n);
    }
    return true;
  }

  bool LabelOp(Node& n, ParseError& err) {
    n.label = std::string(toks_[i_].text);
    ++i_;
    const Token& op = toks_[i_];
    switch (op.kind) {
      case Tok::Eq:
        n.op = Op::Eq;
        break;
      case Tok::Ne:
        n.op = Op::Ne;
        break;
      case Tok::Contains:
        n.op = Op::Contains;
        break;
      case Tok::StartsWith:
        n.op = Op::StartsWith;
        break;
      case Tok::EndsWith:
        n.op = Op::EndsWith;
        break;
      case Tok::In:
        n.op = Op::In;
        break;
      case Tok::NotIn:
        n.op = Op::NotIn;
        break;
      default:
        return Fail(err, op, "label '" + n.label + "' without an operator", kOperatorExpected);
    }
    ++i_;
    if (n.op == Op::In || n.op == Op::NotIn) return SetLiteral(n, err);
    const Token& lit = toks_[i_];
    if (lit.kind != Tok::String) {
      return Fail(err, lit, "the right-hand side of '" + n.label + "' must be a string literal", "a quoted string");
    }
    n.value = std::string(lit.text);
    ++i_;
    return true;
  }

  bool SetLiteral(Node& n, ParseError& err) {
    if (toks_[i_].kind != Tok::LBrace) return Fail(err, toks_[i_], "expected a set literal", "'{'");
    ++i_;
    while (toks_[i_].kind == Tok::String) {
      n.values.emplace_back(toks_[i_].text);
      ++i_;
      if (toks_[i_].kind != Tok::Comma) break;
      ++i_;
    }
    if (toks_[i_].kind != Tok::RBrace) {
      return Fail(err, toks_[i_], "unterminated set literal", "a quoted string, ',' or '}'");
    }
    ++i_;
    std::sort(n.values.begin(), n.values.end());
    n.values.erase(std::unique(n.values.begin(), n.values.end()), n.values.end());
    return true;
  }

  bool Fail(ParseError& err, const Token& at, std::string msg, std::string expected) const {
    err.offset = at.offset;
    err.message = std::move(msg);
    err.expected = std::move(expected);
    err.found = DescribeToken(in_, at);
    return false;
  }

  std::string_view in_;
  const std::vector<Token>& toks_;
  size_t i_ = 0;
};

}  // namespace

bool Parse(std::string_view input, Node& out, ParseError& err) {
  std::vector<Token> toks;
  toks.reserve(16);
  if (!Tokenizer(input).Run(toks, err)) return false;
  return Parser(input, toks).Root(out, err);
}

}  // namespace palisade::selector
