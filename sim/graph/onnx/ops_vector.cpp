// Handlers of vector-unit ops: activations (fused into the matrix layer before them when
// possible), element-wise ops, normalisation, softmax and reductions.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

void Importer::op_batchnorm(const Node& n) {
  Value& x = val(n, 0);
  for (int i = 1; i < n.output_size(); ++i) {
    if (!n.output(i).empty() && (consumers_.count(n.output(i)) || graph_outputs_.count(n.output(i)))) {
      throw Unsupported{"training-mode outputs (running mean/variance)"};
    }
  }
  Value& o = out(n);
  o.shape = x.shape;
  if (fusable(n.input(0))) {
    Layer* p = producer_layer(x);
    if (p && p->activation == Activation::kNone && p->op != OpKind::kMatmul) {
      // Folded into the conv's weights and bias: no layer of its own.
      return absorb_into_producer(n, x, o, "batchnorm folded");
    }
  }
  op_unary(n, OpKind::kBatchNorm);
}

// `l` (the op and its attributes) on input 0, in its preferred layout: the output has its
// shape. An op along an axis (softmax, layer_norm) gives it as an ONNX axis of input 0.
void Importer::op_elementwise(const Node& n, Layer l, std::optional<int64_t> onnx_axis) {
  Value& x = val(n, 0);
  const Layout layout = preferred_layout(x);
  l.inputs = {tensor_in(x, layout, n)};
  if (onnx_axis) l.axis = ir_axis(x, *onnx_axis, n);
  Value& o = out(n);
  o.shape = x.shape;
  add_output(n, o, l, layout);
}

void Importer::op_unary(const Node& n, OpKind kind) {
  Layer l;
  l.op = kind;
  op_elementwise(n, l);
}

void Importer::op_with_scalar(const Node& n, OpKind kind, float value, bool const_first) {
  Layer l;
  l.op = kind;
  l.has_const = true;
  l.const_shape = {1};
  l.const_values = {value};
  l.const_first = const_first;
  op_elementwise(n, l);
}

void Importer::op_activation(const Node& n, OpKind kind) {
  Value& x = val(n, 0);
  Activation act = Activation::kNone;
  Layer clip;
  clip.op = OpKind::kClip;
  if (kind == OpKind::kRelu) act = Activation::kRelu;
  if (kind == OpKind::kSigmoid) act = Activation::kSigmoid;
  if (kind == OpKind::kTanh) act = Activation::kTanh;
  if (kind == OpKind::kClip) {
    std::optional<double> lo, hi;
    if (opset_ < 11) {
      if (has_attr(n, "min")) lo = attr_f(n, "min", 0);
      if (has_attr(n, "max")) hi = attr_f(n, "max", 0);
    } else {
      if ((has_input(n, 1) && !val(n, 1).constant) || (has_input(n, 2) && !val(n, 2).constant)) {
        return op_clip_runtime(n);
      }
      auto bound = [&](int i, const char* what) -> std::optional<double> {
        if (!has_input(n, i)) return std::nullopt;
        const std::vector<double> v = const_floats(n, i, what);
        if (v.size() != 1) fail_node(n, std::string(what) + " must be a scalar, got " + std::to_string(v.size()) + " values");
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
  Value& o = out(n);
  o.shape = x.shape;
  if (act != Activation::kNone && fusable(n.input(0))) {
    Layer* p = producer_layer(x);
    if (p && p->activation == Activation::kNone) {
      p->activation = act;  // the activate instruction applies it on the way out of the accumulators
      return absorb_into_producer(n, x, o, "fused");
    }
  }
  if (kind == OpKind::kClip) return op_elementwise(n, clip);
  op_unary(n, kind);
}

void Importer::op_binary(const Node& n, OpKind kind) {
  std::vector<Value*> acts, consts;
  SymShape shape;
  bool first = true;
  for (int i = 0; i < n.input_size(); ++i) {
    Value& v = val(n, i);
    (v.constant ? consts : acts).push_back(&v);
    try {
      shape = first ? v.shape : broadcast_sym(shape, v.shape);
    } catch (const ShapeError& e) {
      fail_node(n, e.what());
    }
    first = false;
  }
  const int ob = batch_axis(shape, &n);
  // A rank-0 activation is one value per sample (a reduction over every axis at batch 1):
  // it broadcasts against anything.
  if (ob < 0 && !shape.empty()) throw Unsupported{"result " + sym_shape_text(shape) + " has no batch dimension"};
  const size_t r = shape.size();
  for (Value* a : acts) {
    if (a->shape.empty()) continue;
    const int ba = batch_axis(a->shape, &n);
    if (ba + static_cast<int>(r - a->shape.size()) != ob || !(a->shape[static_cast<size_t>(ba)] == shape[static_cast<size_t>(ob)])) {
      throw Unsupported{"broadcasts the batch of " + sym_shape_text(a->shape) + " against another dimension of " +
                        sym_shape_text(shape)};
    }
  }
  Value& o = out(n);
  o.shape = shape;
  // Layout: follow the first activation when every activation can.
  Layout layout = preferred_layout(*acts.front());
  if (!can_channels_last(shape)) layout = Layout::kNatural;
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
    Shape ps = ir_shape(full, layout);
    cshape = cshape.empty() ? ps : broadcast_shapes(cshape, ps);
  }
  // A bias add or a scale right after a matrix layer is free: the activate applies it.
  if (acts.size() == 1 && !consts.empty() && fusable(n.input(acts.front() == &val(n, 0) ? 0 : 1)) &&
      acts.front()->shape == shape) {
    Layer* p = producer_layer(*acts.front());
    const Shape& ps = g_.tensors[static_cast<size_t>(acts.front()->tensor)].shape;
    bool per_channel = !cshape.empty();
    for (size_t i = 0; i + 1 < cshape.size(); ++i) per_channel = per_channel && cshape[i] == 1;
    const bool scalar = shape_elements(cshape) == 1;
    const bool bias = (kind == OpKind::kAdd || kind == OpKind::kSub) && per_channel &&
                      (cshape.back() == 1 || cshape.back() == ps.back()) && acts.front()->layout == layout;
    const bool scale = (kind == OpKind::kMul || kind == OpKind::kDiv) && scalar;
    if (p && p->activation == Activation::kNone && (bias || scale)) {
      Value& a = *acts.front();
      const std::vector<float> cv = constant_values(*consts.front());
      const bool divides_x = kind == OpKind::kMul || acts.front() == &val(n, 0);  // x / c, not c / x
      if (scale && divides_x && cv.size() == 1 && cv[0] != 0) p->output_multiplier *= kind == OpKind::kMul ? cv[0] : 1.0 / cv[0];
      return absorb_into_producer(n, a, o, "fused");
    }
  }
  Layer l;
  l.op = kind;
  for (Value* a : acts) l.inputs.push_back(tensor_in(*a, layout, n));
  if (!consts.empty()) {
    l.has_const = true;
    l.const_shape = cshape;
    // Values in the IR's order: only when no axis moved (channels-last keeps a
    // per-channel or scalar constant's order too) and there is one constant.
    if (consts.size() == 1 && (layout == Layout::kNatural || shape_elements(cshape) == cshape.back())) {
      l.const_values = constant_values(*consts.front());
      if (static_cast<int64_t>(l.const_values.size()) != shape_elements(cshape)) l.const_values.clear();
    }
    l.const_first = consts.front() == &val(n, 0);
    if (kind == OpKind::kWhere && consts.size() == 1) {
      for (int i = 0; i < n.input_size(); ++i) {
        if (&val(n, i) == consts.front()) l.const_index = i;
      }
    }
  }
  add_output(n, o, l, layout);
}

void Importer::op_variadic(const Node& n, OpKind kind) {
  if (n.input_size() == 2) return op_binary(n, kind);
  if (n.input_size() == 1) {
    Value& x = val(n, 0);
    Value& o = out(n);
    o.shape = x.shape;
    return alias(n, x, o);
  }
  // ((a op b) op c) ...: constants first, so they fold together.
  std::vector<std::string> ins(n.input().begin(), n.input().end());
  std::stable_partition(ins.begin(), ins.end(), [&](const std::string& v) { return values_.at(v).constant; });
  std::string acc = ins[0];
  for (size_t i = 1; i < ins.size(); ++i) {
    const bool last = i + 1 == ins.size();
    const std::string name = last ? n.output(0) : n.output(0) + "/" + std::to_string(i);
    synthetic(n, n.op_type(), {acc, ins[i]}, name, last ? "" : "/" + std::to_string(i));
    acc = name;
  }
}

// Clip(x, min, max) whose bounds are activations: max(x, min), then min(that, max).
void Importer::op_clip_runtime(const Node& n) {
  const bool lo = has_input(n, 1), hi = has_input(n, 2);
  const std::string mid = lo && hi ? n.output(0) + "/max" : n.output(0);
  if (lo) synthetic(n, "Max", {n.input(0), n.input(1)}, mid, "/max");
  if (hi) synthetic(n, "Min", {lo ? mid : n.input(0), n.input(2)}, n.output(0), "/min");
}

void Importer::op_softmax(const Node& n) {
  Layer l;
  l.op = OpKind::kSoftmax;
  op_elementwise(n, l, attr_i(n, "axis", opset_ < 13 ? 1 : -1));
}

void Importer::op_layernorm(const Node& n) {
  Value& x = val(n, 0);
  const int64_t axis_attr = attr_i(n, "axis", -1);
  const int64_t axis = norm_axis(axis_attr, x.shape.size(), "axis");
  // Mean and InvStdDev (training / test models): the statistics pass, as its own reduction.
  for (int i = 1; i < n.output_size() && i < 3; ++i) {
    const std::string& name = n.output(i);
    if (name.empty() || !(consumers_.count(name) || graph_outputs_.count(name))) continue;
    Value& o = values_[name];
    o.shape = x.shape;
    for (size_t a = static_cast<size_t>(axis); a < x.shape.size(); ++a) {
      if (x.shape[a].p) throw Unsupported{"normalises over the batch dimension"};
      o.shape[a] = {1, 0};
    }
    Layer r;
    r.op = OpKind::kReduceMean;
    r.keepdims = true;
    r.inputs = {tensor_in(x, Layout::kNatural, n)};
    Value view = x;
    view.layout = Layout::kNatural;
    for (size_t a = static_cast<size_t>(axis); a < x.shape.size(); ++a) r.axes.push_back(ir_axis(view, static_cast<int64_t>(a), n));
    const int y = add_layer(n, r, name, per_sample(o.shape), i == 1 ? "/mean" : "/inv_std_dev");
    set_activation(o, y, Layout::kNatural);
  }
  Layer l;
  l.op = OpKind::kLayerNorm;
  op_elementwise(n, l, axis_attr);
}

void Importer::op_reduce(const Node& n, OpKind kind) {
  Value& x = val(n, 0);
  std::vector<int64_t> axes = reduce_axes(n);
  const bool keep = attr_i(n, "keepdims", 1) != 0;
  if (axes.empty() && attr_i(n, "noop_with_empty_axes", 0)) {
    Value& o = out(n);
    o.shape = x.shape;
    return alias(n, x, o);
  }
  if (axes.empty()) {
    // Every axis, the batch included: at batch 1, every axis of the one sample (each
    // sample's own reduction when the compiled batch is larger).
    if (batch_ != 1) {
      throw Unsupported{"reduces over every axis, the batch included, at batch " + std::to_string(batch_) +
                        " (imported at batch 1, each sample is reduced)"};
    }
    Value& o = out(n);
    if (keep) {
      o.shape.clear();
      for (Sym d : x.shape) o.shape.push_back(d.p ? Sym{1, 1} : Sym{1, 0});
    } else {
      o.shape = {};
    }
    const Layout layout = keep ? preferred_layout(x) : Layout::kNatural;
    Layer l;
    l.op = kind;
    l.keepdims = keep;
    l.inputs = {tensor_in(x, layout, n)};
    return add_output(n, o, l, layout);
  }
  axes = norm_axes(axes, x.shape.size(), "axis");
  Value& o = out(n);
  o.shape = reduce_shape(x.shape, axes, keep);
  Layout layout = preferred_layout(x);
  if (!keep) layout = Layout::kNatural;
  Layer l;
  l.op = kind;
  l.keepdims = keep;
  l.inputs = {tensor_in(x, layout, n)};
  Value view = x;
  view.layout = layout;
  for (int64_t a : axes) l.axes.push_back(ir_axis(view, a, n));
  add_output(n, o, l, layout);
}

}  // namespace tessera::graph::onnx_import

namespace tessera::graph::onnx_import {

// CumSum(x, axis): the running sum along one axis (exclusive, reverse).
void Importer::op_cumsum(const Node& n) {
  const std::vector<int64_t> axis = const_ints(n, 1, "axis");
  if (axis.size() != 1) fail_node(n, "axis must be a scalar, got " + std::to_string(axis.size()) + " values");
  Layer l;
  l.op = OpKind::kCumSum;
  l.exclusive = attr_i(n, "exclusive", 0) != 0;
  l.reverse = attr_i(n, "reverse", 0) != 0;
  op_elementwise(n, l, axis[0]);
}

// ArgMax / ArgMin: the position along one axis (keepdims, select_last_index).
void Importer::op_arg(const Node& n, OpKind kind) {
  Value& x = val(n, 0);
  const bool keep = attr_i(n, "keepdims", 1) != 0;
  const int64_t axis = norm_axis(attr_i(n, "axis", 0), x.shape.size(), "axis");
  Value& o = out(n);
  o.shape = reduce_shape(x.shape, {axis}, keep);
  const Layout layout = keep ? preferred_layout(x) : Layout::kNatural;
  Layer l;
  l.op = kind;
  l.keepdims = keep;
  l.select_last = attr_i(n, "select_last_index", 0) != 0;
  l.inputs = {tensor_in(x, layout, n)};
  Value view = x;
  view.layout = layout;
  l.axis = ir_axis(view, axis, n);
  add_output(n, o, l, layout);
}

// TopK(x, k) -> values, indices: one topk layer per output that is used (the indices are
// a second pass).
void Importer::op_topk(const Node& n) {
  Value& x = val(n, 0);
  int64_t k = 0;
  if (opset_ < 10) {
    k = attr_i(n, "k", -1);
  } else {
    const std::vector<int64_t> kv = const_ints(n, 1, "k");
    if (kv.size() != 1) fail_node(n, "k must hold one value, got " + std::to_string(kv.size()));
    k = kv[0];
  }
  const int64_t axis = norm_axis(attr_i(n, "axis", -1), x.shape.size(), "axis");
  const Sym dim = x.shape[static_cast<size_t>(axis)];
  if (dim.p) throw Unsupported{"TopK along the batch dimension"};
  if (k < 1 || k > dim.v) {
    fail_node(n, "k = " + std::to_string(k) + " must be in [1, " + std::to_string(dim.v) + "] (axis " + std::to_string(axis) + ")");
  }
  SymShape shape = x.shape;
  shape[static_cast<size_t>(axis)] = {k, 0};
  const Layout layout = preferred_layout(x);
  Layer l;
  l.op = OpKind::kTopK;
  l.k = k;
  l.largest = attr_i(n, "largest", 1) != 0;
  l.inputs = {tensor_in(x, layout, n)};
  Value view = x;
  view.layout = layout;
  l.axis = ir_axis(view, axis, n);
  bool any = false;
  for (int i = 0; i < std::min(n.output_size(), 2); ++i) {
    const std::string& name = n.output(i);
    if (name.empty()) continue;
    Value& o = out(n, i);
    o.shape = shape;
    const bool used = consumers_.count(name) || graph_outputs_.count(name);
    if (!used && (i == 1 || any)) {
      o.poisoned = true;
      continue;
    }
    l.indices = i == 1;
    const int y = add_layer(n, l, name, ir_shape(shape, layout), i == 1 && any ? "/indices" : "");
    set_activation(o, y, layout);
    any = true;
  }
}

// Tile(x, repeats): the batch axis must stay as it is.
void Importer::op_tile(const Node& n) {
  Value& x = val(n, 0);
  const std::vector<int64_t> reps = const_ints(n, 1, "repeats");
  if (reps.size() != x.shape.size()) {
    fail_node(n, "repeats has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(x.shape.size()));
  }
  Value& o = out(n);
  o.shape = x.shape;
  const int ba = batch_axis(x.shape, &n);
  std::vector<int64_t> ir_reps;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 1) fail_node(n, "repeats must be >= 1, got " + shape_text(reps));
    if (static_cast<int>(i) == ba) {
      if (reps[i] != 1) throw Unsupported{"Tile repeats the batch dimension"};
      if (x.shape[i].v == 1) continue;  // the IR drops a pure batch axis
    }
    o.shape[i].v = mul64(o.shape[i].v, reps[i]);
    ir_reps.push_back(reps[i]);
  }
  if (o.shape == x.shape) return alias(n, x, o);
  Layer l;
  l.op = OpKind::kTile;
  l.inputs = {tensor_in(x, Layout::kNatural, n)};
  l.repeats = ir_reps;
  add_output(n, o, l, Layout::kNatural);
}

}  // namespace tessera::graph::onnx_import

// ---------------------------------------------------------------- quantized graphs

namespace tessera::graph::onnx_import {

// QuantizeLinear's output type: its zero point's, else output_dtype (opset 21), else uint8.
int32_t Importer::quantize_elem(const Node& n) {
  if (has_input(n, 2)) return val(n, 2).elem;
  if (opset_ >= 21 && has_attr(n, "output_dtype")) return static_cast<int32_t>(attr_i(n, "output_dtype", 0));
  return onnx::TensorProto_DataType_UINT8;
}

void Importer::mark_codes(const Value& v, int32_t elem) {
  const auto d = code_dtype(elem);
  if (d && !v.constant && v.tensor >= 0) g_.tensors[static_cast<size_t>(v.tensor)].quantized = *d;
}

// Every reader of `value` (through reshapes, which move nothing) is a matrix layer that
// streams it: Conv/ConvTranspose/Gemm input A, either MatMul operand.
bool Importer::feeds_only_matrix_ops(const std::string& value, int depth) const {
  if (graph_outputs_.count(value) || depth > 8) return false;
  const auto it = consumer_nodes_.find(value);
  if (it == consumer_nodes_.end()) return false;
  for (int idx : it->second) {
    const Node& c = model_.graph().node(idx);
    const OnnxOp* row = find_onnx_op(c.op_type());
    for (int i = 0; i < c.input_size(); ++i) {
      if (c.input(i) != value) continue;
      const bool streamed = row && i < row->streamed_inputs;
      const bool alias = row && row->has(kAliasOf0) && i == 0 && c.output_size() > 0 &&
                         feeds_only_matrix_ops(c.output(0), depth + 1);
      if (!streamed && !alias) return false;
    }
  }
  return true;
}

// QuantizeLinear of an activation: right after a matrix layer its activate writes the
// codes (the requantization it does anyway); elsewhere a quantize layer.
void Importer::op_quantize(const Node& n) {
  Value& x = val(n, 0);
  const int32_t elem = quantize_elem(n);
  const auto codes = code_dtype(elem);
  if (!codes) {
    throw Unsupported{"QuantizeLinear to " + onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem)) +
                      " (int8, uint8, int16, FLOAT8E4M3FN and FLOAT8E5M2 are supported)"};
  }
  Value& o = out(n);
  o.shape = x.shape;
  o.quant_elem = elem;
  if (fusable(n.input(0)) && producer_layer(x)) {
    g_.tensors[static_cast<size_t>(x.tensor)].quantized = *codes;
    return absorb_into_producer(n, x, o, "quantized by the matrix layer");
  }
  Layer l;
  l.op = OpKind::kQuantize;
  l.quant_dtype = *codes;
  op_elementwise(n, l);
}

// DequantizeLinear of an activation: a matrix layer reads codes as they are (their zero
// point is the array's business), so when only matrix layers read the result nothing
// runs; elsewhere a dequantize layer.
void Importer::op_dequantize(const Node& n) {
  Value& x = val(n, 0);
  const int32_t elem = has_input(n, 2) ? val(n, 2).elem : x.quant_elem ? x.quant_elem : x.elem;
  mark_codes(x, elem);
  Value& o = out(n);
  o.shape = x.shape;
  if (code_dtype(elem) && feeds_only_matrix_ops(n.output(0))) {
    alias(n, x, o);
    o.quant_elem = elem;
    absorb(n, "dequantized by the matrix layer");
    return;
  }
  Layer l;
  l.op = OpKind::kDequantize;
  op_elementwise(n, l);
}

// DynamicQuantizeLinear: a dynamic_quantize layer (the range, then uint8 codes). Its scale
// and zero point are scalars the layer computes: the layers that use them take them as
// parameters (the scale multiplies in the next matrix layer's activate), not as tensors.
void Importer::op_dynamic_quantize(const Node& n) {
  Layer l;
  l.op = OpKind::kDynamicQuantize;
  l.quant_dtype = Dtype::kUint8;
  op_elementwise(n, l);
  out(n).quant_elem = onnx::TensorProto_DataType_UINT8;
  for (int i = 1; i < std::min(n.output_size(), 3); ++i) {
    if (n.output(i).empty()) continue;
    Value p;
    p.elem = i == 1 ? onnx::TensorProto_DataType_FLOAT : onnx::TensorProto_DataType_UINT8;
    p.is_float = i == 1;
    p.producer = node_name(n);
    values_[n.output(i)] = p;
  }
}

}  // namespace tessera::graph::onnx_import
