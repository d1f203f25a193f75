#include "sim/graph/graph.h"

#include <algorithm>

#include "sim/graph/ops/registry.h"

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

// Op facts live in the op registry (sim/graph/ops/): one OpDef per op.
std::string_view op_name(OpKind op) {
  const auto i = static_cast<int>(op);
  if (i < 0 || i >= static_cast<int>(OpKind::kOpCount)) return "?";
  return op_def(op).name;
}
bool is_matrix_op(OpKind op) { return op_def(op).cls == OpClass::kMatrix; }
bool is_layout_op(OpKind op) { return op_def(op).cls == OpClass::kAlias; }
bool is_elementwise_op(OpKind op) { return op_def(op).elementwise; }

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

std::vector<std::optional<Dtype>> model_quantization(const Graph& g) {
  std::vector<std::optional<Dtype>> q(g.tensors.size());
  for (size_t t = 0; t < g.tensors.size(); ++t) q[t] = g.tensors[t].quantized;
  for (const Layer& l : g.layers) {  // topological order: inputs are settled first
    auto& out = q[static_cast<size_t>(l.output)];
    if (out) continue;
    const OpDef& def = op_def(l.op);
    if (def.quantizes) {
      out = l.quant_dtype;
    } else if (def.copies_codes && !l.inputs.empty()) {
      std::optional<Dtype> common = q[static_cast<size_t>(l.inputs[0])];
      for (int in : l.inputs) {
        if (q[static_cast<size_t>(in)] != common) common.reset();
      }
      out = common;
    }
  }
  return q;
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

Shape infer_layer(const Graph& g, Layer& L) {
  const OpDef& def = op_def(L.op);
  if (L.inputs.empty()) throw ShapeError("op " + std::string(def.name) + " needs an input");
  L.gemm_m_per_sample = L.gemm_k = L.gemm_n = 0;
  L.gemm_groups = 1;
  Shape out = def.infer(g, L);
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

}  // namespace tessera::graph
