// Element-wise ops (vector unit): binary ops that broadcast (numpy rules, per-sample
// shapes; with one input they combine it with a constant of shape `const_shape`), and
// unary functions. Their fp32 functions are functional mode's reference (and, on
// dequantized codes, what its lookup tables compute).
#include <algorithm>
#include <cmath>
#include <string>

#include "sim/common/error.h"
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
float softsign(float x) { return x / (1.0f + std::fabs(x)); }
// x tanh(softplus(x)) (Misra, "Mish", BMVC 2020), softplus as above.
float mish(float x) { return x * std::tanh(softplus(x)); }
float sin_fn(float x) { return std::sin(x); }
float cos_fn(float x) { return std::cos(x); }
float tan_fn(float x) { return std::tan(x); }
float asin_fn(float x) { return std::asin(x); }
float acos_fn(float x) { return std::acos(x); }
float atan_fn(float x) { return std::atan(x); }
float sinh_fn(float x) { return std::sinh(x); }
float cosh_fn(float x) { return std::cosh(x); }
float asinh_fn(float x) { return std::asinh(x); }
float acosh_fn(float x) { return std::acosh(x); }
float atanh_fn(float x) { return std::atanh(x); }
float prelu(float x, float slope) { return x < 0 ? slope * x : x; }
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

float log_fn(float x) { return std::log(x); }
float abs_fn(float x) { return std::fabs(x); }
float sign_fn(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f; }
float floor_fn(float x) { return std::floor(x); }
float ceil_fn(float x) { return std::ceil(x); }
float round_fn(float x) { return std::nearbyint(x); }  // the default rounding mode: halves to even (ONNX Round)
float not_fn(float x) { return x == 0 ? 1.0f : 0.0f; }

float truth(bool b) { return b ? 1.0f : 0.0f; }
float greater(float a, float b) { return truth(a > b); }
float greater_equal(float a, float b) { return truth(a >= b); }
float less(float a, float b) { return truth(a < b); }
float less_equal(float a, float b) { return truth(a <= b); }
float equal(float a, float b) { return truth(a == b); }
float and_fn(float a, float b) { return truth(a != 0 && b != 0); }
float or_fn(float a, float b) { return truth(a != 0 || b != 0); }
float fmod_fn(float a, float b) { return std::fmod(a, b); }
// The remainder with the divisor's sign (ONNX Mod with fmod = 0, Python's %).
float mod_fn(float a, float b) {
  const float r = std::fmod(a, b);
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

// ---- quantization: values <-> integer codes

void parse_quantize(const YamlNode& node, const Graph&, Layer& layer) {
  const bool dynamic = layer.op == OpKind::kDynamicQuantize;
  layer.quant_dtype = dynamic ? Dtype::kUint8 : Dtype::kInt8;
  if (auto to = node.get("to")) layer.quant_dtype = *parse_dtype(to->as_choice({"int8", "uint8"}));
}

// The value a code stands for is the value itself: the codes' type is the tensor's
// precision, which functional mode applies when it stores the output (the model's own
// scales and zero points are not used: functional mode calibrates its own).
float identity(float x) { return x; }

// quantize: a multiply by 1/scale and an add of the zero point (rounding and saturation
// in the same pass); dequantize: a subtract and a multiply.
int64_t quantize_work(const Graph&, const Layer&) { return 2; }
// dynamic_quantize: the range first (a min and a max pass over the tensor), then quantize.
int64_t dynamic_quantize_work(const Graph&, const Layer&) { return 4; }

// A divide, then a multiply-subtract.
int64_t two_ops_binary(const Graph&, const Layer&) { return 2; }
// softplus (exp, log1p), tanh, then a multiply.
int64_t three_ops(const Graph&, const Layer&) { return 3; }

void parse_clip(const YamlNode& node, const Graph&, Layer& layer) {
  if (auto lo = node.get("min")) layer.clip_min = static_cast<float>(lo->as_double(-3.4e38, 3.4e38));
  if (auto hi = node.get("max")) layer.clip_max = static_cast<float>(hi->as_double(-3.4e38, 3.4e38));
}

// min(max(x, lo), hi): every value is hi when lo > hi (ONNX Clip).
Fp32Kernel clip_fp32(const Graph& g, const Layer& l) {
  const int64_t e = shape_elements(g.tensors[static_cast<size_t>(l.output)].shape);
  const float lo = l.clip_min, hi = l.clip_max;
  return [=](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t i = 0; i < n * e; ++i) out[i] = std::min(std::max(in[0][i], lo), hi);
  };
}

// For each element of `out` (row-major), the element of an operand of shape `in` that
// numpy broadcasting reads (a longer operand's leading 1s are dropped).
std::vector<int64_t> broadcast_index(Shape in, const Shape& out) {
  while (in.size() > out.size() && in.front() == 1) in.erase(in.begin());
  std::vector<int64_t> stride(out.size(), 0);
  int64_t s = 1;
  for (size_t a = in.size(); a-- > 0;) {
    const size_t o = out.size() - in.size() + a;
    stride[o] = in[a] == 1 ? 0 : s;
    s *= in[a];
  }
  std::vector<int64_t> map(static_cast<size_t>(shape_elements(out)));
  std::vector<int64_t> idx(out.size(), 0);
  for (size_t i = 0; i < map.size(); ++i) {
    int64_t src = 0;
    for (size_t a = 0; a < out.size(); ++a) src += idx[a] * stride[a];
    map[i] = src;
    for (size_t a = out.size(); a-- > 0;) {
      if (++idx[a] < out[a]) break;
      idx[a] = 0;
    }
  }
  return map;
}

// select(cond, a, b), broadcasting; a constant operand (its values known) stands for
// the operand `const_index` (default: the last).
Fp32Kernel where_fp32(const Graph& g, const Layer& l) {
  const Shape& ys = g.tensors[static_cast<size_t>(l.output)].shape;
  const int64_t ey = shape_elements(ys);
  const int ci = !l.has_const ? -1 : l.const_index >= 0 ? l.const_index : l.const_first ? 0 : 2;
  if (l.has_const && static_cast<int64_t>(l.const_values.size()) != shape_elements(l.const_shape)) {
    throw InputError("functional mode does not support a where whose constant operand's values are not known (layer " +
                     l.name + ")");
  }
  std::vector<std::vector<int64_t>> maps;
  std::vector<int> source;  // per operand: input index, or -1 for the constant
  std::vector<int64_t> per_sample;
  size_t next = 0;
  for (int k = 0; k < 3; ++k) {
    if (k == ci) {
      maps.push_back(broadcast_index(l.const_shape, ys));
      source.push_back(-1);
      per_sample.push_back(0);
      continue;
    }
    const Shape& s = g.tensors[static_cast<size_t>(l.inputs.at(next))].shape;
    maps.push_back(broadcast_index(s, ys));
    source.push_back(static_cast<int>(next++));
    per_sample.push_back(shape_elements(s));
  }
  const std::vector<float> cv = l.const_values;
  return [=](const std::vector<const float*>& in, int64_t n, float* out) {
    auto operand = [&](int k, int64_t s, int64_t i) {
      const auto kk = static_cast<size_t>(k);
      const int64_t at = maps[kk][static_cast<size_t>(i)];
      return source[kk] < 0 ? cv[static_cast<size_t>(at)] : in[static_cast<size_t>(source[kk])][s * per_sample[kk] + at];
    };
    for (int64_t s = 0; s < n; ++s)
      for (int64_t i = 0; i < ey; ++i) out[s * ey + i] = operand(0, s, i) != 0 ? operand(1, s, i) : operand(2, s, i);
  };
}

OpDef binary(OpKind kind, std::string_view name, EnergyClass energy, float (*fn)(float, float)) {
  return {.kind = kind,
          .name = name,
          .energy_class = energy,
          .inputs = {2, 2, true},
          .elementwise = true,
          .yaml_keys = {"constant"},
          .infer = infer_broadcast,
          .binary = fn};
}

OpDef unary(OpKind kind, std::string_view name, EnergyClass energy, float (*fn)(float)) {
  return {.kind = kind, .name = name, .energy_class = energy, .elementwise = true, .infer = infer_same, .unary = fn};
}

// Evaluated on the vector unit's transcendental path (exp, log, reciprocal, tanh, ...).
OpDef transcendental(OpDef def) {
  def.vector_class = VectorClass::kTranscendental;
  return def;
}

}  // namespace

void add_elementwise_ops(OpRegistry& r) {
  r.add(binary(OpKind::kAdd, "add", EnergyClass::kAdd32, add));
  r.add(binary(OpKind::kSub, "sub", EnergyClass::kAdd32, sub));
  r.add(binary(OpKind::kMul, "mul", EnergyClass::kMultiplyAdd32, mul));
  r.add(transcendental(binary(OpKind::kDiv, "div", EnergyClass::kFp32MultiplyAdd, div)));  // a * reciprocal(b)
  r.add(transcendental(binary(OpKind::kPow, "pow", EnergyClass::kFp32MultiplyAdd, pow_fn)));
  r.add(binary(OpKind::kMax, "max", EnergyClass::kAdd32, max_fn));
  r.add(binary(OpKind::kMin, "min", EnergyClass::kAdd32, min_fn));
  OpDef where = binary(OpKind::kWhere, "where", EnergyClass::kAdd32, nullptr);  // select(cond, a, b)
  where.inputs = {3, 3, true};
  where.fp32 = where_fp32;
  r.add(where);
  r.add(binary(OpKind::kGreater, "greater", EnergyClass::kAdd32, greater));
  r.add(binary(OpKind::kGreaterEqual, "greater_equal", EnergyClass::kAdd32, greater_equal));
  r.add(binary(OpKind::kLess, "less", EnergyClass::kAdd32, less));
  r.add(binary(OpKind::kLessEqual, "less_equal", EnergyClass::kAdd32, less_equal));
  r.add(binary(OpKind::kEqual, "equal", EnergyClass::kAdd32, equal));
  r.add(binary(OpKind::kAnd, "and", EnergyClass::kAdd32, and_fn));
  r.add(binary(OpKind::kOr, "or", EnergyClass::kAdd32, or_fn));
  OpDef mod = binary(OpKind::kMod, "mod", EnergyClass::kFp32MultiplyAdd, mod_fn);
  mod.work_per_output = two_ops_binary;
  r.add(mod);
  OpDef fmod = binary(OpKind::kFmod, "fmod", EnergyClass::kFp32MultiplyAdd, fmod_fn);
  fmod.work_per_output = two_ops_binary;
  r.add(fmod);

  r.add(unary(OpKind::kRelu, "relu", EnergyClass::kAdd32, relu));
  r.add(transcendental(unary(OpKind::kSigmoid, "sigmoid", EnergyClass::kFp32MultiplyAdd, sigmoid)));
  r.add(transcendental(unary(OpKind::kTanh, "tanh", EnergyClass::kFp32MultiplyAdd, tanh_fn)));
  r.add(transcendental(unary(OpKind::kSqrt, "sqrt", EnergyClass::kFp32MultiplyAdd, sqrt_fn)));
  r.add(transcendental(unary(OpKind::kErf, "erf", EnergyClass::kFp32MultiplyAdd, erf_fn)));
  r.add(transcendental(unary(OpKind::kExp, "exp", EnergyClass::kFp32MultiplyAdd, exp_fn)));
  OpDef gelu_def = unary(OpKind::kGelu, "gelu", EnergyClass::kFp32MultiplyAdd, gelu);
  gelu_def.work_per_output = two_ops;
  r.add(transcendental(gelu_def));
  OpDef softplus_def = unary(OpKind::kSoftplus, "softplus", EnergyClass::kFp32MultiplyAdd, softplus);
  softplus_def.work_per_output = two_ops;  // exp, then log1p
  r.add(transcendental(softplus_def));
  OpDef softsign_def = unary(OpKind::kSoftsign, "softsign", EnergyClass::kFp32MultiplyAdd, softsign);
  softsign_def.work_per_output = two_ops;  // 1 + |x|, then a divide
  r.add(transcendental(softsign_def));     // the divide: a reciprocal
  r.add(transcendental(unary(OpKind::kLog, "log", EnergyClass::kFp32MultiplyAdd, log_fn)));
  r.add(unary(OpKind::kAbs, "abs", EnergyClass::kAdd32, abs_fn));
  r.add(unary(OpKind::kSign, "sign", EnergyClass::kAdd32, sign_fn));
  r.add(unary(OpKind::kFloor, "floor", EnergyClass::kAdd32, floor_fn));
  r.add(unary(OpKind::kCeil, "ceil", EnergyClass::kAdd32, ceil_fn));
  r.add(unary(OpKind::kRound, "round", EnergyClass::kAdd32, round_fn));
  r.add(unary(OpKind::kNot, "not", EnergyClass::kAdd32, not_fn));
  OpDef clip = unary(OpKind::kClip, "clip", EnergyClass::kAdd32, nullptr);
  clip.yaml_keys = {"min", "max"};
  clip.parse_yaml = parse_clip;
  clip.fp32 = clip_fp32;
  r.add(clip);
  OpDef quantize = unary(OpKind::kQuantize, "quantize", EnergyClass::kMultiplyAdd32, identity);
  quantize.yaml_keys = {"to"};
  quantize.parse_yaml = parse_quantize;
  quantize.work_per_output = quantize_work;
  quantize.quantizes = true;
  r.add(quantize);
  OpDef dequantize = unary(OpKind::kDequantize, "dequantize", EnergyClass::kMultiplyAdd32, identity);
  dequantize.work_per_output = quantize_work;
  r.add(dequantize);
  OpDef dynamic = unary(OpKind::kDynamicQuantize, "dynamic_quantize", EnergyClass::kMultiplyAdd32, identity);
  dynamic.yaml_keys = {"to"};
  dynamic.parse_yaml = parse_quantize;
  dynamic.work_per_output = dynamic_quantize_work;
  dynamic.quantizes = true;  // row tiles as an element-wise op: the range pass is in its work, not its tiling
  r.add(dynamic);
  // The IR carries no attributes for these (leaky_relu's alpha, hard_sigmoid's alpha and
  // beta), so functional mode has no reference for them.
  r.add(unary(OpKind::kLeakyRelu, "leaky_relu", EnergyClass::kMultiplyAdd32, nullptr));
  r.add(unary(OpKind::kHardSigmoid, "hard_sigmoid", EnergyClass::kMultiplyAdd32, nullptr));
  OpDef hard_swish = unary(OpKind::kHardSwish, "hard_swish", EnergyClass::kMultiplyAdd32, nullptr);
  hard_swish.work_per_output = two_ops;
  r.add(hard_swish);
  // Exponential linear units: an exponential, then a scale and a select (the exponential
  // sets the rate: the transcendental path).
  for (const auto& [kind, name] : {std::pair{OpKind::kElu, "elu"}, {OpKind::kSelu, "selu"}, {OpKind::kCelu, "celu"}}) {
    OpDef def = unary(kind, name, EnergyClass::kFp32MultiplyAdd, nullptr);
    def.work_per_output = two_ops;
    r.add(transcendental(def));
  }
  r.add(unary(OpKind::kThresholdedRelu, "thresholded_relu", EnergyClass::kAdd32, nullptr));  // a compare-select

  OpDef mish_def = unary(OpKind::kMish, "mish", EnergyClass::kFp32MultiplyAdd, mish);
  mish_def.work_per_output = three_ops;
  r.add(transcendental(mish_def));
  r.add(transcendental(unary(OpKind::kSin, "sin", EnergyClass::kFp32MultiplyAdd, sin_fn)));
  r.add(transcendental(unary(OpKind::kCos, "cos", EnergyClass::kFp32MultiplyAdd, cos_fn)));
  r.add(transcendental(unary(OpKind::kTan, "tan", EnergyClass::kFp32MultiplyAdd, tan_fn)));
  r.add(transcendental(unary(OpKind::kAsin, "asin", EnergyClass::kFp32MultiplyAdd, asin_fn)));
  r.add(transcendental(unary(OpKind::kAcos, "acos", EnergyClass::kFp32MultiplyAdd, acos_fn)));
  r.add(transcendental(unary(OpKind::kAtan, "atan", EnergyClass::kFp32MultiplyAdd, atan_fn)));
  r.add(transcendental(unary(OpKind::kSinh, "sinh", EnergyClass::kFp32MultiplyAdd, sinh_fn)));
  r.add(transcendental(unary(OpKind::kCosh, "cosh", EnergyClass::kFp32MultiplyAdd, cosh_fn)));
  r.add(transcendental(unary(OpKind::kAsinh, "asinh", EnergyClass::kFp32MultiplyAdd, asinh_fn)));
  r.add(transcendental(unary(OpKind::kAcosh, "acosh", EnergyClass::kFp32MultiplyAdd, acosh_fn)));
  r.add(transcendental(unary(OpKind::kAtanh, "atanh", EnergyClass::kFp32MultiplyAdd, atanh_fn)));
  OpDef prelu_def = binary(OpKind::kPRelu, "prelu", EnergyClass::kMultiplyAdd32, prelu);
  prelu_def.work_per_output = two_ops_binary;  // a compare-select and a multiply
  r.add(prelu_def);
}

}  // namespace tessera::graph
