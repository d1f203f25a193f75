#include "sim/sweep/expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::sweep {

// ---------------------------------------------------------------------------------------
// AST

struct ExprNode {
  enum class Op { kLiteral, kName, kCall, kNeg, kNot, kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow,
                  kLt, kLe, kGt, kGe, kEq, kNe, kAnd, kOr };
  Op op = Op::kLiteral;
  Value literal;
  std::string name;  // kName, kCall
  std::vector<std::shared_ptr<const ExprNode>> args;
  size_t column = 0;  // 1-based position in the text, for messages
  uint32_t depth = 1;  // levels of the tree below and including this node
};

namespace {

using NodeP = std::shared_ptr<const ExprNode>;

// Parsing, evaluating and freeing an expression recurse once per level, so the levels are
// bounded (a 20 KB constraint of nested parentheses overflowed the stack): real experiment
// expressions are a few levels deep.
constexpr int kMaxNesting = 256;     // parentheses, calls, unary operators, '**'
constexpr uint32_t kMaxDepth = 1000;  // operators nested in one another, chains included

[[noreturn]] void fail_nesting(size_t column) {
  throw ExprTooDeep("column " + std::to_string(column) + ": expression nested more than " +
                    std::to_string(kMaxNesting) +
                    " levels deep (parentheses, function calls, unary operators, '**'); simplify it");
}

const char* kUnitWords[] = {"B", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB"};

bool is_unit(const std::string& w) {
  return std::any_of(std::begin(kUnitWords), std::end(kUnitWords), [&](const char* u) { return w == u; });
}

struct Token {
  enum class Kind { kNumber, kString, kName, kOp, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;
  Value value;  // kNumber, kString
  size_t column = 0;
};

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  size_t k = 0;
  auto fail = [&](size_t at, const std::string& msg) {
    throw ExprError("column " + std::to_string(at + 1) + ": " + msg);
  };
  while (k < s.size()) {
    const char c = s[k];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++k;
      continue;
    }
    Token t;
    t.column = k + 1;
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && k + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[k + 1])))) {
      size_t e = k;
      bool real = false;
      while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
      if (e < s.size() && s[e] == '.') {
        real = true;
        ++e;
        while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
      }
      if (e < s.size() && (s[e] == 'e' || s[e] == 'E')) {
        size_t f = e + 1;
        if (f < s.size() && (s[f] == '+' || s[f] == '-')) ++f;
        if (f < s.size() && std::isdigit(static_cast<unsigned char>(s[f]))) {
          real = true;
          e = f;
          while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
        }
      }
      const std::string num = s.substr(k, e - k);
      t.kind = Token::Kind::kNumber;
      t.text = num;
      if (real) {
        t.value = Value::of_real(std::strtod(num.c_str(), nullptr));
      } else {
        errno = 0;
        const long long v = std::strtoll(num.c_str(), nullptr, 10);
        t.value = errno == ERANGE ? Value::of_real(std::strtod(num.c_str(), nullptr)) : Value::of_int(v);
      }
      // An optional size unit: `32 MiB`, `64KiB`.
      size_t u = e;
      while (u < s.size() && s[u] == ' ') ++u;
      size_t w = u;
      while (w < s.size() && name_char(s[w])) ++w;
      const std::string word = s.substr(u, w - u);
      if (!word.empty() && is_unit(word) && (w >= s.size() || s[w] != '.')) {
        const double factor = *parse_size("1 " + word);
        const double bytes = (t.value.is_int() ? static_cast<double>(t.value.i) : t.value.d) * factor;
        if (bytes == std::floor(bytes) && bytes < 9.0e18) {
          t.value = Value::of_int(static_cast<int64_t>(bytes));
        } else {
          t.value = Value::of_real(bytes);
        }
        e = w;
      }
      out.push_back(t);
      k = e;
      continue;
    }
    if (name_start(c)) {
      size_t e = k;
      while (e < s.size() && name_char(s[e])) ++e;
      // Dotted path: each further component is letters, digits or underscores.
      while (e + 1 < s.size() && s[e] == '.' && name_char(s[e + 1])) {
        ++e;
        while (e < s.size() && name_char(s[e])) ++e;
      }
      t.kind = Token::Kind::kName;
      t.text = s.substr(k, e - k);
      out.push_back(t);
      k = e;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t e = k + 1;
      std::string text;
      while (e < s.size() && s[e] != c) {
        if (s[e] == '\\' && e + 1 < s.size()) ++e;
        text += s[e++];
      }
      if (e >= s.size()) fail(k, "unterminated string");
      t.kind = Token::Kind::kString;
      t.value = Value::of_string(text);
      t.text = s.substr(k, e + 1 - k);
      out.push_back(t);
      k = e + 1;
      continue;
    }
    static const char* kOps[] = {"**", "//", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/",
                                 "%",  "<",  ">",  "!",  "(",  ")",  ","};
    bool matched = false;
    for (const char* op : kOps) {
      const size_t len = std::char_traits<char>::length(op);
      if (s.compare(k, len, op) == 0) {
        t.kind = Token::Kind::kOp;
        t.text = op;
        out.push_back(t);
        k += len;
        matched = true;
        break;
      }
    }
    if (!matched) fail(k, std::string("unexpected character '") + c + "'");
  }
  Token end;
  end.kind = Token::Kind::kEnd;
  end.column = s.size() + 1;
  out.push_back(end);
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  NodeP parse_all() {
    NodeP n = parse_or();
    if (peek().kind != Token::Kind::kEnd) fail("unexpected '" + peek().text + "'");
    return n;
  }
  std::vector<std::string> names;

 private:
  const Token& peek() const { return t_[pos_]; }
  bool is_op(const char* op) const { return peek().kind == Token::Kind::kOp && peek().text == op; }
  bool is_word(const char* w) const { return peek().kind == Token::Kind::kName && peek().text == w; }
  [[noreturn]] void fail(const std::string& msg) const {
    throw ExprError("column " + std::to_string(peek().column) + ": " + msg);
  }
  NodeP make(ExprNode::Op op, std::vector<NodeP> args, size_t column) {
    auto n = std::make_shared<ExprNode>();
    n->op = op;
    n->args = std::move(args);
    n->column = column;
    set_depth(*n);
    return n;
  }
  static void set_depth(ExprNode& n) {
    uint32_t below = 0;
    for (const auto& a : n.args) below = std::max(below, a->depth);
    n.depth = below + 1;
    if (n.depth > kMaxDepth) {
      throw ExprTooDeep("column " + std::to_string(n.column) + ": expression has more than " +
                        std::to_string(kMaxDepth) +
                        " operators nested in one another (each operator of a chain a + b + ... counts); split it "
                        "into derived keys");
    }
  }
  // One level of recursion of the parser; a guard object for its scope.
  struct Nest {
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxNesting) fail_nesting(p_.peek().column);
    }
    ~Nest() { --p_.nesting_; }
    Parser& p_;
  };

  NodeP parse_or() {
    NodeP l = parse_and();
    while (is_op("||") || is_word("or")) {
      const size_t col = peek().column;
      ++pos_;
      l = make(ExprNode::Op::kOr, {l, parse_and()}, col);
    }
    return l;
  }
  NodeP parse_and() {
    NodeP l = parse_not();
    while (is_op("&&") || is_word("and")) {
      const size_t col = peek().column;
      ++pos_;
      l = make(ExprNode::Op::kAnd, {l, parse_not()}, col);
    }
    return l;
  }
  NodeP parse_not() {
    if (is_op("!") || is_word("not")) {
      const size_t col = peek().column;
      ++pos_;
      Nest nest(*this);
      return make(ExprNode::Op::kNot, {parse_not()}, col);
    }
    return parse_cmp();
  }
  NodeP parse_cmp() {
    NodeP l = parse_add();
    static const std::pair<const char*, ExprNode::Op> kCmp[] = {
        {"<=", ExprNode::Op::kLe}, {">=", ExprNode::Op::kGe}, {"<", ExprNode::Op::kLt},
        {">", ExprNode::Op::kGt},  {"==", ExprNode::Op::kEq}, {"!=", ExprNode::Op::kNe}};
    for (const auto& [text, op] : kCmp) {
      if (is_op(text)) {
        const size_t col = peek().column;
        ++pos_;
        NodeP r = parse_add();
        for (const auto& [t2, op2] : kCmp) {
          if (is_op(t2)) fail("comparisons do not chain; use 'and'");
        }
        return make(op, {l, r}, col);
      }
    }
    return l;
  }
  NodeP parse_add() {
    NodeP l = parse_mul();
    while (is_op("+") || is_op("-")) {
      const auto op = is_op("+") ? ExprNode::Op::kAdd : ExprNode::Op::kSub;
      const size_t col = peek().column;
      ++pos_;
      l = make(op, {l, parse_mul()}, col);
    }
    return l;
  }
  NodeP parse_mul() {
    NodeP l = parse_unary();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const auto op = is_op("*") ? ExprNode::Op::kMul
                      : is_op("/") ? ExprNode::Op::kDiv
                      : is_op("//") ? ExprNode::Op::kFloorDiv
                                    : ExprNode::Op::kMod;
      const size_t col = peek().column;
      ++pos_;
      l = make(op, {l, parse_unary()}, col);
    }
    return l;
  }
  NodeP parse_unary() {
    if (is_op("-")) {
      const size_t col = peek().column;
      ++pos_;
      Nest nest(*this);
      return make(ExprNode::Op::kNeg, {parse_unary()}, col);
    }
    if (is_op("+")) {
      ++pos_;
      Nest nest(*this);
      return parse_unary();
    }
    return parse_pow();
  }
  NodeP parse_pow() {
    NodeP base = parse_primary();
    if (is_op("**")) {
      const size_t col = peek().column;
      ++pos_;
      Nest nest(*this);
      return make(ExprNode::Op::kPow, {base, parse_unary()}, col);
    }
    return base;
  }
  NodeP parse_primary() {
    const Token tok = peek();
    auto n = std::make_shared<ExprNode>();
    n->column = tok.column;
    switch (tok.kind) {
      case Token::Kind::kNumber:
      case Token::Kind::kString:
        ++pos_;
        n->op = ExprNode::Op::kLiteral;
        n->literal = tok.value;
        return n;
      case Token::Kind::kName: {
        ++pos_;
        if (tok.text == "true" || tok.text == "false") {
          n->op = ExprNode::Op::kLiteral;
          n->literal = Value::of_bool(tok.text == "true");
          return n;
        }
        if (tok.text == "null") {
          n->op = ExprNode::Op::kLiteral;
          return n;
        }
        if (tok.text == "and" || tok.text == "or" || tok.text == "not") {
          --pos_;
          fail("unexpected '" + tok.text + "'");
        }
        if (is_op("(")) {
          ++pos_;
          Nest nest(*this);
          n->op = ExprNode::Op::kCall;
          n->name = tok.text;
          if (!is_op(")")) {
            while (true) {
              n->args.push_back(parse_or());
              if (is_op(",")) {
                ++pos_;
                continue;
              }
              break;
            }
          }
          if (!is_op(")")) fail("expected ')' to close " + tok.text + "(");
          ++pos_;
          set_depth(*n);
          return n;
        }
        n->op = ExprNode::Op::kName;
        n->name = tok.text;
        if (std::find(names.begin(), names.end(), tok.text) == names.end()) names.push_back(tok.text);
        return n;
      }
      case Token::Kind::kOp:
        if (tok.text == "(") {
          ++pos_;
          Nest nest(*this);
          NodeP inner = parse_or();
          if (!is_op(")")) fail("expected ')'");
          ++pos_;
          return inner;
        }
        fail("unexpected '" + tok.text + "'");
      case Token::Kind::kEnd:
        fail("unexpected end of expression");
    }
    fail("unexpected token");
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

// ---------------------------------------------------------------------------------------
// Evaluation

[[noreturn]] void eval_fail(const ExprNode& n, const std::string& msg) {
  throw ExprError("column " + std::to_string(n.column) + ": " + msg);
}

Value num_of(const ExprNode& n, const Value& v, const char* what) {
  auto x = v.numeric();
  if (!x) {
    if (v.is_null()) eval_fail(n, std::string(what) + ": operand has no value (null)");
    eval_fail(n, std::string(what) + ": expected a number, got " + v.kind_name() + " '" + v.text() + "'");
  }
  return *x;
}
double as_d(const Value& v) { return v.is_int() ? static_cast<double>(v.i) : v.d; }

Value real_or_int(double d) {
  return Value::of_real(d);
}

bool truth(const ExprNode& n, const Value& v, const char* what) {
  if (v.kind != Value::Kind::kBool) {
    eval_fail(n, std::string(what) + ": expected true or false, got " + v.kind_name() + " '" + v.text() + "'");
  }
  return v.b;
}

Value arith(const ExprNode& n, ExprNode::Op op, const Value& a0, const Value& b0) {
  static const char* kNames[] = {"", "", "", "", "", "'+'", "'-'", "'*'", "'/'", "'//'", "'%'", "'**'"};
  const char* what = kNames[static_cast<int>(op)];
  // '+' joins two strings when either is not a number.
  if (op == ExprNode::Op::kAdd && a0.kind == Value::Kind::kString && b0.kind == Value::Kind::kString &&
      (!a0.numeric() || !b0.numeric())) {
    return Value::of_string(a0.s + b0.s);
  }
  const Value a = num_of(n, a0, what);
  const Value b = num_of(n, b0, what);
  const bool ints = a.is_int() && b.is_int();
  // Integer results stay integers or are errors: never a wrapped value (UB) nor a silent,
  // inexact real.
  auto too_big = [&]() {
    eval_fail(n, std::to_string(a.i) + " " + std::string(what).substr(1, std::strlen(what) - 2) + " " +
                     std::to_string(b.i) + ": the result does not fit a 64-bit integer (write a real, e.g. " +
                     std::to_string(a.i) + ".0, for real arithmetic)");
  };
  int64_t r = 0;
  switch (op) {
    case ExprNode::Op::kAdd:
      if (!ints) return real_or_int(as_d(a) + as_d(b));
      if (__builtin_add_overflow(a.i, b.i, &r)) too_big();
      return Value::of_int(r);
    case ExprNode::Op::kSub:
      if (!ints) return real_or_int(as_d(a) - as_d(b));
      if (__builtin_sub_overflow(a.i, b.i, &r)) too_big();
      return Value::of_int(r);
    case ExprNode::Op::kMul:
      if (!ints) return real_or_int(as_d(a) * as_d(b));
      if (__builtin_mul_overflow(a.i, b.i, &r)) too_big();
      return Value::of_int(r);
    case ExprNode::Op::kDiv:
      if (as_d(b) == 0) eval_fail(n, "division by zero");
      if (ints && b.i == -1) {
        if (a.i == INT64_MIN) too_big();  // the one quotient that traps (SIGFPE)
        return Value::of_int(-a.i);
      }
      // Exact integer division stays an integer, so `${array.rows} / 2` is a valid int key.
      if (ints && a.i % b.i == 0) return Value::of_int(a.i / b.i);
      return Value::of_real(as_d(a) / as_d(b));
    case ExprNode::Op::kFloorDiv:
      if (as_d(b) == 0) eval_fail(n, "division by zero");
      if (ints) {
        if (b.i == -1) {
          if (a.i == INT64_MIN) too_big();
          return Value::of_int(-a.i);
        }
        int64_t q = a.i / b.i;
        if ((a.i % b.i != 0) && ((a.i < 0) != (b.i < 0))) --q;
        return Value::of_int(q);
      }
      return Value::of_real(std::floor(as_d(a) / as_d(b)));
    case ExprNode::Op::kMod:
      if (as_d(b) == 0) eval_fail(n, "modulo by zero");
      if (ints) {
        if (b.i == -1) return Value::of_int(0);  // INT64_MIN % -1 traps in hardware
        int64_t m = a.i % b.i;
        if (m != 0 && ((m < 0) != (b.i < 0))) m += b.i;
        return Value::of_int(m);
      }
      return Value::of_real(as_d(a) - as_d(b) * std::floor(as_d(a) / as_d(b)));
    case ExprNode::Op::kPow: {
      if (as_d(a) == 0 && as_d(b) < 0) eval_fail(n, "zero to a negative power (a division by zero)");
      if (ints && b.i >= 0) {
        // Square-and-multiply: at most 63 squarings, whatever the exponent (a loop of
        // `exponent` multiplications never ended for a base of 0, 1 or -1).
        int64_t acc = 1, base = a.i;
        for (int64_t e = b.i; e > 0;) {
          if ((e & 1) && __builtin_mul_overflow(acc, base, &acc)) too_big();
          e >>= 1;
          if (e > 0 && __builtin_mul_overflow(base, base, &base)) {
            // base^2 overflows, so any further factor of it does (|base| >= 2 here)
            too_big();
          }
        }
        return Value::of_int(acc);
      }
      // A negative integer exponent or a real operand: a real result.
      const double x = std::pow(as_d(a), as_d(b));
      if (std::isnan(x)) {
        eval_fail(n, a.text() + " ** " + b.text() + " is not a real number (a negative base to a fractional power)");
      }
      if (std::isinf(x)) eval_fail(n, a.text() + " ** " + b.text() + ": the result is out of the range of a real");
      return Value::of_real(x);
    }
    default:
      break;
  }
  eval_fail(n, "internal: bad arithmetic operator");
}

Value compare(const ExprNode& n, ExprNode::Op op, const Value& a, const Value& b) {
  if (op == ExprNode::Op::kEq || op == ExprNode::Op::kNe) {
    bool eq;
    auto na = a.numeric();
    auto nb = b.numeric();
    if (a.kind == Value::Kind::kString && b.kind == Value::Kind::kString) {
      eq = a.s == b.s || (na && nb && as_d(*na) == as_d(*nb));
    } else if (na && nb) {
      eq = as_d(*na) == as_d(*nb);
    } else {
      eq = a == b;
    }
    return Value::of_bool(op == ExprNode::Op::kEq ? eq : !eq);
  }
  const double x = as_d(num_of(n, a, "comparison"));
  const double y = as_d(num_of(n, b, "comparison"));
  switch (op) {
    case ExprNode::Op::kLt: return Value::of_bool(x < y);
    case ExprNode::Op::kLe: return Value::of_bool(x <= y);
    case ExprNode::Op::kGt: return Value::of_bool(x > y);
    case ExprNode::Op::kGe: return Value::of_bool(x >= y);
    default: break;
  }
  eval_fail(n, "internal: bad comparison");
}

Value eval_node(const ExprNode& n, const Lookup& lookup);

Value call(const ExprNode& n, const Lookup& lookup) {
  const std::string& f = n.name;
  std::vector<Value> a;
  // if() evaluates only the branch it takes.
  if (f == "if") {
    if (n.args.size() != 3) eval_fail(n, "if(condition, then, else) takes 3 arguments");
    return truth(n, eval_node(*n.args[0], lookup), "if") ? eval_node(*n.args[1], lookup)
                                                         : eval_node(*n.args[2], lookup);
  }
  for (const auto& arg : n.args) a.push_back(eval_node(*arg, lookup));
  auto want = [&](size_t count) {
    if (a.size() != count) {
      eval_fail(n, f + "() takes " + std::to_string(count) + " argument" + (count == 1 ? "" : "s") + ", got " +
                       std::to_string(a.size()));
    }
  };
  if (f == "min" || f == "max") {
    if (a.empty()) eval_fail(n, f + "() needs at least one argument");
    Value best = num_of(n, a[0], f.c_str());
    for (size_t k = 1; k < a.size(); ++k) {
      const Value v = num_of(n, a[k], f.c_str());
      if (f == "min" ? as_d(v) < as_d(best) : as_d(v) > as_d(best)) best = v;
    }
    return best;
  }
  if (f == "abs") {
    want(1);
    const Value v = num_of(n, a[0], "abs()");
    if (v.is_int() && v.i == INT64_MIN) {
      eval_fail(n, "abs(" + v.text() + "): the result does not fit a 64-bit integer");
    }
    return v.is_int() ? Value::of_int(v.i < 0 ? -v.i : v.i) : Value::of_real(std::fabs(v.d));
  }
  auto to_int = [&](double d) {
    if (!std::isfinite(d) || std::fabs(d) > 9.0e18) eval_fail(n, f + "(): result out of range");
    return Value::of_int(static_cast<int64_t>(d));
  };
  if (f == "floor" || f == "ceil" || f == "round" || f == "int") {
    want(1);
    const Value v = num_of(n, a[0], (f + "()").c_str());
    if (v.is_int()) return v;
    if (f == "floor") return to_int(std::floor(v.d));
    if (f == "ceil") return to_int(std::ceil(v.d));
    if (f == "round") return to_int(std::round(v.d));
    return to_int(std::trunc(v.d));
  }
  if (f == "float") {
    want(1);
    return Value::of_real(as_d(num_of(n, a[0], "float()")));
  }
  if (f == "log2" || f == "sqrt" || f == "log" || f == "exp") {
    want(1);
    const double x = as_d(num_of(n, a[0], (f + "()").c_str()));
    if ((f == "log2" || f == "log") && x <= 0) eval_fail(n, f + "(): argument must be > 0");
    if (f == "sqrt" && x < 0) eval_fail(n, "sqrt(): argument must be >= 0");
    const double r = f == "log2" ? std::log2(x) : f == "log" ? std::log(x) : f == "exp" ? std::exp(x) : std::sqrt(x);
    return Value::of_real(r);
  }
  if (f == "pow") {
    want(2);
    return arith(n, ExprNode::Op::kPow, a[0], a[1]);
  }
  if (f == "bytes") {
    want(1);
    return num_of(n, a[0], "bytes()");
  }
  if (f == "str") {
    want(1);
    return Value::of_string(a[0].text());
  }
  eval_fail(n, "unknown function '" + f +
                   "' (known: min, max, abs, floor, ceil, round, int, float, log2, log, exp, sqrt, pow, bytes, str, if)");
}

Value eval_node(const ExprNode& n, const Lookup& lookup) {
  using Op = ExprNode::Op;
  switch (n.op) {
    case Op::kLiteral:
      return n.literal;
    case Op::kName: {
      auto v = lookup(n.name);
      if (!v) eval_fail(n, "unknown name '" + n.name + "'");
      return *v;
    }
    case Op::kCall:
      return call(n, lookup);
    case Op::kNeg: {
      const Value v = num_of(n, eval_node(*n.args[0], lookup), "unary '-'");
      if (v.is_int() && v.i == INT64_MIN) {
        eval_fail(n, "-(" + v.text() + "): the result does not fit a 64-bit integer");
      }
      if (v.is_int()) return Value::of_int(-v.i);
      return Value::of_real(-as_d(v));
    }
    case Op::kNot:
      return Value::of_bool(!truth(n, eval_node(*n.args[0], lookup), "'not'"));
    case Op::kAnd:
      if (!truth(n, eval_node(*n.args[0], lookup), "'and'")) return Value::of_bool(false);
      return Value::of_bool(truth(n, eval_node(*n.args[1], lookup), "'and'"));
    case Op::kOr:
      if (truth(n, eval_node(*n.args[0], lookup), "'or'")) return Value::of_bool(true);
      return Value::of_bool(truth(n, eval_node(*n.args[1], lookup), "'or'"));
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv:
    case Op::kFloorDiv:
    case Op::kMod:
    case Op::kPow:
      return arith(n, n.op, eval_node(*n.args[0], lookup), eval_node(*n.args[1], lookup));
    default:
      return compare(n, n.op, eval_node(*n.args[0], lookup), eval_node(*n.args[1], lookup));
  }
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  Parser p(tokenize(text));
  Expr e;
  e.root_ = p.parse_all();
  e.names_ = p.names;
  e.text_ = text;
  return e;
}

Value Expr::eval(const Lookup& lookup) const {
  if (!root_) throw ExprError("empty expression");
  return eval_node(*root_, lookup);
}

// ---------------------------------------------------------------------------------------
// Templates

Template Template::parse(const std::string& text) {
  Template t;
  // Split into literal text and ${...} references; a '}' inside a quoted string does not close.
  std::vector<std::pair<std::string, std::string>> pieces;  // (literal before, expression)
  std::string literal;
  size_t k = 0;
  while (k < text.size()) {
    if (text.compare(k, 2, "${") == 0) {
      size_t e = k + 2;
      char quote = 0;
      while (e < text.size() && (quote || text[e] != '}')) {
        if (quote) {
          if (text[e] == quote) quote = 0;
        } else if (text[e] == '"' || text[e] == '\'') {
          quote = text[e];
        }
        ++e;
      }
      if (e >= text.size()) throw ExprError("column " + std::to_string(k + 1) + ": '${' without a closing '}'");
      pieces.emplace_back(literal, text.substr(k + 2, e - k - 2));
      literal.clear();
      k = e + 1;
      continue;
    }
    literal += text[k++];
  }
  // Arithmetic mode when the text outside ${ } holds only numbers, operators, parentheses
  // and size units; otherwise interpolation.
  std::string outside;
  for (const auto& p : pieces) outside += p.first + " ";
  outside += literal;
  bool arithmetic = !pieces.empty();
  for (size_t i = 0; i < outside.size() && arithmetic;) {
    const char c = outside[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = i;
      while (e < outside.size() && name_char(outside[e])) ++e;
      // 'e' in 1e3 is part of a number; a unit word must follow a number.
      const std::string word = outside.substr(i, e - i);
      if (!is_unit(word) && !(i > 0 && std::isdigit(static_cast<unsigned char>(outside[i - 1])) &&
                               (word[0] == 'e' || word[0] == 'E'))) {
        arithmetic = false;
      }
      i = e;
      continue;
    }
    if (c == '"' || c == '\'' || c == '$' || c == '{' || c == '}') arithmetic = false;
    ++i;
  }
  if (arithmetic) {
    std::string expr;
    for (const auto& p : pieces) expr += p.first + "(" + p.second + ")";
    expr += literal;
    try {
      t.expr_ = Expr::parse(expr);
      t.mode_ = Mode::kExpression;
      t.names_ = t.expr_.names();
      return t;
    } catch (const ExprTooDeep&) {
      throw;  // too deep as arithmetic is too deep as text too
    } catch (const ExprError&) {
      // Not a well-formed expression (e.g. "${a}-${b}x"): fall back to interpolation.
    }
  }
  t.mode_ = Mode::kInterpolation;
  for (const auto& p : pieces) {
    Expr e;
    try {
      e = Expr::parse(p.second);
    } catch (const ExprError& err) {
      throw ExprError("in ${" + p.second + "}: " + err.what());
    }
    for (const auto& n : e.names()) {
      if (std::find(t.names_.begin(), t.names_.end(), n) == t.names_.end()) t.names_.push_back(n);
    }
    t.parts_.emplace_back(p.first, std::move(e));
  }
  t.parts_.emplace_back(literal, Expr());
  return t;
}

Template Template::constant(Value v) {
  Template t;
  t.mode_ = Mode::kConstant;
  t.constant_ = std::move(v);
  return t;
}

Value Template::eval(const Lookup& lookup) const {
  if (mode_ == Mode::kConstant) return constant_;
  if (mode_ == Mode::kExpression) return expr_.eval(lookup);
  std::string out;
  for (const auto& [lit, e] : parts_) {
    out += lit;
    if (!e.empty()) out += e.eval(lookup).text();
  }
  return Value::of_string(out);
}

}  // namespace tessera::sweep
