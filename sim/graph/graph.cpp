#include "sim/graph/graph.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"

namespace tessera::graph {

int64_t shape_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) throw ShapeError("shape " + shape_text(shape) + " has too many elements");
  }
  return n;
}

std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string_view op_name(OpKind op) {
  switch (op) {
    case OpKind::kFc: return "fc";
    case OpKind::kConv2d: return "conv2d";
    case OpKind::kMaxPool: return "maxpool";
    case OpKind::kAvgPool: return "avgpool";
    case OpKind::kGlobalAvgPool: return "global_avgpool";
    case OpKind::kFlatten: return "flatten";
    case OpKind::kConcat: return "concat";
    case OpKind::kAdd: return "add";
    case OpKind::kMul: return "mul";
    case OpKind::kSigmoid: return "sigmoid";
    case OpKind::kTanh: return "tanh";
    case OpKind::kRelu: return "relu";
    case OpKind::kConvTranspose2d: return "conv_transpose2d";
    case OpKind::kMatmul: return "matmul";
    case OpKind::kLstm: return "lstm";
    case OpKind::kGru: return "gru";
    case OpKind::kSub: return "sub";
    case OpKind::kDiv: return "div";
    case OpKind::kPow: return "pow";
    case OpKind::kMax: return "max";
    case OpKind::kMin: return "min";
    case OpKind::kWhere: return "where";
    case OpKind::kSqrt: return "sqrt";
    case OpKind::kErf: return "erf";
    case OpKind::kExp: return "exp";
    case OpKind::kGelu: return "gelu";
    case OpKind::kClip: return "clip";
    case OpKind::kLeakyRelu: return "leaky_relu";
    case OpKind::kHardSigmoid: return "hard_sigmoid";
    case OpKind::kHardSwish: return "hard_swish";
    case OpKind::kBatchNorm: return "batch_norm";
    case OpKind::kLayerNorm: return "layer_norm";
    case OpKind::kSoftmax: return "softmax";
    case OpKind::kReduceMean: return "reduce_mean";
    case OpKind::kReduceSum: return "reduce_sum";
    case OpKind::kReduceMax: return "reduce_max";
    case OpKind::kGlobalMaxPool: return "global_maxpool";
    case OpKind::kResize: return "resize";
    case OpKind::kPad: return "pad";
    case OpKind::kTranspose: return "transpose";
    case OpKind::kReshape: return "reshape";
    case OpKind::kSlice: return "slice";
    case OpKind::kExpand: return "expand";
    case OpKind::kOpCount: break;
  }
  return "?";
}

bool is_matrix_op(OpKind op) {
  return op == OpKind::kFc || op == OpKind::kConv2d || op == OpKind::kConvTranspose2d || op == OpKind::kMatmul ||
         op == OpKind::kLstm || op == OpKind::kGru;
}
bool is_layout_op(OpKind op) { return op == OpKind::kFlatten || op == OpKind::kReshape; }

bool is_elementwise_op(OpKind op) {
  switch (op) {
    case OpKind::kAdd: case OpKind::kMul: case OpKind::kSub: case OpKind::kDiv: case OpKind::kPow:
    case OpKind::kMax: case OpKind::kMin: case OpKind::kWhere: case OpKind::kSigmoid: case OpKind::kTanh:
    case OpKind::kRelu: case OpKind::kSqrt: case OpKind::kErf: case OpKind::kExp: case OpKind::kGelu:
    case OpKind::kClip: case OpKind::kLeakyRelu: case OpKind::kHardSigmoid: case OpKind::kHardSwish:
      return true;
    default:
      return false;
  }
}

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kSigmoid: return "sigmoid";
    case Activation::kTanh: return "tanh";
    case Activation::kRelu6: return "relu6";
  }
  return "?";
}

int64_t Layer::weight_count() const {
  switch (op) {
    case OpKind::kLstm:
    case OpKind::kGru: return directions * gates() * hidden * (gemm_k + hidden);
    case OpKind::kMatmul: return 0;  // both operands are activations
    default: return gemm_groups * gemm_k * gemm_n;
  }
}

int64_t Layer::macs_per_sample() const {
  switch (op) {
    case OpKind::kLstm:
    case OpKind::kGru: return directions * gemm_m_per_sample * gates() * hidden * (gemm_k + hidden);
    default: return gemm_groups * gemm_m_per_sample * gemm_k * gemm_n;
  }
}

int64_t Graph::total_weights() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.weight_count();
  return n;
}

int64_t Graph::total_macs_per_sample() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.macs_per_sample();
  return n;
}

int Graph::find_tensor(const std::string& name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// ---------------------------------------------------------------- shape inference

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError("shapes " + shape_text(a) + " and " + shape_text(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

int64_t normalize_axis(int64_t axis, size_t rank, const std::string& what) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw ShapeError(what + " " + std::to_string(axis) + " is out of range for a rank-" + std::to_string(r) +
                     " input");
  }
  return axis < 0 ? axis + r : axis;
}

// Output size of a sliding window along one axis.
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

}  // namespace

static Shape infer_layer_unchecked(const Graph& g, Layer& L);

Shape infer_layer(const Graph& g, Layer& L) {
  Shape out = infer_layer_unchecked(g, L);
  shape_elements(out);  // throws if the output's element count overflows
  // Layer::weight_count() and macs_per_sample() multiply these in int64: they must fit.
  const double m = static_cast<double>(L.gemm_m_per_sample), k = static_cast<double>(L.gemm_k),
               n = static_cast<double>(L.gemm_n);
  const double recurrent = static_cast<double>(L.directions) * static_cast<double>(L.gates()) *
                           static_cast<double>(L.hidden) * (k + static_cast<double>(L.hidden));
  const double macs = (L.op == OpKind::kLstm || L.op == OpKind::kGru) ? m * recurrent
                                                                      : static_cast<double>(L.gemm_groups) * m * k * n;
  if (macs > 0x1p62 || recurrent > 0x1p62) {
    throw ShapeError("the layer is too large: its MAC count does not fit 64 bits");
  }
  return out;
}

static Shape infer_layer_unchecked(const Graph& g, Layer& L) {
  auto in = [&](size_t i) -> const Tensor& { return g.tensors[static_cast<size_t>(L.inputs[i])]; };
  const std::string opname(op_name(L.op));
  auto need_inputs = [&](size_t lo, size_t hi) {
    if (L.inputs.size() < lo || L.inputs.size() > hi) {
      const std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
      throw ShapeError("op " + opname + " takes " + want + " input(s), got " + std::to_string(L.inputs.size()));
    }
  };
  auto need_rank = [&](const Tensor& t, size_t lo, size_t hi, const std::string& hint) {
    if (t.shape.size() < lo || t.shape.size() > hi) {
      throw ShapeError("op " + opname + " needs a " + hint + " input, but '" + t.name + "' is " + shape_text(t.shape));
    }
  };
  if (L.inputs.empty()) throw ShapeError("op " + opname + " needs an input");
  const Tensor& x = in(0);
  L.gemm_m_per_sample = L.gemm_k = L.gemm_n = 0;
  L.gemm_groups = 1;

  switch (L.op) {
    case OpKind::kFc: {
      need_inputs(1, 1);
      if (L.out_features < 1) throw ShapeError("op fc needs units >= 1");
      L.gemm_m_per_sample = shape_elements(x.shape) / x.shape.back();
      L.gemm_k = x.shape.back();
      L.gemm_n = L.out_features;
      Shape out = x.shape;
      out.back() = L.out_features;
      return out;
    }
    case OpKind::kConv2d:
    case OpKind::kConvTranspose2d:
    case OpKind::kMaxPool:
    case OpKind::kAvgPool: {
      need_inputs(1, 1);
      need_rank(x, 2, 3, "[H, W, C] (or [W, C])");
      const bool two_d = x.shape.size() == 3;
      const int64_t H = two_d ? x.shape[0] : 1, W = x.shape[two_d ? 1 : 0], C = x.shape.back();
      if (!two_d && (L.kernel_h != 1 || L.pad_top || L.pad_bottom)) throw ShapeError("a [W, C] input needs kernel height 1");
      const bool matrix = L.op == OpKind::kConv2d || L.op == OpKind::kConvTranspose2d;
      if (matrix) {
        if (L.out_features < 1) throw ShapeError("op " + opname + " needs filters >= 1");
        if (L.groups < 1 || C % L.groups != 0 || L.out_features % L.groups != 0) {
          throw ShapeError("groups " + std::to_string(L.groups) + " must divide the input channels (" +
                           std::to_string(C) + ") and the filters (" + std::to_string(L.out_features) + ")");
        }
      }
      int64_t oh = 0, ow = 0;
      if (L.op == OpKind::kConvTranspose2d) {
        oh = (H - 1) * L.stride_h - L.pad_top - L.pad_bottom + L.dilation_h * (L.kernel_h - 1) + L.output_pad_h + 1;
        ow = (W - 1) * L.stride_w - L.pad_left - L.pad_right + L.dilation_w * (L.kernel_w - 1) + L.output_pad_w + 1;
        if (oh < 1 || ow < 1) throw ShapeError("transposed convolution output would be empty");
      } else {
        oh = window_out(H, L.pad_top, L.pad_bottom, L.kernel_h, L.stride_h, L.dilation_h, L.ceil_mode);
        ow = window_out(W, L.pad_left, L.pad_right, L.kernel_w, L.stride_w, L.dilation_w, L.ceil_mode);
      }
      const int64_t oc = matrix ? L.out_features : C;
      if (L.op == OpKind::kConv2d) {
        L.gemm_m_per_sample = checked_mul(oh, ow);
        L.gemm_k = checked_mul(checked_mul(L.kernel_h, L.kernel_w), C / L.groups);
        L.gemm_n = L.out_features / L.groups;
        L.gemm_groups = L.groups;
      } else if (L.op == OpKind::kConvTranspose2d) {
        // Each input pixel times (kernel x filters); the products overlap-add into the output.
        L.gemm_m_per_sample = checked_mul(H, W);
        L.gemm_k = C / L.groups;
        L.gemm_n = checked_mul(checked_mul(L.kernel_h, L.kernel_w), L.out_features / L.groups);
        L.gemm_groups = L.groups;
      }
      return two_d ? Shape{oh, ow, oc} : Shape{ow, oc};
    }
    case OpKind::kGlobalAvgPool:
    case OpKind::kGlobalMaxPool: {
      need_inputs(1, 1);
      need_rank(x, 2, 3, "[H, W, C]");
      if (!L.keepdims) return {x.shape.back()};
      Shape out(x.shape.size(), 1);
      out.back() = x.shape.back();
      return out;
    }
    case OpKind::kFlatten:
      need_inputs(1, 1);
      return {shape_elements(x.shape)};
    case OpKind::kReshape: {
      need_inputs(1, 1);
      Shape out = L.target_shape;
      int64_t known = 1, unknown = -1;
      for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1) {
          if (unknown >= 0) throw ShapeError("reshape target " + shape_text(out) + " has more than one -1");
          unknown = static_cast<int64_t>(i);
        } else if (out[i] < 1) {
          throw ShapeError("reshape target " + shape_text(out) + " has a dimension < 1");
        } else {
          known *= out[i];
        }
      }
      if (out.empty()) throw ShapeError("reshape needs a target shape");
      const int64_t n = shape_elements(x.shape);
      if (unknown >= 0) {
        if (n % known != 0) throw ShapeError("cannot reshape " + shape_text(x.shape) + " to " + shape_text(out));
        out[static_cast<size_t>(unknown)] = n / known;
      }
      if (shape_elements(out) != n) throw ShapeError("cannot reshape " + shape_text(x.shape) + " to " + shape_text(out));
      return out;
    }
    case OpKind::kConcat: {
      if (L.inputs.size() < 2) throw ShapeError("op concat takes two or more inputs, got " + std::to_string(L.inputs.size()));
      const int64_t axis = normalize_axis(L.axis, x.shape.size(), "concat axis");
      Shape out = x.shape;
      out[static_cast<size_t>(axis)] = 0;
      for (size_t i = 0; i < L.inputs.size(); ++i) {
        const Tensor& t = in(i);
        Shape a = t.shape, b = x.shape;
        if (a.size() == b.size()) a[static_cast<size_t>(axis)] = b[static_cast<size_t>(axis)] = 0;
        if (a != b) {
          const bool last = axis == static_cast<int64_t>(x.shape.size()) - 1;
          throw ShapeError(std::string("concat inputs must agree on all but ") +
                           (last ? "the last axis" : "axis " + std::to_string(axis)) + "; '" + x.name + "' is " +
                           shape_text(x.shape) + ", '" + t.name + "' is " + shape_text(t.shape));
        }
        out[static_cast<size_t>(axis)] += t.shape[static_cast<size_t>(axis)];
      }
      return out;
    }
    case OpKind::kAdd: case OpKind::kMul: case OpKind::kSub: case OpKind::kDiv: case OpKind::kPow:
    case OpKind::kMax: case OpKind::kMin: case OpKind::kWhere: {
      const size_t arity = L.op == OpKind::kWhere ? 3 : 2;
      need_inputs(L.has_const ? 1 : arity, L.has_const ? arity - 1 : arity);
      Shape out = x.shape;
      for (size_t i = 1; i < L.inputs.size(); ++i) {
        const Tensor& y = in(i);
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
          throw ShapeError(opname + ": the constant of shape " + shape_text(L.const_shape) +
                           " does not broadcast with '" + x.name + "' " + shape_text(x.shape));
        }
      }
      if (out.size() > x.shape.size() && shape_elements(out) == shape_elements(x.shape)) {
        // A constant with more axes than the activation (e.g. [1, 768] + [768]) keeps the activation's rank.
        out = x.shape;
      }
      return out;
    }
    case OpKind::kSigmoid: case OpKind::kTanh: case OpKind::kRelu: case OpKind::kSqrt: case OpKind::kErf:
    case OpKind::kExp: case OpKind::kGelu: case OpKind::kClip: case OpKind::kLeakyRelu:
    case OpKind::kHardSigmoid: case OpKind::kHardSwish: case OpKind::kBatchNorm:
      need_inputs(1, 1);
      return x.shape;
    case OpKind::kLayerNorm:
    case OpKind::kSoftmax:
      need_inputs(1, 1);
      L.axis = normalize_axis(L.axis, x.shape.size(), opname + " axis");
      return x.shape;
    case OpKind::kReduceMean:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax: {
      need_inputs(1, 1);
      std::vector<bool> reduced(x.shape.size(), L.axes.empty());
      for (int64_t& a : L.axes) {
        a = normalize_axis(a, x.shape.size(), opname + " axis");
        reduced[static_cast<size_t>(a)] = true;
      }
      std::sort(L.axes.begin(), L.axes.end());
      L.axes.erase(std::unique(L.axes.begin(), L.axes.end()), L.axes.end());
      Shape out;
      for (size_t i = 0; i < x.shape.size(); ++i) {
        if (!reduced[i]) out.push_back(x.shape[i]);
        else if (L.keepdims) out.push_back(1);
      }
      if (out.empty()) out.push_back(1);
      return out;
    }
    case OpKind::kResize:
    case OpKind::kExpand: {
      need_inputs(1, 1);
      if (L.op == OpKind::kExpand) {
        try {
          return broadcast_shapes(x.shape, L.target_shape);
        } catch (const ShapeError& e) {
          throw ShapeError(std::string("expand: ") + e.what());
        }
      }
      if (L.target_shape.size() != x.shape.size()) {
        throw ShapeError("resize target " + shape_text(L.target_shape) + " must have the rank of '" + x.name + "' " +
                         shape_text(x.shape));
      }
      for (int64_t d : L.target_shape) {
        if (d < 1) throw ShapeError("resize target " + shape_text(L.target_shape) + " has a dimension < 1");
      }
      return L.target_shape;
    }
    case OpKind::kPad: {
      need_inputs(1, 1);
      if (L.pads.size() != 2 * x.shape.size()) {
        throw ShapeError("pad needs " + std::to_string(2 * x.shape.size()) + " pads (begin and end of every axis) for '" +
                         x.name + "' " + shape_text(x.shape) + ", got " + std::to_string(L.pads.size()));
      }
      Shape out = x.shape;
      for (size_t i = 0; i < out.size(); ++i) out[i] += L.pads[i] + L.pads[i + out.size()];
      for (int64_t d : out) {
        if (d < 1) throw ShapeError("pad would make an empty tensor from " + shape_text(x.shape));
      }
      return out;
    }
    case OpKind::kTranspose: {
      need_inputs(1, 1);
      if (L.perm.empty()) {
        for (size_t i = x.shape.size(); i-- > 0;) L.perm.push_back(static_cast<int64_t>(i));
      }
      std::vector<int64_t> sorted = L.perm;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int64_t> iota(x.shape.size());
      std::iota(iota.begin(), iota.end(), 0);
      if (sorted != iota) {
        throw ShapeError("transpose perm must be a permutation of 0.." + std::to_string(x.shape.size() - 1) + " for '" +
                         x.name + "' " + shape_text(x.shape));
      }
      Shape out;
      for (int64_t p : L.perm) out.push_back(x.shape[static_cast<size_t>(p)]);
      return out;
    }
    case OpKind::kSlice: {
      need_inputs(1, 1);
      L.axis = normalize_axis(L.axis, x.shape.size(), "slice axis");
      const int64_t dim = x.shape[static_cast<size_t>(L.axis)];
      if (L.slice_step == 0) throw ShapeError("slice step must not be 0");
      auto clampi = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(hi, v)); };
      int64_t b = L.slice_begin < 0 ? L.slice_begin + dim : L.slice_begin;
      int64_t e = L.slice_end < 0 ? L.slice_end + dim : L.slice_end;
      int64_t n = 0;
      if (L.slice_step > 0) {
        b = clampi(b, 0, dim), e = clampi(e, 0, dim);
        n = e > b ? (e - b + L.slice_step - 1) / L.slice_step : 0;
      } else {
        b = clampi(b, -1, dim - 1), e = clampi(e, -1, dim - 1);
        n = b > e ? (b - e - L.slice_step - 1) / (-L.slice_step) : 0;
      }
      if (n < 1) throw ShapeError("slice [" + std::to_string(L.slice_begin) + ":" + std::to_string(L.slice_end) +
                                  "] of axis " + std::to_string(L.axis) + " of '" + x.name + "' " + shape_text(x.shape) +
                                  " is empty");
      Shape out = x.shape;
      out[static_cast<size_t>(L.axis)] = n;
      return out;
    }
    case OpKind::kMatmul: {
      need_inputs(2, 2);
      const Tensor& b = in(1);
      need_rank(x, 2, 16, "[..., M, K]");
      need_rank(b, 2, 16, "[..., K, N]");
      const int64_t M = x.shape[x.shape.size() - 2], K = x.shape.back();
      const int64_t Kb = b.shape[b.shape.size() - 2], N = b.shape.back();
      if (K != Kb) {
        throw ShapeError("matmul inner dimensions differ: '" + x.name + "' is " + shape_text(x.shape) + ", '" + b.name +
                         "' is " + shape_text(b.shape));
      }
      Shape la(x.shape.begin(), x.shape.end() - 2), lb(b.shape.begin(), b.shape.end() - 2);
      Shape lead;
      try {
        lead = broadcast_shapes(la, lb);
      } catch (const ShapeError&) {
        throw ShapeError("matmul leading (batch) dimensions do not broadcast: '" + x.name + "' is " +
                         shape_text(x.shape) + ", '" + b.name + "' is " + shape_text(b.shape));
      }
      L.gemm_m_per_sample = M;
      L.gemm_k = K;
      L.gemm_n = N;
      L.gemm_groups = shape_elements(lead);
      Shape out = lead;
      out.push_back(M);
      out.push_back(N);
      return out;
    }
    case OpKind::kLstm:
    case OpKind::kGru: {
      need_inputs(1, L.op == OpKind::kLstm ? 3 : 2);
      need_rank(x, 2, 2, "[steps, features]");
      if (L.hidden < 1) throw ShapeError("op " + opname + " needs hidden >= 1");
      if (L.directions != 1 && L.directions != 2) throw ShapeError("directions must be 1 or 2");
      for (size_t i = 1; i < L.inputs.size(); ++i) {
        const Shape want{L.directions, L.hidden};
        if (shape_elements(in(i).shape) != shape_elements(want)) {
          throw ShapeError("initial state '" + in(i).name + "' is " + shape_text(in(i).shape) + ", expected " +
                           shape_text(want));
        }
      }
      L.gemm_m_per_sample = x.shape[0];
      L.gemm_k = x.shape[1];
      L.gemm_n = L.gates() * L.hidden;
      return {x.shape[0], L.directions, L.hidden};
    }
    case OpKind::kOpCount: break;
  }
  throw ShapeError("op " + opname + " has no shape rule");
}

// ---------------------------------------------------------------- YAML loader

namespace {

const std::map<std::string, OpKind>& op_table() {
  static const std::map<std::string, OpKind> table = [] {
    std::map<std::string, OpKind> t;
    for (int i = 0; i < static_cast<int>(OpKind::kOpCount); ++i) {
      const auto op = static_cast<OpKind>(i);
      t.emplace(std::string(op_name(op)), op);
    }
    return t;
  }();
  return table;
}

std::pair<int64_t, int64_t> pair_of(const YamlNode& node) {
  auto v = node.as_int_list(1, 1 << 20);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  node.fail("expected one integer or a list of two");
}

Dtype dtype_of(const YamlNode& node) {
  auto d = parse_dtype(node.as_choice({"int8", "int16", "fp16", "bf16"}));
  return *d;
}

// Output size along one axis and the padding before/after for `padding`.
struct AxisPlan {
  int64_t out = 0, pad_before = 0, pad_after = 0;
};

AxisPlan plan_axis(const YamlNode& layer, const std::string& padding_mode, int64_t explicit_before,
                   int64_t explicit_after, int64_t in, int64_t kernel, int64_t stride, bool transposed) {
  AxisPlan p;
  if (padding_mode == "same") {
    if (transposed) {
      // Output = input x stride; the padding removes the overhang.
      p.out = in * stride;
      const int64_t total = std::max<int64_t>((in - 1) * stride + kernel - p.out, 0);
      p.pad_before = total / 2;
      p.pad_after = total - p.pad_before;
      return p;
    }
    p.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((p.out - 1) * stride + kernel - in, 0);
    p.pad_before = total / 2;
    p.pad_after = total - p.pad_before;
  } else {
    const int64_t before = padding_mode == "valid" ? 0 : explicit_before;
    const int64_t after = padding_mode == "valid" ? 0 : explicit_after;
    if (!transposed && in + before + after < kernel) {
      layer.fail("window of " + std::to_string(kernel) + " does not fit an input of " + std::to_string(in) +
                 " with padding " + std::to_string(before));
    }
    p.pad_before = before;
    p.pad_after = after;
  }
  return p;
}

std::vector<std::string> allowed_keys(OpKind op) {
  std::vector<std::string> allowed = {"name", "op", "input", "inputs", "dtype"};
  auto add = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys) allowed.emplace_back(k);
  };
  switch (op) {
    case OpKind::kFc: add({"activation", "weight_dtype", "units"}); break;
    case OpKind::kConv2d: add({"activation", "weight_dtype", "filters", "kernel", "stride", "padding", "dilation", "groups"}); break;
    case OpKind::kConvTranspose2d:
      add({"activation", "weight_dtype", "filters", "kernel", "stride", "padding", "dilation", "groups", "output_padding"});
      break;
    case OpKind::kMatmul: add({"activation"}); break;
    case OpKind::kLstm: add({"hidden", "direction", "weight_dtype", "peepholes"}); break;
    case OpKind::kGru: add({"hidden", "direction", "weight_dtype", "linear_before_reset"}); break;
    case OpKind::kMaxPool: add({"kernel", "stride", "padding", "dilation", "ceil_mode"}); break;
    case OpKind::kAvgPool: add({"kernel", "stride", "padding", "ceil_mode"}); break;
    case OpKind::kGlobalAvgPool:
    case OpKind::kGlobalMaxPool: add({"keepdims"}); break;
    case OpKind::kConcat: case OpKind::kSoftmax: case OpKind::kLayerNorm: add({"axis"}); break;
    case OpKind::kReduceMean: case OpKind::kReduceSum: case OpKind::kReduceMax: add({"axes", "keepdims"}); break;
    case OpKind::kResize: add({"size", "scale", "mode"}); break;
    case OpKind::kPad: add({"pads", "mode"}); break;
    case OpKind::kTranspose: add({"perm"}); break;
    case OpKind::kReshape: case OpKind::kExpand: add({"shape"}); break;
    case OpKind::kSlice: add({"axis", "begin", "end", "step"}); break;
    case OpKind::kAdd: case OpKind::kMul: case OpKind::kSub: case OpKind::kDiv: case OpKind::kPow:
    case OpKind::kMax: case OpKind::kMin: case OpKind::kWhere: add({"constant"}); break;
    default: break;
  }
  return allowed;
}

}  // namespace

Graph parse_graph_yaml(const YamlNode& root) {
  root.expect_keys({"name", "description", "batch", "dtype", "inputs", "layers", "outputs"});
  Graph g;
  g.source = root.file();
  g.name = root.at("name").as_string();
  g.description = root.string_or("description", "");
  g.default_batch = root.int_or("batch", 1, 1, 1 << 24);
  const Dtype default_dtype = root.get("dtype") ? dtype_of(root.at("dtype")) : Dtype::kInt8;

  // Tensor ids by name: a linear search per reference made long chains quadratic (audit D6).
  std::unordered_map<std::string, int> ids;
  auto find = [&](const std::string& name) {
    const auto it = ids.find(name);
    return it == ids.end() ? -1 : it->second;
  };
  auto add_tensor = [&](const YamlNode& where, const std::string& name, Shape shape, Dtype dtype, int producer) {
    if (find(name) >= 0) where.fail("name '" + name + "' is already used by an earlier input or layer");
    g.tensors.push_back(Tensor{name, std::move(shape), dtype, producer});
    ids.emplace(name, static_cast<int>(g.tensors.size() - 1));
    return static_cast<int>(g.tensors.size() - 1);
  };

  const auto inputs = root.at("inputs").elements();
  if (inputs.empty()) root.at("inputs").fail("a graph needs at least one input");
  for (const auto& in : inputs) {
    in.expect_keys({"name", "shape", "dtype"});
    Shape shape = in.at("shape").as_int_list(1, 1 << 24);
    if (shape.empty() || shape.size() > 4) {
      in.at("shape").fail("per-sample shape must be [features], [rows, features], [H, W, C] or [D, H, W, C], got " +
                          shape_text(shape));
    }
    const Dtype dt = in.get("dtype") ? dtype_of(in.at("dtype")) : default_dtype;
    g.inputs.push_back(add_tensor(in, in.at("name").as_string(), shape, dt, -1));
  }

  const auto layers = root.at("layers").elements();
  if (layers.empty()) root.at("layers").fail("a graph needs at least one layer");
  int previous = g.inputs.front();
  for (const auto& node : layers) {
    if (!node.is_map()) node.fail("expected a layer mapping with keys name and op");
    const std::string name = node.at("name").as_string();
    const std::string op_text = node.at("op").as_string();
    auto it = op_table().find(op_text);
    if (it == op_table().end()) {
      std::string allowed;
      for (const auto& [k, v] : op_table()) allowed += (allowed.empty() ? "" : ", ") + k;
      node.at("op").fail("layer '" + name + "': unsupported op '" + op_text + "'; supported: " + allowed);
    }
    Layer layer;
    layer.name = name;
    layer.op = it->second;
    const OpKind op = layer.op;
    node.expect_keys(allowed_keys(op));

    // Resolve inputs by name; default: the previous layer's output.
    auto resolve = [&](const YamlNode& ref) {
      const std::string ref_name = ref.as_string();
      const int id = find(ref_name);
      if (id < 0) ref.fail("layer '" + name + "': unknown input '" + ref_name + "' (inputs must name a graph input or an earlier layer)");
      return id;
    };
    if (node.has("input") && node.has("inputs")) node.fail("layer '" + name + "': give either input or inputs, not both");
    if (auto in = node.get("input")) layer.inputs.push_back(resolve(*in));
    if (auto ins = node.get("inputs")) {
      for (const auto& e : ins->elements()) layer.inputs.push_back(resolve(e));
    }
    if (layer.inputs.empty()) layer.inputs.push_back(previous);
    if (auto c = node.get("constant")) {
      layer.has_const = true;
      layer.const_shape = c->as_int_list(1, 1 << 24);
    }

    // Arity of the YAML form (the shape rules check it too; this keeps the old messages).
    const bool binary = op == OpKind::kAdd || op == OpKind::kMul || op == OpKind::kSub || op == OpKind::kDiv ||
                        op == OpKind::kPow || op == OpKind::kMax || op == OpKind::kMin || op == OpKind::kMatmul;
    size_t want = binary ? 2 : op == OpKind::kWhere ? 3 : 1;
    if (layer.has_const) --want;
    const bool variadic = op == OpKind::kConcat || op == OpKind::kLstm || op == OpKind::kGru;
    if (op == OpKind::kConcat ? layer.inputs.size() < 2 : (!variadic && layer.inputs.size() != want)) {
      node.fail("layer '" + name + "': op " + op_text + " takes " +
                (op == OpKind::kConcat ? std::string("two or more inputs") : std::to_string(want) + " input(s)") +
                ", got " + std::to_string(layer.inputs.size()));
    }
    const Tensor& x = g.tensors[layer.inputs[0]];
    const Dtype out_dtype = node.get("dtype") ? dtype_of(node.at("dtype")) : x.dtype;
    auto need_rank = [&](const Tensor& t, size_t rank, const char* hint) {
      if (t.shape.size() != rank) {
        node.fail("layer '" + name + "': op " + op_text + " needs a " + hint + " input, but '" + t.name + "' is " +
                  shape_text(t.shape));
      }
    };

    switch (op) {
      case OpKind::kFc:
        if (x.shape.size() > 2) {
          need_rank(x, 1, "vector [features] or [rows, features] (add a flatten or global_avgpool layer first)");
        }
        layer.out_features = node.at("units").as_int(1, 1 << 24);
        break;
      case OpKind::kConv2d:
      case OpKind::kConvTranspose2d:
      case OpKind::kMaxPool:
      case OpKind::kAvgPool: {
        need_rank(x, 3, "[H, W, C]");
        const bool transposed = op == OpKind::kConvTranspose2d;
        const bool matrix = op == OpKind::kConv2d || transposed;
        auto [kh, kw] = pair_of(node.at("kernel"));
        auto stride = node.get("stride") ? pair_of(node.at("stride"))
                                         : (matrix ? std::pair<int64_t, int64_t>{1, 1} : std::pair<int64_t, int64_t>{kh, kw});
        auto dil = node.get("dilation") ? pair_of(node.at("dilation")) : std::pair<int64_t, int64_t>{1, 1};
        std::string mode = "valid";
        int64_t pt = 0, pl = 0, pb = 0, pr = 0;
        if (auto p = node.get("padding")) {
          if (p->is_scalar() && (p->as_string() == "same" || p->as_string() == "valid")) {
            mode = p->as_string();
          } else {
            mode = "explicit";
            auto v = p->as_int_list(0, 1 << 16);
            if (v.size() == 3 || v.size() > 4) p->fail("padding must be same, valid, N, [ph, pw] or [top, left, bottom, right]");
            if (v.size() == 4) {
              pt = v[0], pl = v[1], pb = v[2], pr = v[3];
            } else {
              pt = pb = v[0];
              pl = pr = v.size() == 2 ? v[1] : v[0];
            }
          }
        }
        const int64_t span_h = dil.first * (kh - 1) + 1, span_w = dil.second * (kw - 1) + 1;
        const AxisPlan ah = plan_axis(node, mode, pt, pb, x.shape[0], span_h, stride.first, transposed);
        const AxisPlan aw = plan_axis(node, mode, pl, pr, x.shape[1], span_w, stride.second, transposed);
        layer.kernel_h = kh;
        layer.kernel_w = kw;
        layer.stride_h = stride.first;
        layer.stride_w = stride.second;
        layer.dilation_h = dil.first;
        layer.dilation_w = dil.second;
        layer.pad_top = ah.pad_before;
        layer.pad_bottom = ah.pad_after;
        layer.pad_left = aw.pad_before;
        layer.pad_right = aw.pad_after;
        layer.ceil_mode = node.bool_or("ceil_mode", false);
        if (matrix) {
          layer.out_features = node.at("filters").as_int(1, 1 << 24);
          layer.groups = node.int_or("groups", 1, 1, 1 << 24);
        }
        if (transposed && node.get("output_padding")) {
          auto [oh, ow] = pair_of(node.at("output_padding"));
          layer.output_pad_h = oh, layer.output_pad_w = ow;
        }
        break;
      }
      case OpKind::kLstm:
      case OpKind::kGru: {
        layer.hidden = node.at("hidden").as_int(1, 1 << 20);
        const std::string dir = node.get("direction") ? node.at("direction").as_choice({"forward", "reverse", "bidirectional"})
                                                      : std::string("forward");
        layer.directions = dir == "bidirectional" ? 2 : 1;
        layer.reverse = dir == "reverse";
        if (op == OpKind::kGru) layer.linear_before_reset = node.bool_or("linear_before_reset", true);
        if (op == OpKind::kLstm) layer.peepholes = node.bool_or("peepholes", false);
        if (auto w = node.get("weight_dtype")) layer.weight_dtype = dtype_of(*w);
        break;
      }
      case OpKind::kGlobalAvgPool:
      case OpKind::kGlobalMaxPool:
        need_rank(x, 3, "[H, W, C]");
        layer.keepdims = node.bool_or("keepdims", false);
        break;
      case OpKind::kConcat:
      case OpKind::kSoftmax:
      case OpKind::kLayerNorm:
        layer.axis = node.int_or("axis", -1, -16, 15);
        break;
      case OpKind::kReduceMean:
      case OpKind::kReduceSum:
      case OpKind::kReduceMax:
        if (auto a = node.get("axes")) layer.axes = a->as_int_list(-16, 15);
        layer.keepdims = node.bool_or("keepdims", true);
        break;
      case OpKind::kResize: {
        layer.mode = node.get("mode") ? node.at("mode").as_choice({"nearest", "linear", "cubic"}) : std::string("nearest");
        if (node.has("size") == node.has("scale")) node.fail("layer '" + name + "': resize needs exactly one of size and scale");
        if (auto s = node.get("size")) {
          layer.target_shape = s->as_int_list(1, 1 << 24);
        } else {
          const auto scale = node.at("scale").as_int_list(1, 1 << 12);
          if (scale.size() != x.shape.size()) node.at("scale").fail("one integer scale per axis of " + shape_text(x.shape));
          for (size_t i = 0; i < scale.size(); ++i) layer.target_shape.push_back(x.shape[i] * scale[i]);
        }
        break;
      }
      case OpKind::kPad:
        layer.pads = node.at("pads").as_int_list(0, 1 << 20);
        layer.mode = node.get("mode") ? node.at("mode").as_choice({"constant", "edge", "reflect"}) : std::string("constant");
        break;
      case OpKind::kTranspose:
        layer.perm = node.at("perm").as_int_list(0, 15);
        break;
      case OpKind::kReshape:
      case OpKind::kExpand:
        layer.target_shape = node.at("shape").as_int_list(-1, 1 << 24);
        break;
      case OpKind::kSlice:
        layer.axis = node.at("axis").as_int(-16, 15);
        layer.slice_begin = node.int_or("begin", 0);
        layer.slice_end = node.int_or("end", INT64_MAX);
        layer.slice_step = node.int_or("step", 1);
        break;
      default:
        break;
    }
    if (op == OpKind::kFc || op == OpKind::kConv2d || op == OpKind::kConvTranspose2d || op == OpKind::kMatmul) {
      if (auto a = node.get("activation")) {
        const std::string act = a->as_choice({"none", "relu", "relu6", "sigmoid", "tanh"});
        layer.activation = act == "relu"      ? Activation::kRelu
                           : act == "relu6"   ? Activation::kRelu6
                           : act == "sigmoid" ? Activation::kSigmoid
                           : act == "tanh"    ? Activation::kTanh
                                              : Activation::kNone;
      }
      if (auto w = node.get("weight_dtype")) layer.weight_dtype = dtype_of(*w);
    }
    Shape out;
    try {
      out = infer_layer(g, layer);
    } catch (const ShapeError& e) {
      node.fail("layer '" + name + "': " + e.what());
    }
    const int layer_index = static_cast<int>(g.layers.size());
    layer.output = add_tensor(node, name, out, out_dtype, layer_index);
    previous = layer.output;
    g.layers.push_back(std::move(layer));
  }

  if (auto outs = root.get("outputs")) {
    for (const auto& o : outs->elements()) {
      const int id = find(o.as_string());
      if (id < 0 || g.tensors[id].producer < 0) o.fail("unknown output '" + o.as_string() + "' (must name a layer)");
      g.outputs.push_back(id);
    }
  } else {
    g.outputs.push_back(previous);
  }
  return g;
}

Graph load_graph_yaml(const std::filesystem::path& path) {
  return parse_graph_yaml(YamlNode::load_file(path));
}

}  // namespace tessera::graph
