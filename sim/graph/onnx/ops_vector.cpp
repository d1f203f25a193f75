// Handlers of vector-unit ops: activations (fused into the matrix layer before them when
// possible), element-wise ops, normalisation, softmax and reductions.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/graph/onnx/ops.h"
#include "sim/graph/onnx/shape_inference.h"

namespace tessera::graph::onnx_import {

void VectorOps::op_batchnorm(const Node& n) {
  Value& x = m_.val(n, 0);
  for (int i = 1; i < n.output_size(); ++i) {
    if (!n.output(i).empty() && (m_.consumers_.count(n.output(i)) || m_.graph_outputs_.count(n.output(i)))) {
      throw Unsupported{"training-mode outputs (running mean/variance)"};
    }
  }
  Value& o = m_.out(n);
  o.shape = x.shape;
  if (m_.fusable(n.input(0))) {
    Layer* p = m_.producer_layer(x);
    if (p && p->activation == Activation::kNone && p->op != OpKind::kMatmul) {
      // Folded into the conv's weights and bias: no layer of its own.
      return m_.absorb_into_producer(n, x, o, "batchnorm folded");
    }
  }
  op_unary(n, OpKind::kBatchNorm);
}

// `l` (the op and its attributes) on input 0, in its preferred layout: the output has its
// shape. An op along an axis (softmax, layer_norm) gives it as an ONNX axis of input 0.
void VectorOps::op_elementwise(const Node& n, Layer l, std::optional<int64_t> onnx_axis) {
  Value& x = m_.val(n, 0);
  const Layout layout = m_.preferred_layout(x);
  l.inputs = {m_.tensor_in(x, layout, n)};
  if (onnx_axis) l.axis = m_.ir_axis(x, *onnx_axis, n);
  Value& o = m_.out(n);
  o.shape = x.shape;
  m_.add_output(n, o, l, layout);
}

void VectorOps::op_unary(const Node& n, OpKind kind) {
  Layer l;
  l.op = kind;
  op_elementwise(n, l);
}

void VectorOps::op_with_scalar(const Node& n, OpKind kind, float value, bool const_first) {
  Layer l;
  l.op = kind;
  l.has_const = true;
  l.const_shape = {1};
  l.const_values = {value};
  l.const_first = const_first;
  op_elementwise(n, l);
}

void VectorOps::op_activation(const Node& n, OpKind kind) {
  Value& x = m_.val(n, 0);
  Activation act = Activation::kNone;
  Layer clip;
  clip.op = OpKind::kClip;
  if (kind == OpKind::kRelu) act = Activation::kRelu;
  if (kind == OpKind::kSigmoid) act = Activation::kSigmoid;
  if (kind == OpKind::kTanh) act = Activation::kTanh;
  if (kind == OpKind::kClip) {
    std::optional<double> lo, hi;
    if (m_.opset_ < 11) {
      if (m_.has_attr(n, "min")) lo = m_.attr_f(n, "min", 0);
      if (m_.has_attr(n, "max")) hi = m_.attr_f(n, "max", 0);
    } else {
      if ((m_.has_input(n, 1) && !m_.val(n, 1).constant) || (m_.has_input(n, 2) && !m_.val(n, 2).constant)) {
        return op_clip_runtime(n);
      }
      auto bound = [&](int i, const char* what) -> std::optional<double> {
        if (!m_.has_input(n, i)) return std::nullopt;
        const std::vector<double> v = m_.const_floats(n, i, what);
        if (v.size() != 1) m_.fail_node(n, std::string(what) + " must be a scalar, got " + std::to_string(v.size()) + " values");
        return v[0];
      };
      lo = bound(1, "min"), hi = bound(2, "max");
    }
    if (lo && *lo == 0 && hi && *hi == 6) act = Activation::kRelu6;
    else if (lo && *lo == 0 && !hi) act = Activation::kRelu;
    // Bounds past fp32's range are no bounds (+-FLT_MAX, infinities).
    auto to_float = [](double v, float none) {
      return std::isnan(v) || std::fabs(v) >= std::numeric_limits<float>::max() ? none : static_cast<float>(v);
    };
    if (lo) clip.clip_min = to_float(*lo, -std::numeric_limits<float>::infinity());
    if (hi) clip.clip_max = to_float(*hi, std::numeric_limits<float>::infinity());
  }
  Value& o = m_.out(n);
  o.shape = x.shape;
  if (act != Activation::kNone && m_.fusable(n.input(0))) {
    Layer* p = m_.producer_layer(x);
    if (p && p->activation == Activation::kNone) {
      p->activation = act;  // the activate instruction applies it on the way out of the accumulators
      return m_.absorb_into_producer(n, x, o, "fused");
    }
  }
  if (kind == OpKind::kClip) return op_elementwise(n, clip);
  op_unary(n, kind);
}

void VectorOps::op_binary(const Node& n, OpKind kind) {
  std::vector<Value*> acts, consts;
  SymShape shape;
  bool first = true;
  for (int i = 0; i < n.input_size(); ++i) {
    Value& v = m_.val(n, i);
    (v.constant ? consts : acts).push_back(&v);
    try {
      shape = first ? v.shape : broadcast_sym(shape, v.shape);
    } catch (const ShapeError& e) {
      m_.fail_node(n, e.what());
    }
    first = false;
  }
  const int ob = m_.batch_axis(shape, &n);
  // A rank-0 activation is one value per sample (a reduction over every axis at batch 1):
  // it broadcasts against anything.
  if (ob < 0 && !shape.empty()) throw Unsupported{"result " + sym_shape_text(shape) + " has no batch dimension"};
  const size_t r = shape.size();
  for (Value* a : acts) {
    if (a->shape.empty()) continue;
    const int ba = m_.batch_axis(a->shape, &n);
    if (ba + static_cast<int>(r - a->shape.size()) != ob || !(a->shape[static_cast<size_t>(ba)] == shape[static_cast<size_t>(ob)])) {
      throw Unsupported{"broadcasts the batch of " + sym_shape_text(a->shape) + " against another dimension of " +
                        sym_shape_text(shape)};
    }
  }
  Value& o = m_.out(n);
  o.shape = shape;
  // Layout: follow the first activation when every activation can.
  Layout layout = m_.preferred_layout(*acts.front());
  if (!m_.can_channels_last(shape)) layout = Layout::kNatural;
  for (Value* a : acts) {
    if (a->shape.size() != r) layout = Layout::kNatural;
  }
  // The constants' per-sample shape in the output's IR order.
  Shape cshape;
  if (shape.empty()) cshape = {1};  // scalars
  for (Value* c : consts) {
    if (shape.empty()) break;
    SymShape full(r - c->shape.size(), Sym{1, 0});
    full.insert(full.end(), c->shape.begin(), c->shape.end());
    if (!(is_one(full[static_cast<size_t>(ob)]) || full[static_cast<size_t>(ob)] == shape[static_cast<size_t>(ob)])) {
      throw Unsupported{"a constant of shape " + sym_shape_text(c->shape) + " varies along the batch"};
    }
    full[static_cast<size_t>(ob)] = shape[static_cast<size_t>(ob)];
    for (Sym& d : full) d.p = 0;
    full[static_cast<size_t>(ob)] = Sym{full[static_cast<size_t>(ob)].v, 1};
    // Dims equal to 1 stay 1; per_sample/ir_shape drop the batch axis.
    Shape ps = m_.ir_shape(full, layout);
    cshape = cshape.empty() ? ps : broadcast_shapes(cshape, ps);
  }
  // A bias add or a scale right after a matrix layer is free: the activate applies it.
  if (acts.size() == 1 && !consts.empty() && m_.fusable(n.input(acts.front() == &m_.val(n, 0) ? 0 : 1)) &&
      acts.front()->shape == shape) {
    Layer* p = m_.producer_layer(*acts.front());
    const Shape& ps = m_.g_.tensors[static_cast<size_t>(acts.front()->tensor)].shape;
    bool per_channel = !cshape.empty();
    for (size_t i = 0; i + 1 < cshape.size(); ++i) per_channel = per_channel && cshape[i] == 1;
    const bool scalar = shape_elements(cshape) == 1;
    const bool bias = (kind == OpKind::kAdd || kind == OpKind::kSub) && per_channel &&
                      (cshape.back() == 1 || cshape.back() == ps.back()) && acts.front()->layout == layout;
    const bool scale = (kind == OpKind::kMul || kind == OpKind::kDiv) && scalar;
    if (p && p->activation == Activation::kNone && (bias || scale)) {
      Value& a = *acts.front();
      const std::vector<float> cv = constant_values(*consts.front());
      const bool divides_x = kind == OpKind::kMul || acts.front() == &m_.val(n, 0);  // x / c, not c / x
      if (scale && divides_x && cv.size() == 1 && cv[0] != 0) p->output_multiplier *= kind == OpKind::kMul ? cv[0] : 1.0 / cv[0];
      return m_.absorb_into_producer(n, a, o, "fused");
    }
  }
  Layer l;
  l.op = kind;
  for (Value* a : acts) l.inputs.push_back(m_.tensor_in(*a, layout, n));
  if (!consts.empty()) {
    l.has_const = true;
    l.const_shape = cshape;
    // Values in the IR's order: only when no axis moved (channels-last keeps a
    // per-channel or scalar constant's order too) and there is one constant.
    if (consts.size() == 1 && (layout == Layout::kNatural || shape_elements(cshape) == cshape.back())) {
      l.const_values = constant_values(*consts.front());
      if (static_cast<int64_t>(l.const_values.size()) != shape_elements(cshape)) l.const_values.clear();
    }
    l.const_first = consts.front() == &m_.val(n, 0);
    if (kind == OpKind::kWhere && consts.size() == 1) {
      for (int i = 0; i < n.input_size(); ++i) {
        if (&m_.val(n, i) == consts.front()) l.const_index = i;
      }
    }
  }
  m_.add_output(n, o, l, layout);
}

void VectorOps::op_variadic(const Node& n, OpKind kind) {
  if (n.input_size() == 2) return op_binary(n, kind);
  if (n.input_size() == 1) {
    Value& x = m_.val(n, 0);
    Value& o = m_.out(n);
    o.shape = x.shape;
    return m_.alias(n, x, o);
  }
  // ((a op b) op c) ...: constants first, so they fold together.
  std::vector<std::string> ins(n.input().begin(), n.input().end());
  std::stable_partition(ins.begin(), ins.end(), [&](const std::string& v) { return m_.values_.at(v).constant; });
  std::string acc = ins[0];
  for (size_t i = 1; i < ins.size(); ++i) {
    const bool last = i + 1 == ins.size();
    const std::string name = last ? n.output(0) : n.output(0) + "/" + std::to_string(i);
    m_.synthetic(n, n.op_type(), {acc, ins[i]}, name, last ? "" : "/" + std::to_string(i));
    acc = name;
  }
}

// Clip(x, min, max) whose bounds are activations: max(x, min), then min(that, max).
void VectorOps::op_clip_runtime(const Node& n) {
  const bool lo = m_.has_input(n, 1), hi = m_.has_input(n, 2);
  const std::string mid = lo && hi ? n.output(0) + "/max" : n.output(0);
  if (lo) m_.synthetic(n, "Max", {n.input(0), n.input(1)}, mid, "/max");
  if (hi) m_.synthetic(n, "Min", {lo ? mid : n.input(0), n.input(2)}, n.output(0), "/min");
}

void VectorOps::op_softmax(const Node& n) {
  Layer l;
  l.op = OpKind::kSoftmax;
  op_elementwise(n, l, m_.attr_i(n, "axis", m_.opset_ < 13 ? 1 : -1));
}

void VectorOps::op_layernorm(const Node& n) {
  Value& x = m_.val(n, 0);
  const int64_t axis_attr = m_.attr_i(n, "axis", -1);
  const int64_t axis = norm_axis(axis_attr, x.shape.size(), "axis");
  // Mean and InvStdDev (training / test models): the statistics pass, as its own reduction.
  for (int i = 1; i < n.output_size() && i < 3; ++i) {
    const std::string& name = n.output(i);
    if (name.empty() || !(m_.consumers_.count(name) || m_.graph_outputs_.count(name))) continue;
    Value& o = m_.values_[name];
    o.shape = x.shape;
    for (size_t a = static_cast<size_t>(axis); a < x.shape.size(); ++a) {
      if (x.shape[a].p) throw Unsupported{"normalises over the batch dimension"};
      o.shape[a] = {1, 0};
    }
    Layer r;
    r.op = OpKind::kReduceMean;
    r.keepdims = true;
    r.inputs = {m_.tensor_in(x, Layout::kNatural, n)};
    Value view = x;
    view.layout = Layout::kNatural;
    for (size_t a = static_cast<size_t>(axis); a < x.shape.size(); ++a) r.axes.push_back(m_.ir_axis(view, static_cast<int64_t>(a), n));
    const int y = m_.add_layer(n, r, name, m_.per_sample(o.shape), i == 1 ? "/mean" : "/inv_std_dev");
    m_.set_activation(o, y, Layout::kNatural);
  }
  Layer l;
  l.op = OpKind::kLayerNorm;
  op_elementwise(n, l, axis_attr);
}

void VectorOps::op_reduce(const Node& n, OpKind kind) {
  Value& x = m_.val(n, 0);
  std::vector<int64_t> axes = NodeShapes(m_).reduce_axes(n);
  const bool keep = m_.attr_i(n, "keepdims", 1) != 0;
  if (axes.empty() && m_.attr_i(n, "noop_with_empty_axes", 0)) {
    Value& o = m_.out(n);
    o.shape = x.shape;
    return m_.alias(n, x, o);
  }
  if (axes.empty()) {
    // Every axis, the batch included: at batch 1, every axis of the one sample (each
    // sample's own reduction when the compiled batch is larger).
    if (m_.batch_ != 1) {
      throw Unsupported{"reduces over every axis, the batch included, at batch " + std::to_string(m_.batch_) +
                        " (imported at batch 1, each sample is reduced)"};
    }
    Value& o = m_.out(n);
    if (keep) {
      o.shape.clear();
      for (Sym d : x.shape) o.shape.push_back(d.p ? Sym{1, 1} : Sym{1, 0});
    } else {
      o.shape = {};
    }
    const Layout layout = keep ? m_.preferred_layout(x) : Layout::kNatural;
    Layer l;
    l.op = kind;
    l.keepdims = keep;
    l.inputs = {m_.tensor_in(x, layout, n)};
    return m_.add_output(n, o, l, layout);
  }
  axes = norm_axes(axes, x.shape.size(), "axis");
  Value& o = m_.out(n);
  o.shape = reduce_shape(x.shape, axes, keep);
  Layout layout = m_.preferred_layout(x);
  if (!keep) layout = Layout::kNatural;
  Layer l;
  l.op = kind;
  l.keepdims = keep;
  l.inputs = {m_.tensor_in(x, layout, n)};
  Value view = x;
  view.layout = layout;
  for (int64_t a : axes) l.axes.push_back(m_.ir_axis(view, a, n));
  m_.add_output(n, o, l, layout);
}

}  // namespace tessera::graph::onnx_import

namespace tessera::graph::onnx_import {

// CumSum(x, axis): the running sum along one axis (exclusive, reverse).
void VectorOps::op_cumsum(const Node& n) {
  const std::vector<int64_t> axis = m_.const_ints(n, 1, "axis");
  if (axis.size() != 1) m_.fail_node(n, "axis must be a scalar, got " + std::to_string(axis.size()) + " values");
  Layer l;
  l.op = OpKind::kCumSum;
  l.exclusive = m_.attr_i(n, "exclusive", 0) != 0;
  l.reverse = m_.attr_i(n, "reverse", 0) != 0;
  op_elementwise(n, l, axis[0]);
}

// ArgMax / ArgMin: the position along one axis (keepdims, select_last_index).
void VectorOps::op_arg(const Node& n, OpKind kind) {
  Value& x = m_.val(n, 0);
  const bool keep = m_.attr_i(n, "keepdims", 1) != 0;
  const int64_t axis = norm_axis(m_.attr_i(n, "axis", 0), x.shape.size(), "axis");
  Value& o = m_.out(n);
  o.shape = reduce_shape(x.shape, {axis}, keep);
  const Layout layout = keep ? m_.preferred_layout(x) : Layout::kNatural;
  Layer l;
  l.op = kind;
  l.keepdims = keep;
  l.select_last = m_.attr_i(n, "select_last_index", 0) != 0;
  l.inputs = {m_.tensor_in(x, layout, n)};
  Value view = x;
  view.layout = layout;
  l.axis = m_.ir_axis(view, axis, n);
  m_.add_output(n, o, l, layout);
}

// TopK(x, k) -> values, indices: one topk layer per output that is used (the indices are
// a second pass).
void VectorOps::op_topk(const Node& n) {
  Value& x = m_.val(n, 0);
  int64_t k = 0;
  if (m_.opset_ < 10) {
    k = m_.attr_i(n, "k", -1);
  } else {
    const std::vector<int64_t> kv = m_.const_ints(n, 1, "k");
    if (kv.size() != 1) m_.fail_node(n, "k must hold one value, got " + std::to_string(kv.size()));
    k = kv[0];
  }
  const int64_t axis = norm_axis(m_.attr_i(n, "axis", -1), x.shape.size(), "axis");
  const Sym dim = x.shape[static_cast<size_t>(axis)];
  if (dim.p) throw Unsupported{"TopK along the batch dimension"};
  if (k < 1 || k > dim.v) {
    m_.fail_node(n, "k = " + std::to_string(k) + " must be in [1, " + std::to_string(dim.v) + "] (axis " + std::to_string(axis) + ")");
  }
  SymShape shape = x.shape;
  shape[static_cast<size_t>(axis)] = {k, 0};
  const Layout layout = m_.preferred_layout(x);
  Layer l;
  l.op = OpKind::kTopK;
  l.k = k;
  l.largest = m_.attr_i(n, "largest", 1) != 0;
  l.inputs = {m_.tensor_in(x, layout, n)};
  Value view = x;
  view.layout = layout;
  l.axis = m_.ir_axis(view, axis, n);
  bool any = false;
  for (int i = 0; i < std::min(n.output_size(), 2); ++i) {
    const std::string& name = n.output(i);
    if (name.empty()) continue;
    Value& o = m_.out(n, i);
    o.shape = shape;
    const bool used = m_.consumers_.count(name) || m_.graph_outputs_.count(name);
    if (!used && (i == 1 || any)) {
      o.poisoned = true;
      continue;
    }
    l.indices = i == 1;
    const int y = m_.add_layer(n, l, name, m_.ir_shape(shape, layout), i == 1 && any ? "/indices" : "");
    m_.set_activation(o, y, layout);
    any = true;
  }
}

// Tile(x, repeats): the batch axis must stay as it is.
void VectorOps::op_tile(const Node& n) {
  Value& x = m_.val(n, 0);
  const std::vector<int64_t> reps = m_.const_ints(n, 1, "repeats");
  if (reps.size() != x.shape.size()) {
    m_.fail_node(n, "repeats has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(x.shape.size()));
  }
  Value& o = m_.out(n);
  o.shape = x.shape;
  const int ba = m_.batch_axis(x.shape, &n);
  std::vector<int64_t> ir_reps;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 1) m_.fail_node(n, "repeats must be >= 1, got " + shape_text(reps));
    if (static_cast<int>(i) == ba) {
      if (reps[i] != 1) throw Unsupported{"Tile repeats the batch dimension"};
      if (x.shape[i].v == 1) continue;  // the IR drops a pure batch axis
    }
    o.shape[i].v = mul64(o.shape[i].v, reps[i]);
    ir_reps.push_back(reps[i]);
  }
  if (o.shape == x.shape) return m_.alias(n, x, o);
  Layer l;
  l.op = OpKind::kTile;
  l.inputs = {m_.tensor_in(x, Layout::kNatural, n)};
  l.repeats = ir_reps;
  m_.add_output(n, o, l, Layout::kNatural);
}

}  // namespace tessera::graph::onnx_import
