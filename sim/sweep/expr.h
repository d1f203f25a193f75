#pragma once
// Small expressions for experiment files: constraints (`array.rows * array.cols <= 65536`),
// derived parameters (`${array.rows} * 2`) and computed metrics. docs/experiments.md has
// the grammar. Names are dotted paths (`array.rows`, `summary.cycles.total`, `layers.0.name`)
// resolved by a caller-supplied lookup.
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/sweep/value.h"

namespace tessera::sweep {

// A parse or evaluation error; the message says what and where (a column in the text).
class ExprError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// An expression nested or chained deeper than the parser allows (a hostile or generated
// input, never a real one); unlike other syntax errors it is never retried another way.
class ExprTooDeep : public ExprError {
 public:
  using ExprError::ExprError;
};

// Returns the value of a name, or nullopt if the name is unknown.
using Lookup = std::function<std::optional<Value>(const std::string& name)>;

struct ExprNode;

class Expr {
 public:
  Expr() = default;
  // Throws ExprError on a syntax error.
  static Expr parse(const std::string& text);
  // Throws ExprError on an unknown name, a type error, or a division by zero.
  Value eval(const Lookup& lookup) const;
  // Names the expression refers to, in order of first appearance.
  const std::vector<std::string>& names() const { return names_; }
  const std::string& text() const { return text_; }
  bool empty() const { return !root_; }

 private:
  std::shared_ptr<const ExprNode> root_;
  std::vector<std::string> names_;
  std::string text_;
};

// A derived-value template, the right-hand side of `derived:` entries:
//   "${array.rows}"          -> the value itself (keeps its type)
//   "${array.rows * 2}"      -> any expression inside ${ }
//   "${array.rows} * 2"      -> arithmetic around references (only numbers, operators,
//                               parentheses and size units outside ${ })
//   "tpu-${array.rows}"      -> string interpolation (anything else)
class Template {
 public:
  static Template parse(const std::string& text);  // throws ExprError
  static Template constant(Value v);
  Value eval(const Lookup& lookup) const;
  bool has_references() const { return !names_.empty(); }
  const std::vector<std::string>& names() const { return names_; }

 private:
  enum class Mode { kExpression, kInterpolation, kConstant };
  Value constant_;
  Mode mode_ = Mode::kExpression;
  Expr expr_;                                      // kExpression
  std::vector<std::pair<std::string, Expr>> parts_;  // kInterpolation: literal text, then expr (may be empty)
  std::vector<std::string> names_;
};

}  // namespace tessera::sweep
