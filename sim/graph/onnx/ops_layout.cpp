// Handlers of ops that move or select data: reshape-like ops (aliases), Transpose,
// Concat, Split, Slice, Gather (an embedding lookup goes to the host), Expand, Pad, Resize.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>

#include "sim/graph/onnx/ops.h"
#include "sim/graph/onnx/shape_inference.h"

namespace tessera::graph::onnx_import {

void LayoutOps::op_reshape_like(const Node& n) {
  Value& x = m_.val(n, 0);
  const OnnxOp* row = find_onnx_op(n.op_type());
  for (int i = 1; i < n.output_size(); ++i) {
    if (!n.output(i).empty() && m_.consumers_.count(n.output(i))) throw Unsupported{"output " + std::to_string(i)};
  }
  SymShape shape = x.shape;  // Identity, Cast, Dropout, (De)QuantizeLinear: precision is the policy's business
  if (row && row->reshape != ReshapeRule::kNone) {
    try {
      shape = NodeShapes(m_).reshape_like_shape(n, x.shape, true);
    } catch (const ShapeError& e) {
      m_.fail_node(n, e.what());
    }
  }
  // (A rank-0 activation, one value per sample, may be cast or passed through.)
  if (m_.batch_axis(shape, &n) < 0 && !(shape.empty() && x.shape.empty())) {
    throw Unsupported{"result " + sym_shape_text(shape) + " has no batch dimension"};
  }
  if (shape_elements(m_.per_sample(shape)) != shape_elements(m_.per_sample(x.shape))) {
    throw Unsupported{"reshapes " + sym_shape_text(x.shape) + " to " + sym_shape_text(shape) + " across the batch"};
  }
  Value& o = m_.out(n);
  o.shape = shape;
  m_.alias(n, x, o);
}

void LayoutOps::op_transpose(const Node& n) {
  Value& x = m_.val(n, 0);
  const size_t r = x.shape.size();
  const std::vector<int64_t> perm = NodeShapes(m_).transpose_perm(n, r);
  Value& o = m_.out(n);
  o.shape = permute_shape(x.shape, perm);
  const int ba = m_.batch_axis(x.shape, &n);
  const bool pure = ba >= 0 && x.shape[static_cast<size_t>(ba)].v == 1;
  const Layout layout = m_.preferred_layout(x);
  const int t = m_.tensor_in(x, layout, n);
  // IR axes of the input, as ONNX axes.
  std::vector<int64_t> in_axes;
  if (layout == Layout::kChannelsLast && m_.can_channels_last(x.shape)) {
    for (size_t i = 2; i < r; ++i) in_axes.push_back(static_cast<int64_t>(i));
    in_axes.push_back(1);
  } else {
    for (size_t i = 0; i < r; ++i) {
      if (!(pure && static_cast<int>(i) == ba)) in_axes.push_back(static_cast<int64_t>(i));
    }
  }
  std::vector<int64_t> ir_perm;
  for (int64_t p : perm) {
    if (pure && p == ba) continue;
    ir_perm.push_back(std::find(in_axes.begin(), in_axes.end(), p) - in_axes.begin());
  }
  const Shape want = m_.per_sample(o.shape);
  // NHWC -> NCHW of a tensor stored [H, W, C] (e.g. a TensorFlow export before a conv):
  // the result's channels-last form is the input as stored.
  if (r == 4 && m_.can_channels_last(o.shape) && perm[0] == ba && pure) {
    std::vector<int64_t> cl_axes;
    for (size_t i = 2; i < r; ++i) cl_axes.push_back(perm[i]);
    cl_axes.push_back(perm[1]);
    if (cl_axes == in_axes) {
      m_.set_activation(o, t, Layout::kChannelsLast);
      m_.absorb(n, "alias");
      return;
    }
  }
  bool identity = true;
  for (size_t i = 0; i < ir_perm.size(); ++i) identity = identity && ir_perm[i] == static_cast<int64_t>(i);
  // Only size-1 axes move: the element order is the same.
  Shape a, b;
  for (int64_t d : m_.g_.tensors[static_cast<size_t>(t)].shape) if (d != 1) a.push_back(d);
  for (int64_t d : want) if (d != 1) b.push_back(d);
  bool same_order = a == b;
  if (same_order && !identity) {
    std::vector<int64_t> order_in, order_out;
    const Shape& ts = m_.g_.tensors[static_cast<size_t>(t)].shape;
    for (size_t i = 0; i < ts.size(); ++i) if (ts[i] != 1) order_in.push_back(static_cast<int64_t>(i));
    for (size_t i = 0; i < ir_perm.size(); ++i) if (want[i] != 1) order_out.push_back(ir_perm[i]);
    same_order = order_in == order_out;
  }
  if (identity || same_order) {
    if (m_.g_.tensors[static_cast<size_t>(t)].shape == want) {
      m_.set_activation(o, t, Layout::kNatural);
      m_.absorb(n, "alias");
      return;
    }
    m_.reshape_into(n, o, t, n.output(0));
    return;
  }
  Layer l;
  l.op = OpKind::kTranspose;
  l.inputs = {t};
  l.perm = ir_perm;
  m_.add_output(n, o, l, Layout::kNatural);
}

void LayoutOps::op_concat(const Node& n) {
  std::vector<Value*> ins;
  std::deque<Value> from_host;  // constant operands (a class token expanded to the batch)
  for (int i = 0; i < n.input_size(); ++i) {
    Value& v = m_.val(n, i);
    if (v.constant) {
      if (m_.batch_axis(v.shape, &n) < 0) {
        throw Unsupported{"Concat of activations with a constant without a batch dimension ('" + n.input(i) + "')"};
      }
      from_host.push_back(v);
      m_.host_input(from_host.back(), n.input(i));
      ins.push_back(&from_host.back());
      continue;
    }
    ins.push_back(&v);
  }
  Value& x = *ins.front();
  const int64_t axis = norm_axis(m_.attr_i(n, "axis", 0), x.shape.size(), "axis");
  Value& o = m_.out(n);
  o.shape = x.shape;
  Sym total{0, 0};
  for (Value* v : ins) {
    if (v->shape.size() != x.shape.size()) m_.fail_node(n, "inputs differ in rank");
    auto s = sym_binary(OpKind::kAdd, total, v->shape[static_cast<size_t>(axis)]);
    if (!s) throw Unsupported{"Concat along the batch dimension"};
    total = *s;
  }
  o.shape[static_cast<size_t>(axis)] = total;
  Layout layout = m_.preferred_layout(x);
  if (!m_.can_channels_last(o.shape)) layout = Layout::kNatural;
  Layer l;
  l.op = OpKind::kConcat;
  for (Value* v : ins) l.inputs.push_back(m_.tensor_in(*v, layout, n));
  Value view = x;
  view.layout = layout;
  l.axis = m_.ir_axis(view, axis, n);
  m_.add_output(n, o, l, layout);
}

int LayoutOps::slice_ir(const Node& n, Value& in, int64_t onnx_axis, int64_t begin, int64_t end, int64_t step, int tensor,
                       const std::string& out_name, const std::string& suffix, Shape* ir_out) {
  Layer l;
  l.op = OpKind::kSlice;
  l.inputs = {tensor};
  Value view = in;
  view.layout = in.layout;
  l.axis = m_.ir_axis(view, onnx_axis, n);
  l.slice_begin = begin;
  // The IR reads a negative end from the back (Python's rule): a reverse slice that runs
  // through index 0 (end -1 here, ONNX's clamped end) ends before the front instead.
  l.slice_end = step < 0 && end < 0 ? std::numeric_limits<int64_t>::min() : end;
  l.slice_step = step;
  const int y = m_.add_layer(n, l, out_name, {}, suffix);
  if (ir_out) *ir_out = m_.g_.tensors[static_cast<size_t>(y)].shape;
  return y;
}

// Split's part sizes along an axis of `dim` elements: given (as many as outputs, >= 0,
// summing to dim) or equal parts, the last one smaller (opset 18), none empty.
std::vector<int64_t> LayoutOps::split_sizes(const Node& n, int64_t dim, int64_t axis) {
  std::vector<int64_t> sizes;
  if (auto s = m_.ints_attr_or_input(n, "split", 1, 13)) sizes = *s;
  const int64_t parts = n.output_size();
  if (parts < 1) throw ShapeError("Split has no outputs");
  if (sizes.empty()) {
    if (parts > dim) {
      throw ShapeError("Split into " + std::to_string(parts) + " outputs, more than the " + std::to_string(dim) +
                       " elements of axis " + std::to_string(axis));
    }
    const int64_t each = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(each, dim - i * each));
    if (sizes.back() < 1) {
      throw ShapeError("Split of " + std::to_string(dim) + " elements into " + std::to_string(parts) +
                       " equal outputs leaves the last one empty");
    }
    return sizes;
  }
  if (static_cast<int64_t>(sizes.size()) != parts) {
    throw ShapeError("split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(parts) + " outputs");
  }
  int64_t sum = 0;
  for (int64_t v : sizes) {
    if (v < 0) throw ShapeError("split sizes must be >= 0, got " + shape_text(sizes));
    sum = add64(sum, v);
  }
  if (sum != dim) {
    throw ShapeError("split sizes " + shape_text(sizes) + " sum to " + std::to_string(sum) + ", but axis " + std::to_string(axis) +
                     " has " + std::to_string(dim));
  }
  return sizes;
}

void LayoutOps::op_split(const Node& n) {
  Value& x = m_.val(n, 0);
  const int64_t axis = norm_axis(m_.attr_i(n, "axis", 0), x.shape.size(), "axis");
  const int64_t dim = x.shape[static_cast<size_t>(axis)].v;
  if (x.shape[static_cast<size_t>(axis)].p) throw Unsupported{"Split along the batch dimension"};
  const std::vector<int64_t> sizes = split_sizes(n, dim, axis);
  const int64_t parts = n.output_size();
  const Layout layout = m_.preferred_layout(x);
  const int t = m_.tensor_in(x, layout, n);
  int64_t begin = 0;
  for (int64_t i = 0; i < parts; ++i) {
    const std::string& name = n.output(static_cast<int>(i));
    const int64_t size = sizes[static_cast<size_t>(i)];
    if (!name.empty()) {
      Value& o = m_.values_[name];
      o.shape = x.shape;
      o.shape[static_cast<size_t>(axis)].v = size;
      o.constant = false;
      if (m_.consumers_.count(name) || m_.graph_outputs_.count(name)) {
        Shape got;
        const int y = slice_ir(n, x, axis, begin, begin + size, 1, t, name, "/" + std::to_string(i), &got);
        if (got != m_.ir_shape(o.shape, layout)) throw std::logic_error(m_.file_ + ": " + m_.where(n) + ": split shape mismatch");
        m_.set_activation(o, y, layout);
      } else {
        o.poisoned = true;
      }
    }
    begin += size;
  }
}

void LayoutOps::op_slice(const Node& n) {
  Value& x = m_.val(n, 0);
  const auto [starts, ends, axes, steps] = NodeShapes(m_).read_slice(n, x.shape.size());
  Value& o = m_.out(n);
  o.shape = x.shape;
  const Layout layout = m_.preferred_layout(x);
  int t = m_.tensor_in(x, layout, n);
  Value cur = x;
  cur.layout = layout;
  int cuts = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = norm_axis(axes.at(i), x.shape.size(), "axis");
    const Sym d = x.shape[static_cast<size_t>(a)];
    if (d.p) {
      // The batch axis: only the whole of it.
      if (starts[i] == 0 && ends.at(i) >= eval(d, m_.batch_) && steps.at(i) == 1) continue;  // all of it
      throw Unsupported{"Slice along the batch dimension"};
    }
    int64_t b = starts[i], e = ends.at(i);
    const int64_t len = slice_len(d.v, b, e, steps.at(i));
    if (len < 1) m_.fail_node(n, "the slice of axis " + std::to_string(a) + " is empty");
    o.shape[static_cast<size_t>(a)].v = len;
    if (len == d.v && steps[i] == 1) continue;  // the whole axis
    const bool last = i + 1 == starts.size();
    const std::string name = last ? n.output(0) : n.output(0) + "/" + std::to_string(cuts);
    t = slice_ir(n, cur, a, b, steps[i] > 0 ? b + (len - 1) * steps[i] + 1 : b + (len - 1) * steps[i] - 1, steps[i], t, name,
                 cuts ? "/" + std::to_string(cuts) : "", nullptr);
    cur.shape = o.shape;
    ++cuts;
  }
  if (cuts == 0) return m_.alias(n, x, o);
  if (m_.g_.tensors[static_cast<size_t>(t)].shape != m_.ir_shape(o.shape, layout)) {
    throw std::logic_error(m_.file_ + ": " + m_.where(n) + ": slice shape mismatch");
  }
  m_.set_activation(o, t, layout);
}

void LayoutOps::op_gather(const Node& n) {
  Value& data = m_.val(n, 0);
  Value& idx = m_.val(n, 1);
  const int64_t axis = norm_axis(m_.attr_i(n, "axis", 0), data.shape.size(), "axis");
  Value& o = m_.out(n);
  o.shape = gather_shape(data.shape, idx.shape, axis);
  if (data.constant && !idx.constant) {
    // An embedding lookup: the table lives with the host (as on TPU v1), the looked-up
    // rows arrive as an input of the accelerator program.
    if (m_.batch_axis(o.shape, &n) < 0) throw Unsupported{"result has no batch dimension"};
    m_.host_input(o, n.output(0));
    m_.absorb(n, "host");
    return;
  }
  if (!idx.constant) return m_.host_node(n, "Gather of an activation by indices computed at run time");
  const std::vector<int64_t> ix = m_.const_ints(n, 1, "indices");
  if (idx.shape.size() > 1) throw Unsupported{"Gather with multi-dimensional indices of an activation"};
  if (data.shape[static_cast<size_t>(axis)].p) throw Unsupported{"Gather along the batch dimension"};
  const int64_t dim = data.shape[static_cast<size_t>(axis)].v;
  std::vector<int64_t> norm;
  for (int64_t k : ix) norm.push_back(NodeShapes(m_).gather_index(n, k, dim));
  const int64_t first = norm.empty() ? 0 : norm.front();
  const int64_t step = norm.size() > 1 ? norm[1] - norm[0] : 1;
  for (size_t i = 1; i < norm.size(); ++i) {
    if (norm[i] - norm[i - 1] != step || step == 0) throw Unsupported{"Gather of an activation with irregular indices"};
  }
  const int64_t cnt = static_cast<int64_t>(norm.size());
  const Layout layout = m_.preferred_layout(data);
  const int t = m_.tensor_in(data, layout, n);
  Value view = data;
  view.layout = layout;
  const int64_t end = step > 0 ? first + (cnt - 1) * step + 1 : first + (cnt - 1) * step - 1;
  const int y = slice_ir(n, view, axis, first, end, step, t, n.output(0) + (idx.shape.empty() ? "/slice" : ""), "", nullptr);
  if (idx.shape.empty()) {
    // A scalar index drops the axis: a reshape, no data moves.
    m_.reshape_into(n, o, y, n.output(0), "/reshape");
    return;
  }
  m_.set_activation(o, y, layout);
}

void LayoutOps::op_expand(const Node& n) {
  Value& x = m_.val(n, 0);
  Value& o = m_.out(n);
  try {
    o.shape = NodeShapes(m_).expand_shape(n, x.shape);
  } catch (const ShapeError& e) {
    m_.fail_node(n, e.what());
  }
  if (o.shape == x.shape) return m_.alias(n, x, o);
  const int ob = m_.batch_axis(o.shape, &n), ba = m_.batch_axis(x.shape, &n);
  if (ba + static_cast<int>(o.shape.size() - x.shape.size()) != ob) throw Unsupported{"Expand moves the batch"};
  Layer l;
  l.op = OpKind::kExpand;
  l.inputs = {m_.tensor_in(x, Layout::kNatural, n)};
  l.target_shape = m_.per_sample(o.shape);
  m_.add_output(n, o, l, Layout::kNatural);
}

void LayoutOps::op_pad(const Node& n) {
  Value& x = m_.val(n, 0);
  const size_t r = x.shape.size();
  std::vector<int64_t> pads = m_.opset_ < 11 ? m_.attr_ints(n, "pads") : m_.const_ints(n, 1, "pads");
  std::vector<int64_t> axes;
  if (m_.opset_ >= 18 && m_.has_input(n, 3)) axes = m_.const_ints(n, 3, "axes");
  if (axes.empty()) for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  if (pads.size() != 2 * axes.size()) m_.fail_node(n, "pads has " + std::to_string(pads.size()) + " entries for " + std::to_string(axes.size()) + " axes");
  std::vector<int64_t> begin(r, 0), end(r, 0);
  axes = norm_axes(axes, r, "axis");
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    begin[static_cast<size_t>(a)] = pads[i];
    end[static_cast<size_t>(a)] = pads[i + axes.size()];
  }
  Value& o = m_.out(n);
  o.shape = x.shape;
  for (size_t i = 0; i < r; ++i) {
    if (begin[i] == 0 && end[i] == 0) continue;
    if (x.shape[i].p) throw Unsupported{"Pad of the batch dimension"};
    o.shape[i].v = add64(o.shape[i].v, add64(begin[i], end[i]));
    if (o.shape[i].v < 1) m_.fail_node(n, "padding makes axis " + std::to_string(i) + " empty");
  }
  if (o.shape == x.shape) return m_.alias(n, x, o);
  const Layout layout = m_.preferred_layout(x);
  Layer l;
  l.op = OpKind::kPad;
  l.inputs = {m_.tensor_in(x, layout, n)};
  l.mode = m_.attr_s(n, "mode", "constant");
  Value view = x;
  view.layout = layout;
  const size_t ir_rank = m_.g_.tensors[static_cast<size_t>(l.inputs[0])].shape.size();
  l.pads.assign(2 * ir_rank, 0);
  for (size_t i = 0; i < r; ++i) {
    if (begin[i] == 0 && end[i] == 0) continue;
    const auto ia = static_cast<size_t>(m_.ir_axis(view, static_cast<int64_t>(i), n));
    l.pads[ia] = begin[i];
    l.pads[ia + ir_rank] = end[i];
  }
  m_.add_output(n, o, l, layout);
}

void LayoutOps::op_resize(const Node& n) {
  Value& x = m_.val(n, 0);
  const size_t r = x.shape.size();
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  const bool upsample = n.op_type() == "Upsample";
  if (upsample) {
    if (m_.opset_ < 9) {
      const auto* a = attr(n, "scales");
      if (a) scales.assign(a->floats().begin(), a->floats().end());
    } else {
      scales = m_.const_floats(n, 1, "scales");
    }
  } else if (m_.opset_ < 11) {
    scales = m_.const_floats(n, 1, "scales");
  } else {
    if (m_.has_input(n, 3) && !m_.val(n, 3).shape.empty() && count(m_.full_dims(m_.val(n, 3).shape)) > 0) sizes = m_.const_ints(n, 3, "sizes");
    else if (m_.has_input(n, 2)) scales = m_.const_floats(n, 2, "scales");
  }
  std::vector<int64_t> axes = m_.attr_ints(n, "axes");
  if (axes.empty()) for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  Value& o = m_.out(n);
  o.shape = x.shape;
  if (sizes.empty() && scales.size() != axes.size()) m_.fail_node(n, "needs scales or sizes for every axis");
  if (!sizes.empty() && sizes.size() != axes.size()) {
    m_.fail_node(n, "sizes has " + std::to_string(sizes.size()) + " entries for " + std::to_string(axes.size()) + " axes");
  }
  axes = norm_axes(axes, r, "axis");
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(axes[i]);
    if (sizes.empty() && !(scales[i] > 0)) m_.fail_node(n, "scales must be > 0, got " + std::to_string(scales[i]));
    const int64_t nv = sizes.empty() ? to_int64(std::floor(static_cast<double>(x.shape[a].v) * scales[i] + 1e-9), "the resized dimension")
                                     : sizes[i];
    if (nv < 1) m_.fail_node(n, "the output's axis " + std::to_string(a) + " would have " + std::to_string(nv) + " elements (must be >= 1)");
    if (x.shape[a].p) {
      if (nv != x.shape[a].v) throw Unsupported{"Resize of the batch dimension"};
      continue;
    }
    o.shape[a].v = nv;
  }
  std::string mode = m_.attr_s(n, "mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear" && mode != "cubic") m_.fail_node(n, "unknown mode '" + mode + "'");
  const Layout layout = m_.preferred_layout(x);
  Layer l;
  l.op = OpKind::kResize;
  l.mode = mode;
  l.inputs = {m_.tensor_in(x, layout, n)};
  l.target_shape = m_.ir_shape(o.shape, layout);
  m_.add_output(n, o, l, layout);
}

}  // namespace tessera::graph::onnx_import
