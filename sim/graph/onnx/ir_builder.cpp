// Building the IR: tensors and layers, conversions between NCHW and channels last, and
// aliases (reshapes that move no data).
#include <stdexcept>

#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

std::string Importer::layer_name(const Node& n, const std::string& suffix) const {
  return utf8_safe(node_name(n) + suffix);
}

int Importer::add_tensor(const std::string& name, Shape shape, Dtype dtype, int producer) {
  const std::string safe = utf8_safe(name);
  std::string unique = safe;
  for (int k = 1; tensor_names_.count(unique); ++k) unique = safe + "#" + std::to_string(k);
  tensor_names_.insert(unique);
  g_.tensors.push_back(Tensor{unique, std::move(shape), dtype, producer});
  tensor_head_.push_back(name);
  return static_cast<int>(g_.tensors.size() - 1);
}

int Importer::materialize_input(Value& v, Layout layout) {
  const auto& in = model_.graph().input(v.graph_input);
  v.layout = can_channels_last(v.shape) ? layout : Layout::kNatural;
  v.tensor = add_tensor(in.name(), ir_shape(v.shape, v.layout), opts_.activation_dtype, -1);
  g_.tensors[static_cast<size_t>(v.tensor)].integer_values = !v.is_float;
  g_.tensors[static_cast<size_t>(v.tensor)].quantized = code_dtype(v.elem);  // a quantized model's int8/uint8 input
  g_.inputs.push_back(v.tensor);
  input_order_.push_back(v.graph_input);
  v.graph_input = -1;
  return v.tensor;
}

void Importer::host_input(Value& o, const std::string& name) {
  o.constant = false;
  o.layout = Layout::kNatural;
  o.tensor = add_tensor(name, per_sample(o.shape), opts_.activation_dtype, -1);
  g_.inputs.push_back(o.tensor);
  input_order_.push_back(model_.graph().input_size() + static_cast<int>(input_order_.size()));
}

int Importer::add_layer(const Node& n, Layer layer, const std::string& out_name, const Shape& expect,
                        const std::string& suffix) {
  layer.name = layer_name(n, suffix);
  const Shape shape = layer_shape(n, layer);
  if (!expect.empty() && shape != expect) {
    throw std::logic_error(file_ + ": " + where(n) + ": importer shape " + shape_text(expect) + " and IR shape " +
                           shape_text(shape) + " disagree for op " + std::string(op_name(layer.op)));
  }
  const int layer_index = static_cast<int>(g_.layers.size());
  layer.output = add_tensor(out_name, shape, opts_.activation_dtype, layer_index);
  if (is_matrix_op(layer.op)) layer.weight_dtype = opts_.weight_dtype;
  g_.layers.push_back(std::move(layer));
  return g_.layers.back().output;
}

Shape Importer::layer_shape(const Node& n, Layer& l) {
  try {
    return infer_layer(g_, l);
  } catch (const ShapeError& e) {
    fail_node(n, e.what());
  }
}

void Importer::set_activation(Value& o, int tensor, Layout layout) {
  o.constant = false;
  o.has_data = false;
  o.tensor = tensor;
  o.layout = layout;
}

// o is the output of `l`, written as n's first output, in `layout` (its IR shape is
// checked against o.shape).
void Importer::add_output(const Node& n, Value& o, const Layer& l, Layout layout) {
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

// o is tensor `input` reshaped to o's per-sample shape (same elements, no data moves).
void Importer::reshape_into(const Node& n, Value& o, int input, const std::string& out_name, const std::string& suffix) {
  const Shape want = per_sample(o.shape);
  Layer l;
  l.op = OpKind::kReshape;
  l.inputs = {input};
  l.target_shape = want;
  const int y = add_layer(n, l, out_name, want, suffix);
  set_activation(o, y, Layout::kNatural);
}

// n's output 0 is an alias of its input 0, held by `tensor`: the alias inherits
// fusability only if it is the input's one consumer.
void Importer::pass_head(const Node& n, int tensor) {
  const std::string& from = n.input(0);
  const bool pass = tensor_head_[static_cast<size_t>(tensor)] == from && consumers_[from] == 1 && !graph_outputs_.count(from);
  tensor_head_[static_cast<size_t>(tensor)] = pass ? n.output(0) : std::string();
  absorb(n, "alias");
}

// n was folded into the matrix layer that produced x: o takes over x's tensor.
void Importer::absorb_into_producer(const Node& n, const Value& x, Value& o, const std::string& why) {
  set_activation(o, x.tensor, x.layout);
  o.other_tensor = -1;
  tensor_head_[static_cast<size_t>(x.tensor)] = n.output(0);
  absorb(n, why);
}

int Importer::tensor_in(Value& v, Layout want, const Node& n) {
  if (v.constant) fail_node(n, "internal: a constant used as an activation");
  if (v.tensor < 0 && v.graph_input >= 0) materialize_input(v, want);
  if (v.tensor < 0) fail_node(n, "internal: activation without a tensor");
  if (!can_channels_last(v.shape) || v.layout == want) return v.tensor;
  if (v.other_tensor >= 0) return v.other_tensor;
  // Convert between NCHW order ([C, H, W] per sample) and channels last ([H, W, C]).
  const Shape target = ir_shape(v.shape, want);
  const int64_t channels = v.shape[1].v;
  int64_t spatial = 1;
  for (size_t i = 2; i < v.shape.size(); ++i) spatial *= v.shape[i].v;
  const std::string base = g_.tensors[static_cast<size_t>(v.tensor)].name;
  const std::string suffix = want == Layout::kChannelsLast ? "/to_nhwc" : "/to_nchw";
  Layer l;
  l.inputs = {v.tensor};
  if (channels == 1 || spatial == 1) {
    l.op = OpKind::kReshape;  // same element order: no data moves
    l.target_shape = target;
  } else {
    l.op = OpKind::kTranspose;
    const auto r = static_cast<int64_t>(target.size());
    if (want == Layout::kChannelsLast) {
      for (int64_t i = 1; i < r; ++i) l.perm.push_back(i);  // [C, H, W] -> [H, W, C]
      l.perm.push_back(0);
    } else {
      l.perm.push_back(r - 1);  // [H, W, C] -> [C, H, W]
      for (int64_t i = 0; i < r - 1; ++i) l.perm.push_back(i);
    }
  }
  Layer named = l;
  named.name = base + suffix;
  const Shape shape = layer_shape(n, named);
  const int layer_index = static_cast<int>(g_.layers.size());
  named.output = add_tensor(base + suffix, shape, g_.tensors[static_cast<size_t>(v.tensor)].dtype, layer_index);
  g_.layers.push_back(std::move(named));
  v.other_tensor = g_.layers.back().output;
  return v.other_tensor;
}

Layer* Importer::producer_layer(const Value& v) {
  if (v.constant || v.tensor < 0) return nullptr;
  const int p = g_.tensors[static_cast<size_t>(v.tensor)].producer;
  return p < 0 ? nullptr : &g_.layers[static_cast<size_t>(p)];
}

bool Importer::fusable(const std::string& value) const {
  auto it = values_.find(value);
  if (it == values_.end() || it->second.constant || it->second.tensor < 0) return false;
  if (graph_outputs_.count(value)) return false;
  auto c = consumers_.find(value);
  if (c == consumers_.end() || c->second != 1) return false;
  const int t = it->second.tensor;
  if (tensor_head_[static_cast<size_t>(t)] != value) return false;
  const int p = g_.tensors[static_cast<size_t>(t)].producer;
  if (p < 0) return false;
  const OpKind op = g_.layers[static_cast<size_t>(p)].op;
  return op == OpKind::kFc || op == OpKind::kConv2d || op == OpKind::kConvTranspose2d || op == OpKind::kMatmul;
}

// o holds in's elements with o.shape: a reshape (no data moves).
void Importer::alias(const Node& n, Value& in, Value& o) {
  o.constant = false;
  const Shape want = per_sample(o.shape);
  Layout layout = Layout::kNatural;
  int t = -1;
  if (in.layout == Layout::kChannelsLast && can_channels_last(in.shape) && in.tensor >= 0) {
    if (o.shape == in.shape) {
      o.tensor = in.tensor, o.layout = in.layout;
      o.other_tensor = in.other_tensor;
      pass_head(n, in.tensor);
      return;
    }
    const int64_t c = in.shape[1].v;
    int64_t spatial = 1;
    for (size_t i = 2; i < in.shape.size(); ++i) spatial *= in.shape[i].v;
    const bool flatten_all = want.size() == 1;  // [N, C*H*W]: the next layer's weights are permuted offline
    t = (c == 1 || spatial == 1 || flatten_all) ? in.tensor : tensor_in(in, Layout::kNatural, n);
  } else {
    t = tensor_in(in, Layout::kNatural, n);
  }
  if (can_channels_last(o.shape) && in.layout == Layout::kChannelsLast && o.shape == in.shape) layout = in.layout;
  if (g_.tensors[static_cast<size_t>(t)].shape == want) {
    o.tensor = t;
    o.layout = layout;
    pass_head(n, t);
    return;
  }
  reshape_into(n, o, t, n.output(0));
}

void Importer::synthetic(const Node& n, const std::string& op, const std::vector<std::string>& inputs,
                         const std::string& output, const std::string& suffix, const AttrSetter& attrs) {
  Node s;
  s.set_op_type(op);
  s.set_name(node_name(n) + suffix);
  for (const auto& in : inputs) s.add_input(in);
  s.add_output(output);
  if (attrs) attrs(s);
  if (output != n.output(0)) consumers_[output] = 1;
  dispatch(s);
  check_outputs(s);
}

std::string Importer::synthetic_ints(const std::string& name, const std::vector<Sym>& values) {
  Value c;
  c.shape = {{static_cast<int64_t>(values.size()), 0}};
  c.elem = onnx::TensorProto_DataType_INT64;
  c.has_data = true;
  c.ints = values;
  values_[name] = c;
  return name;
}

Layout Importer::preferred_layout(const Value& v) const {
  if (v.tensor >= 0) return v.layout;
  return v.prefer_channels_last ? Layout::kChannelsLast : Layout::kNatural;
}

}  // namespace tessera::graph::onnx_import
