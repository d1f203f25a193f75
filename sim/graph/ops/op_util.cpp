#include "sim/graph/ops/op_util.h"

#include "sim/common/yaml_reader.h"

namespace tessera::graph::ops {

void need_inputs(const Layer& l, size_t lo, size_t hi) {
  if (l.inputs.size() < lo || l.inputs.size() > hi) {
    const std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    throw ShapeError("op " + std::string(op_name(l.op)) + " takes " + want + " input(s), got " +
                     std::to_string(l.inputs.size()));
  }
}

void need_rank(const Layer& l, const Tensor& t, size_t lo, size_t hi, const std::string& hint) {
  if (t.shape.size() < lo || t.shape.size() > hi) {
    throw ShapeError("op " + std::string(op_name(l.op)) + " needs a " + hint + " input, but '" + t.name + "' is " +
                     shape_text(t.shape));
  }
}

int64_t normalize_axis(int64_t axis, size_t rank, const std::string& what) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw ShapeError(what + " " + std::to_string(axis) + " is out of range for a rank-" + std::to_string(r) +
                     " input");
  }
  return axis < 0 ? axis + r : axis;
}

int64_t window_out(int64_t in, int64_t pad_before, int64_t pad_after, int64_t kernel, int64_t stride,
                   int64_t dilation, bool ceil_mode) {
  const int64_t span = dilation * (kernel - 1) + 1;
  const int64_t padded = in + pad_before + pad_after;
  if (padded < span) {
    throw ShapeError("window of " + std::to_string(span) + " does not fit an input of " + std::to_string(in) +
                     " with padding " + std::to_string(pad_before) + "+" + std::to_string(pad_after));
  }
  if (stride < 1) throw ShapeError("stride must be >= 1");
  int64_t out = ceil_mode ? (padded - span + stride - 1) / stride + 1 : (padded - span) / stride + 1;
  // ONNX/PyTorch rule: with ceil_mode the last window must start inside the input or left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_before) --out;
  return out;
}

// a * b for sizes; a ShapeError instead of an int64 overflow (absurd or corrupt shapes).
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw ShapeError("sizes overflow 64 bits (" + std::to_string(a) + " x " + std::to_string(b) + ")");
  }
  return r;
}

std::pair<int64_t, int64_t> pair_of(const YamlNode& node) {
  auto v = node.as_int_list(1, 1 << 20);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  node.fail("expected one integer or a list of two");
}

Dtype dtype_of(const YamlNode& node) {
  const std::string s = node.as_string();
  const auto t = parse_operand_dtype(s);
  if (t && dtype_weights_only(*t)) {
    node.fail("'" + s + "' is for weights only (a layer's weight_dtype); a tensor's dtype may be " +
              dtype_names_text(operand_dtypes(false)));
  }
  if (!t) node.fail("'" + s + "' is not a tensor dtype; allowed: " + dtype_names_text(operand_dtypes(false)));
  return *t;
}

Dtype weight_dtype_of(const YamlNode& node) {
  const std::string s = node.as_string();
  const auto t = parse_operand_dtype(s);
  if (!t) node.fail("'" + s + "' is not a weight dtype; allowed: " + dtype_names_text(operand_dtypes(true)));
  return *t;
}

void yaml_need_rank(const YamlNode& node, const Layer& l, const Tensor& t, size_t rank, const char* hint) {
  if (t.shape.size() != rank) {
    node.fail("layer '" + l.name + "': op " + std::string(op_name(l.op)) + " needs a " + hint + " input, but '" +
              t.name + "' is " + shape_text(t.shape));
  }
}

}  // namespace tessera::graph::ops
