// Element-wise ops (vector unit): binary ops that broadcast (numpy rules, per-sample
// shapes; with one input they combine it with a constant of shape `const_shape`), and
// unary functions. Their fp32 functions are functional mode's reference (and, on
// dequantized codes, what its lookup tables compute).
#include <algorithm>
#include <cmath>
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/graph/ops/op_util.h"
#include "sim/graph/ops/registry.h"

namespace tessera::graph {
namespace {

using namespace ops;

Shape infer_broadcast(const Graph& g, Layer& L) {
  const std::string opname(op_name(L.op));
  const Tensor& x = input(g, L, 0);
  const size_t arity = L.op == OpKind::kWhere ? 3 : 2;
  need_inputs(L, L.has_const ? 1 : arity, L.has_const ? arity - 1 : arity);
  Shape out = x.shape;
  for (size_t i = 1; i < L.inputs.size(); ++i) {
    const Tensor& y = input(g, L, i);
    try {
      out = broadcast_shapes(out, y.shape);
    } catch (const ShapeError&) {
      throw ShapeError(opname + " needs inputs of equal (or broadcastable) shape; '" + x.name + "' is " +
                       shape_text(x.shape) + ", '" + y.name + "' is " + shape_text(y.shape));
    }
  }
  if (L.has_const) {
    try {
      out = broadcast_shapes(out, L.const_shape);
    } catch (const ShapeError&) {
      throw ShapeError(opname + ": the constant of shape " + shape_text(L.const_shape) + " does not broadcast with '" +
                       x.name + "' " + shape_text(x.shape));
    }
  }
  if (out.size() > x.shape.size() && shape_elements(out) == shape_elements(x.shape)) {
    // A constant with more axes than the activation (e.g. [1, 768] + [768]) keeps the activation's rank.
    out = x.shape;
  }
  return out;
}

Shape infer_same(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  return input(g, L, 0).shape;
}

// The function, then a multiply.
int64_t two_ops(const Graph&, const Layer&) { return 2; }

float relu(float x) { return x > 0 ? x : 0.0f; }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float tanh_fn(float x) { return std::tanh(x); }
float sqrt_fn(float x) { return std::sqrt(x); }
float erf_fn(float x) { return std::erf(x); }
float exp_fn(float x) { return std::exp(x); }
// log(1 + e^x) without overflow for large x: max(x, 0) + log1p(e^-|x|).
float softplus(float x) { return std::max(x, 0.0f) + std::log1p(std::exp(-std::fabs(x))); }
float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }  // erf form

float add(float a, float b) { return a + b; }
float sub(float a, float b) { return a - b; }
float mul(float a, float b) { return a * b; }
float div(float a, float b) { return a / b; }
float pow_fn(float a, float b) {
  return b == 2.0f ? a * a : static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
}
float max_fn(float a, float b) { return std::max(a, b); }
float min_fn(float a, float b) { return std::min(a, b); }

OpDef binary(OpKind kind, std::string_view name, float (*fn)(float, float)) {
  return {.kind = kind,
          .name = name,
          .inputs = {2, 2, true},
          .elementwise = true,
          .yaml_keys = {"constant"},
          .infer = infer_broadcast,
          .binary = fn};
}

OpDef unary(OpKind kind, std::string_view name, float (*fn)(float)) {
  return {.kind = kind, .name = name, .elementwise = true, .infer = infer_same, .unary = fn};
}

}  // namespace

void add_elementwise_ops(OpRegistry& r) {
  r.add(binary(OpKind::kAdd, "add", add));
  r.add(binary(OpKind::kSub, "sub", sub));
  r.add(binary(OpKind::kMul, "mul", mul));
  r.add(binary(OpKind::kDiv, "div", div));
  r.add(binary(OpKind::kPow, "pow", pow_fn));
  r.add(binary(OpKind::kMax, "max", max_fn));
  r.add(binary(OpKind::kMin, "min", min_fn));
  OpDef where = binary(OpKind::kWhere, "where", nullptr);  // select(cond, a, b); no fp32 reference yet
  where.inputs = {3, 3, true};
  r.add(where);

  r.add(unary(OpKind::kRelu, "relu", relu));
  r.add(unary(OpKind::kSigmoid, "sigmoid", sigmoid));
  r.add(unary(OpKind::kTanh, "tanh", tanh_fn));
  r.add(unary(OpKind::kSqrt, "sqrt", sqrt_fn));
  r.add(unary(OpKind::kErf, "erf", erf_fn));
  r.add(unary(OpKind::kExp, "exp", exp_fn));
  OpDef gelu_def = unary(OpKind::kGelu, "gelu", gelu);
  gelu_def.work_per_output = two_ops;
  r.add(gelu_def);
  OpDef softplus_def = unary(OpKind::kSoftplus, "softplus", softplus);
  softplus_def.work_per_output = two_ops;  // exp, then log1p
  r.add(softplus_def);
  // The IR carries no attributes for these (clip's bounds, leaky_relu's alpha), so
  // functional mode has no reference for them.
  r.add(unary(OpKind::kClip, "clip", nullptr));
  r.add(unary(OpKind::kLeakyRelu, "leaky_relu", nullptr));
  r.add(unary(OpKind::kHardSigmoid, "hard_sigmoid", nullptr));
  OpDef hard_swish = unary(OpKind::kHardSwish, "hard_swish", nullptr);
  hard_swish.work_per_output = two_ops;
  r.add(hard_swish);
}

}  // namespace tessera::graph
