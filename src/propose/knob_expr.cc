// A recursive-descent parser and evaluator for knob constraints.
#include "propose/knob_expr.h"

#include <cctype>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace kopt {

struct KnobExpr::Node {
  enum class Op {
    kNumber,
    kName,
    kNeg,
    kNot,
    kAdd,
    kSub,
    kMul,
    kDiv,
    kMod,
    kLt,
    kLe,
    kGt,
    kGe,
    kEq,
    kNe,
    kAnd,
    kOr
  };
  Op op = Op::kNumber;
  long long number = 0;
  std::string name;
  std::shared_ptr<const Node> a, b;
};

namespace {

using Node = KnobExpr::Node;
using Op = Node::Op;
using NodePtr = std::shared_ptr<const Node>;

enum class Tok { kNumber, kName, kOp, kLParen, kRParen, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;
  long long number = 0;
  std::size_t column = 0;  ///< 1-based, in the expression text
};

constexpr char kHowTo[] =
    "write it with integers, knob names, + - * / %, comparisons, && || ! and parentheses";

class Parser {
 public:
  Parser(const std::string& text, const std::string& where, std::set<std::string>* names)
      : text_(text), where_(where), names_(names) {
    Tokenize();
  }

  NodePtr ParseAll() {
    if (tokens_.size() == 1) Fail("is empty", 1);
    NodePtr n = ParseOr();
    if (Peek().kind != Tok::kEnd)
      Fail(fmt::format("has an unexpected `{}`", Peek().text), Peek().column);
    return n;
  }

 private:
  [[noreturn]] void Fail(const std::string& problem, std::size_t column) const {
    throw Error(fmt::format("{}: the constraint `{}` {} at column {}: {}.", where_, text_, problem,
                            column, kHowTo));
  }

  void Tokenize() {
    std::size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
        continue;
      }
      Token t;
      t.column = i + 1;
      if (std::isdigit(static_cast<unsigned char>(c))) {
        std::size_t j = i;
        long long v = 0;
        while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) {
          if (__builtin_mul_overflow(v, 10LL, &v) || __builtin_add_overflow(v, text_[j] - '0', &v))
            Fail("has a number too large for 64 bits", t.column);
          ++j;
        }
        if (j < text_.size() &&
            (std::isalpha(static_cast<unsigned char>(text_[j])) || text_[j] == '_'))
          Fail(fmt::format("has `{}`, which is neither a number nor a name",
                           text_.substr(i, j + 1 - i)),
               t.column);
        t.kind = Tok::kNumber;
        t.number = v;
        t.text = text_.substr(i, j - i);
        i = j;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t j = i;
        while (j < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[j])) || text_[j] == '_'))
          ++j;
        t.kind = Tok::kName;
        t.text = text_.substr(i, j - i);
        i = j;
      } else if (c == '(' || c == ')') {
        t.kind = c == '(' ? Tok::kLParen : Tok::kRParen;
        t.text = std::string(1, c);
        ++i;
      } else {
        static const char* const kOps[] = {"&&", "||", "<=", ">=", "==", "!=", "+",
                                           "-",  "*",  "/",  "%",  "<",  ">",  "!"};
        bool found = false;
        for (const char* op : kOps) {
          const std::string s(op);
          if (text_.compare(i, s.size(), s) == 0) {
            t.kind = Tok::kOp;
            t.text = s;
            i += s.size();
            found = true;
            break;
          }
        }
        if (!found)
          Fail(fmt::format("has `{}`, which is not allowed", std::string(1, c)), t.column);
      }
      tokens_.push_back(std::move(t));
    }
    Token end;
    end.column = text_.size() + 1;
    end.text = "end";
    tokens_.push_back(end);
  }

  const Token& Peek() const { return tokens_[pos_]; }
  bool AcceptOp(const char* op) {
    if (Peek().kind == Tok::kOp && Peek().text == op) {
      ++pos_;
      return true;
    }
    return false;
  }
  static NodePtr Binary(Op op, NodePtr a, NodePtr b) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }

  NodePtr ParseOr() {
    NodePtr n = ParseAnd();
    while (AcceptOp("||")) n = Binary(Op::kOr, n, ParseAnd());
    return n;
  }
  NodePtr ParseAnd() {
    NodePtr n = ParseEquality();
    while (AcceptOp("&&")) n = Binary(Op::kAnd, n, ParseEquality());
    return n;
  }
  NodePtr ParseEquality() {
    NodePtr n = ParseRelational();
    for (;;) {
      if (AcceptOp("==")) {
        n = Binary(Op::kEq, n, ParseRelational());
      } else if (AcceptOp("!=")) {
        n = Binary(Op::kNe, n, ParseRelational());
      } else {
        return n;
      }
    }
  }
  NodePtr ParseRelational() {
    NodePtr n = ParseAdditive();
    for (;;) {
      if (AcceptOp("<=")) {
        n = Binary(Op::kLe, n, ParseAdditive());
      } else if (AcceptOp(">=")) {
        n = Binary(Op::kGe, n, ParseAdditive());
      } else if (AcceptOp("<")) {
        n = Binary(Op::kLt, n, ParseAdditive());
      } else if (AcceptOp(">")) {
        n = Binary(Op::kGt, n, ParseAdditive());
      } else {
        return n;
      }
    }
  }
  NodePtr ParseAdditive() {
    NodePtr n = ParseMultiplicative();
    for (;;) {
      if (AcceptOp("+")) {
        n = Binary(Op::kAdd, n, ParseMultiplicative());
      } else if (AcceptOp("-")) {
        n = Binary(Op::kSub, n, ParseMultiplicative());
      } else {
        return n;
      }
    }
  }
  NodePtr ParseMultiplicative() {
    NodePtr n = ParseUnary();
    for (;;) {
      if (AcceptOp("*")) {
        n = Binary(Op::kMul, n, ParseUnary());
      } else if (AcceptOp("/")) {
        n = Binary(Op::kDiv, n, ParseUnary());
      } else if (AcceptOp("%")) {
        n = Binary(Op::kMod, n, ParseUnary());
      } else {
        return n;
      }
    }
  }
  NodePtr ParseUnary() {
    if (AcceptOp("-")) return Binary(Op::kNeg, ParseUnary(), nullptr);
    if (AcceptOp("!")) return Binary(Op::kNot, ParseUnary(), nullptr);
    if (AcceptOp("+")) return ParseUnary();
    return ParsePrimary();
  }
  NodePtr ParsePrimary() {
    const Token& t = Peek();
    auto n = std::make_shared<Node>();
    switch (t.kind) {
      case Tok::kNumber:
        n->op = Op::kNumber;
        n->number = t.number;
        ++pos_;
        return n;
      case Tok::kName:
        n->op = Op::kName;
        n->name = t.text;
        names_->insert(t.text);
        ++pos_;
        return n;
      case Tok::kLParen: {
        ++pos_;
        NodePtr inner = ParseOr();
        if (Peek().kind != Tok::kRParen) Fail("has a `(` that is never closed", t.column);
        ++pos_;
        return inner;
      }
      case Tok::kEnd:
        Fail("ends where a number, name or `(` should follow", t.column);
      default:
        Fail(fmt::format("has `{}` where a number, name or `(` should be", t.text), t.column);
    }
  }

  const std::string& text_;
  const std::string& where_;
  std::set<std::string>* names_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
};

std::optional<long long> Eval(const Node& n, const std::map<std::string, long long>& values) {
  switch (n.op) {
    case Op::kNumber:
      return n.number;
    case Op::kName: {
      auto it = values.find(n.name);
      if (it == values.end()) return std::nullopt;
      return it->second;
    }
    case Op::kNeg: {
      auto a = Eval(*n.a, values);
      long long r = 0;
      if (!a || __builtin_sub_overflow(0LL, *a, &r)) return std::nullopt;
      return r;
    }
    case Op::kNot: {
      auto a = Eval(*n.a, values);
      if (!a) return std::nullopt;
      return *a == 0 ? 1 : 0;
    }
    case Op::kAnd: {  // short-circuit, like C
      auto a = Eval(*n.a, values);
      if (!a) return std::nullopt;
      if (*a == 0) return 0;
      auto b = Eval(*n.b, values);
      if (!b) return std::nullopt;
      return *b != 0 ? 1 : 0;
    }
    case Op::kOr: {
      auto a = Eval(*n.a, values);
      if (!a) return std::nullopt;
      if (*a != 0) return 1;
      auto b = Eval(*n.b, values);
      if (!b) return std::nullopt;
      return *b != 0 ? 1 : 0;
    }
    default:
      break;
  }
  auto a = Eval(*n.a, values);
  auto b = Eval(*n.b, values);
  if (!a || !b) return std::nullopt;
  long long r = 0;
  switch (n.op) {
    case Op::kAdd:
      if (__builtin_add_overflow(*a, *b, &r)) return std::nullopt;
      return r;
    case Op::kSub:
      if (__builtin_sub_overflow(*a, *b, &r)) return std::nullopt;
      return r;
    case Op::kMul:
      if (__builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
      return r;
    case Op::kDiv:
      if (*b == 0 || (*b == -1 && *a == std::numeric_limits<long long>::min())) return std::nullopt;
      return *a / *b;
    case Op::kMod:
      if (*b == 0 || (*b == -1 && *a == std::numeric_limits<long long>::min())) return std::nullopt;
      return *a % *b;
    case Op::kLt:
      return *a < *b ? 1 : 0;
    case Op::kLe:
      return *a <= *b ? 1 : 0;
    case Op::kGt:
      return *a > *b ? 1 : 0;
    case Op::kGe:
      return *a >= *b ? 1 : 0;
    case Op::kEq:
      return *a == *b ? 1 : 0;
    case Op::kNe:
      return *a != *b ? 1 : 0;
    default:
      return std::nullopt;
  }
}

}  // namespace

KnobExpr KnobExpr::Parse(const std::string& text, const std::string& where) {
  KnobExpr e;
  e.text_ = text;
  Parser parser(e.text_, where, &e.names_);
  e.root_ = parser.ParseAll();
  return e;
}

std::optional<long long> KnobExpr::Evaluate(const std::map<std::string, long long>& values) const {
  if (!root_) return std::nullopt;
  return Eval(*root_, values);
}

}  // namespace kopt
