// Handlers of ops on the systolic array (Conv, ConvTranspose, Gemm, MatMul, LSTM, GRU)
// and of the windowed ops that share their spatial attributes (pooling).
#include <algorithm>

#include "sim/graph/onnx/ops.h"

namespace tessera::graph::onnx_import {

namespace {

// The spatial dimensions of an NCHW shape (its axes from 2 on).
std::vector<int64_t> spatial_extent(const SymShape& s) {
  std::vector<int64_t> in;
  for (size_t i = 2; i < s.size(); ++i) in.push_back(s[i].v);
  return in;
}

// A transposed convolution's output along one axis before its pads are removed:
// stride * (in - 1) + output_padding + the dilated kernel's span.
int64_t transposed_extent(int64_t in, int64_t stride, int64_t out_pad, int64_t span) {
  return add64(add64(mul64(stride, in - 1), out_pad), span);
}

// The window fields of a 1-D or 2-D layer (1-D: the height axis is 1).
void set_window(Layer& l, const SpatialAttrs& a, size_t nd) {
  const bool two = nd == 2;
  l.kernel_h = two ? a.kernel[0] : 1, l.kernel_w = a.kernel[nd - 1];
  l.stride_h = two ? a.strides[0] : 1, l.stride_w = a.strides[nd - 1];
  l.dilation_h = two ? a.dilations[0] : 1, l.dilation_w = a.dilations[nd - 1];
  l.pad_top = two ? a.pads[0] : 0, l.pad_bottom = two ? a.pads[nd] : 0;
  l.pad_left = a.pads[nd - 1], l.pad_right = a.pads[2 * nd - 1];
}

}  // namespace

// ---------------------------------------------------------------- spatial attributes

// Convolution and pooling take NCHW inputs with 1 or 2 spatial axes and the batch first.
size_t MatrixOps::spatial_dims(const Value& x, const std::string& what) const {
  const size_t rank = x.shape.size();
  if (rank != 3 && rank != 4) {
    throw Unsupported{(rank < 3 ? what + " of a rank-" + std::to_string(rank) + " input" : std::to_string(rank - 2) + "-D " + what) +
                      " (1-D and 2-D are supported)"};
  }
  if (!m_.can_channels_last(x.shape)) throw Unsupported{"input " + sym_shape_text(x.shape) + " does not have the batch first"};
  return rank - 2;
}

SpatialAttrs MatrixOps::spatial(const Node& n, size_t dims, const std::vector<int64_t>& kernel) {
  SpatialAttrs a;
  a.kernel = kernel;
  a.strides = m_.attr_ints(n, "strides");
  a.dilations = m_.attr_ints(n, "dilations");
  a.pads = m_.attr_ints(n, "pads");
  a.auto_pad = m_.attr_s(n, "auto_pad", "NOTSET");
  if (a.strides.empty()) a.strides.assign(dims, 1);
  if (a.dilations.empty()) a.dilations.assign(dims, 1);
  if (a.pads.empty()) a.pads.assign(2 * dims, 0);
  if (a.kernel.size() != dims || a.strides.size() != dims || a.dilations.size() != dims || a.pads.size() != 2 * dims) {
    m_.fail_node(n, "kernel_shape, strides, dilations and pads must have one entry per spatial axis (" + std::to_string(dims) +
                 ", pads two)");
  }
  // The YAML graph loader's bounds (graph.cpp), so both accept the same layers.
  auto in_range = [&](const std::vector<int64_t>& v, int64_t lo, const std::string& name) {
    for (int64_t x : v) {
      if (x < lo || x > kMaxWindowValue) {
        m_.fail_node(n, name + " must be in [" + std::to_string(lo) + ", " + std::to_string(kMaxWindowValue) + "], got " + shape_text(v));
      }
    }
  };
  in_range(a.kernel, 1, "kernel_shape");
  in_range(a.strides, 1, "strides");
  in_range(a.dilations, 1, "dilations");
  in_range(a.pads, 0, "pads");
  for (size_t i = 0; i < dims; ++i) window_span(a.kernel[i], a.dilations[i]);  // throws if it does not fit
  return a;
}

// auto_pad SAME_UPPER / SAME_LOWER / VALID -> explicit pads (conv and pooling).
void MatrixOps::plan_padding(const Node& n, SpatialAttrs& a, const std::vector<int64_t>& in, bool transposed,
                            const std::vector<int64_t>& out_pad) {
  const size_t d = in.size();
  if (a.auto_pad == "NOTSET" || a.auto_pad.empty()) return;
  if (a.auto_pad == "VALID") {
    a.pads.assign(2 * d, 0);
    return;
  }
  if (a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER") m_.fail_node(n, "unknown auto_pad '" + a.auto_pad + "'");
  const bool upper = a.auto_pad == "SAME_UPPER";
  for (size_t i = 0; i < d; ++i) {
    const int64_t span = window_span(a.kernel[i], a.dilations[i]);
    int64_t total = 0;
    if (transposed) {
      const int64_t out = mul64(in[i], a.strides[i]);
      total = std::max<int64_t>(sub64(transposed_extent(in[i], a.strides[i], out_pad[i], span), out), 0);
      a.pads[i] = upper ? total / 2 : total - total / 2;
    } else {
      const int64_t out = in[i] == 0 ? 0 : 1 + (in[i] - 1) / a.strides[i];  // ceil(in / stride) without overflow
      total = std::max<int64_t>(sub64(add64(mul64(out - 1, a.strides[i]), span), in[i]), 0);
      a.pads[i] = upper ? total / 2 : total - total / 2;
    }
    a.pads[i + d] = total - a.pads[i];
  }
}

namespace {
int64_t window_len(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t s, int64_t dil, bool ceil_mode) {
  const int64_t span = window_span(k, dil);
  const int64_t padded = add64(add64(in, pb), pe);
  if (padded < span) throw ShapeError("window of " + std::to_string(span) + " does not fit an input of " + std::to_string(in));
  const int64_t room = padded - span;  // >= 0
  int64_t out = ceil_mode ? (room == 0 ? 0 : 1 + (room - 1) / s) + 1 : room / s + 1;
  if (ceil_mode && mul64(out - 1, s) >= in + pb) --out;
  return out;
}
}  // namespace

// Output length of spatial axis i (a ShapeError names the node).
int64_t MatrixOps::window_out(const Node& n, const SpatialAttrs& a, const std::vector<int64_t>& in, size_t i, bool ceil_mode) {
  const size_t nd = in.size();
  try {
    return window_len(in[i], a.pads[i], a.pads[i + nd], a.kernel[i], a.strides[i], a.dilations[i], ceil_mode);
  } catch (const ShapeError& e) {
    m_.fail_node(n, e.what());
  }
}

// ---------------------------------------------------------------- matrix ops

void MatrixOps::op_conv(const Node& n, bool transposed) {
  Value& x = m_.val(n, 0);
  Value& w = m_.val(n, 1);
  if (!w.constant) throw Unsupported{"weights computed from activations"};
  const size_t nd = spatial_dims(x, "convolution");
  const size_t rank = nd + 2;
  if (w.shape.size() != rank || !all_plain(w.shape)) m_.fail_node(n, "weight shape " + sym_shape_text(w.shape) + " does not match a rank-" + std::to_string(rank) + " input");
  const auto wd = plain_dims(w.shape);
  std::vector<int64_t> kernel = m_.attr_ints(n, "kernel_shape");
  if (kernel.empty()) kernel.assign(wd.begin() + 2, wd.end());
  const int64_t group = m_.attr_i(n, "group", 1);
  const int64_t C = x.shape[1].v;
  if (group < 1) m_.fail_node(n, "group must be >= 1, got " + std::to_string(group));
  const int64_t F = transposed ? mul64(wd[1], group) : wd[0];
  if (transposed ? wd[0] != C : mul64(wd[1], group) != C) {
    m_.fail_node(n, "weights " + shape_text(wd) + " with group " + std::to_string(group) + " do not fit " + std::to_string(C) +
                 " input channels");
  }
  const std::vector<int64_t> in = spatial_extent(x.shape);
  SpatialAttrs a = spatial(n, nd, kernel);
  std::vector<int64_t> out_pad = m_.attr_ints(n, "output_padding");
  if (out_pad.empty()) out_pad.assign(nd, 0);
  if (out_pad.size() != nd) m_.fail_node(n, "output_padding must have one entry per spatial axis (" + std::to_string(nd) + ")");
  for (int64_t p : out_pad) {
    if (p < 0 || p > kMaxWindowValue) {
      m_.fail_node(n, "output_padding must be in [0, " + std::to_string(kMaxWindowValue) + "], got " + shape_text(out_pad));
    }
  }
  const std::vector<int64_t> out_shape_attr = m_.attr_ints(n, "output_shape");
  std::vector<int64_t> dims_out(nd);
  if (transposed && !out_shape_attr.empty()) {
    if (out_shape_attr.size() < nd) {
      m_.fail_node(n, "output_shape " + shape_text(out_shape_attr) + " must give the " + std::to_string(nd) + " spatial dimensions");
    }
    const std::vector<int64_t> os(out_shape_attr.end() - static_cast<long>(nd), out_shape_attr.end());
    for (size_t i = 0; i < nd; ++i) {
      const int64_t span = window_span(a.kernel[i], a.dilations[i]);
      const int64_t total = sub64(transposed_extent(in[i], a.strides[i], out_pad[i], span), os[i]);
      // A negative total is extra output (ONNX: output_shape may exceed the natural size).
      if (os[i] < 1 || os[i] > kMaxBoundDim) {
        m_.fail_node(n, "output_shape " + shape_text(out_shape_attr) + " must have spatial dimensions in [1, " +
                         std::to_string(kMaxBoundDim) + "]");
      }
      a.pads[i] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      a.pads[i + nd] = total - a.pads[i];
      dims_out[i] = os[i];
    }
  } else {
    plan_padding(n, a, in, transposed, out_pad);
    for (size_t i = 0; i < nd; ++i) {
      const int64_t span = window_span(a.kernel[i], a.dilations[i]);
      if (transposed) {
        dims_out[i] = sub64(sub64(transposed_extent(in[i], a.strides[i], out_pad[i], span), a.pads[i]), a.pads[i + nd]);
        if (dims_out[i] < 1) m_.fail_node(n, "the pads leave spatial axis " + std::to_string(i) + " empty");
      } else {
        dims_out[i] = window_out(n, a, in, i, false);
      }
    }
  }
  Layer l;
  l.op = transposed ? OpKind::kConvTranspose2d : OpKind::kConv2d;
  l.inputs = {m_.tensor_in(x, Layout::kChannelsLast, n)};
  l.quantized_weights = QuantOps(m_).weight_codes(w);
  l.out_features = F;
  l.groups = group;
  set_window(l, a, nd);
  l.output_pad_h = nd == 2 ? out_pad[0] : 0;
  l.output_pad_w = out_pad[nd - 1];
  Value& o = m_.out(n);
  o.shape = {x.shape[0], {F, 0}};
  for (int64_t d : dims_out) o.shape.push_back({d, 0});
  m_.add_output(n, o, l, Layout::kChannelsLast);
}

void MatrixOps::op_gemm(const Node& n) {
  Value& A = m_.val(n, 0);
  Value& B = m_.val(n, 1);
  if (A.constant || !B.constant) {
    throw Unsupported{A.constant ? "Gemm whose A operand is a constant and B an activation"
                                 : "Gemm of two activations (use MatMul)"};
  }
  const bool ta = m_.attr_i(n, "transA", 0) != 0, tb = m_.attr_i(n, "transB", 0) != 0;
  if (A.shape.size() != 2 || B.shape.size() != 2) m_.fail_node(n, "Gemm needs 2-D operands");
  const int ba = m_.batch_axis(A.shape, &n);
  if (ba != (ta ? 1 : 0)) throw Unsupported{"Gemm contracting over the batch dimension"};
  const Sym K = A.shape[ta ? 0 : 1];
  const Sym Kb = B.shape[tb ? 1 : 0];
  const Sym N = B.shape[tb ? 0 : 1];
  if (!(K == Kb)) m_.fail_node(n, "inner dimensions differ: A " + sym_shape_text(A.shape) + ", B " + sym_shape_text(B.shape));
  Layer l;
  l.op = OpKind::kFc;
  l.inputs = {m_.tensor_in(A, Layout::kNatural, n)};
  l.quantized_weights = QuantOps(m_).weight_codes(B);
  l.out_features = N.v;
  Value& o = m_.out(n);
  o.shape = {A.shape[static_cast<size_t>(ba)], N};
  m_.add_output(n, o, l, Layout::kNatural);
}

void MatrixOps::op_matmul(const Node& n) {
  Value& A = m_.val(n, 0);
  Value& B = m_.val(n, 1);
  if (A.constant) throw Unsupported{"MatMul whose first operand is a constant and second an activation"};
  if (A.shape.size() < 2 || B.shape.size() < 2) throw Unsupported{"MatMul with a 1-D operand"};
  const SymShape la(A.shape.begin(), A.shape.end() - 2), lb(B.shape.begin(), B.shape.end() - 2);
  SymShape lead;
  try {
    lead = broadcast_sym(la, lb);
  } catch (const ShapeError& e) {
    m_.fail_node(n, e.what());
  }
  const Sym K = A.shape.back(), Kb = B.shape[B.shape.size() - 2];
  if (!(K == Kb)) m_.fail_node(n, "inner dimensions differ: " + sym_shape_text(A.shape) + " x " + sym_shape_text(B.shape));
  Value& o = m_.out(n);
  o.shape = lead;
  o.shape.push_back(A.shape[A.shape.size() - 2]);
  o.shape.push_back(B.shape.back());
  if (K.p) throw Unsupported{"MatMul contracting over the batch dimension"};
  Layer l;
  if (B.constant) {
    for (Sym d : lb) {
      if (!is_one(d)) throw Unsupported{"MatMul with batched (3-D) weights " + sym_shape_text(B.shape)};
    }
    l.op = OpKind::kFc;
    l.inputs = {m_.tensor_in(A, Layout::kNatural, n)};
    l.quantized_weights = QuantOps(m_).weight_codes(B);
    l.out_features = B.shape.back().v;
    const Shape want = m_.per_sample(o.shape);
    const int y = m_.add_layer(n, l, n.output(0), {});
    if (m_.g_.tensors[static_cast<size_t>(y)].shape != want) {
      m_.reshape_into(n, o, y, n.output(0) + "/reshape", "/reshape");
    } else {
      m_.set_activation(o, y, Layout::kNatural);
    }
    return;
  }
  const int bA = m_.batch_axis(A.shape, &n), bB = m_.batch_axis(B.shape, &n);
  if (bA >= static_cast<int>(A.shape.size()) - 2 || bB >= static_cast<int>(B.shape.size()) - 2 || bA < 0 || bB < 0) {
    throw Unsupported{"MatMul of two activations whose batch is not a leading dimension"};
  }
  l.op = OpKind::kMatmul;
  l.inputs = {m_.tensor_in(A, Layout::kNatural, n), m_.tensor_in(B, Layout::kNatural, n)};
  m_.add_output(n, o, l, Layout::kNatural);
}

void MatrixOps::op_recurrent(const Node& n, bool lstm) {
  Value& X = m_.val(n, 0);
  Value& W = m_.val(n, 1);
  Value& R = m_.val(n, 2);
  if (!W.constant || !R.constant) throw Unsupported{"weights computed from activations"};
  const int64_t layout = m_.attr_i(n, "layout", 0);
  const std::string dir = m_.attr_s(n, "direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") m_.fail_node(n, "unknown direction '" + dir + "'");
  const int64_t D = dir == "bidirectional" ? 2 : 1;
  if (X.shape.size() != 3 || W.shape.size() != 3 || R.shape.size() != 3) {
    m_.fail_node(n, "X, W and R must be 3-D, got " + sym_shape_text(X.shape) + ", " + sym_shape_text(W.shape) + " and " +
                     sym_shape_text(R.shape));
  }
  const int64_t H = m_.has_attr(n, "hidden_size") ? m_.attr_i(n, "hidden_size", 0) : R.shape[2].v;
  if (H < 1 || H > kMaxBoundDim) m_.fail_node(n, "hidden_size must be in [1, " + std::to_string(kMaxBoundDim) + "], got " + std::to_string(H));
  const int ba = m_.batch_axis(X.shape, &n);
  if (ba != (layout == 0 ? 1 : 0) || X.shape[static_cast<size_t>(ba)].v != 1) {
    throw Unsupported{"input " + sym_shape_text(X.shape) + " must have the batch on axis " + std::to_string(layout == 0 ? 1 : 0)};
  }
  const int64_t T = X.shape[layout == 0 ? 0 : 1].v;
  const int64_t G = lstm ? 4 : 3;
  if (W.shape[1].v != G * H || R.shape[1].v != G * H || W.shape[0].v != D) {
    m_.fail_node(n, "W " + sym_shape_text(W.shape) + " / R " + sym_shape_text(R.shape) + " do not fit hidden_size " +
                 std::to_string(H) + " and direction " + dir);
  }
  Layer l;
  l.op = lstm ? OpKind::kLstm : OpKind::kGru;
  l.inputs = {m_.tensor_in(X, Layout::kNatural, n)};
  // Initial states that are activations (e.g. a decoder started from the encoder's state).
  const int initial_h = 5, initial_c = 6;
  Value* h0 = m_.opt_val(n, initial_h);
  Value* c0 = lstm ? m_.opt_val(n, initial_c) : nullptr;
  if (h0 && !h0->constant) l.inputs.push_back(m_.tensor_in(*h0, Layout::kNatural, n));
  if (c0 && !c0->constant) {
    if (l.inputs.size() == 1) throw Unsupported{"an initial cell state without an initial hidden state"};
    l.inputs.push_back(m_.tensor_in(*c0, Layout::kNatural, n));
  }
  l.hidden = H;
  l.directions = D;
  l.reverse = dir == "reverse";
  l.linear_before_reset = m_.attr_i(n, "linear_before_reset", 0) != 0;
  l.peepholes = lstm && m_.has_input(n, 7);
  const Sym bsym = X.shape[static_cast<size_t>(ba)];
  const SymShape y_shape = layout == 0 ? SymShape{{T, 0}, {D, 0}, bsym, {H, 0}} : SymShape{bsym, {T, 0}, {D, 0}, {H, 0}};
  const std::string y_name = n.output_size() > 0 && !n.output(0).empty() ? n.output(0) : node_name(n) + "/Y";
  const int y = m_.add_layer(n, l, y_name, m_.per_sample(y_shape));
  if (n.output_size() > 0 && !n.output(0).empty()) {
    Value& o = m_.out(n, 0);
    o.shape = y_shape;
    m_.set_activation(o, y, Layout::kNatural);
  }
  // Y_h and Y_c: the last step's state, copied out of the sequence.
  for (int k = 1; k <= (lstm ? 2 : 1); ++k) {
    if (n.output_size() <= k || n.output(k).empty()) continue;
    Value& o = m_.out(n, k);
    o.shape = layout == 0 ? SymShape{{D, 0}, bsym, {H, 0}} : SymShape{bsym, {D, 0}, {H, 0}};
    o.constant = false;
    const std::string& name = n.output(k);
    if (!m_.consumers_.count(name) && !m_.graph_outputs_.count(name)) {
      o.poisoned = true;  // unused
      continue;
    }
    Layer s;
    s.op = OpKind::kSlice;
    s.inputs = {y};
    s.axis = 0;
    s.slice_begin = T - 1;
    s.slice_end = T;
    const int t1 = m_.add_layer(n, s, name + "/last", {}, k == 1 ? "/Y_h" : "/Y_c");
    m_.reshape_into(n, o, t1, name, k == 1 ? "/Y_h_reshape" : "/Y_c_reshape");
  }
}

void MatrixOps::op_pool(const Node& n, OpKind kind) {
  Value& x = m_.val(n, 0);
  if (n.output_size() > 1 && !n.output(1).empty() && m_.consumers_.count(n.output(1))) throw Unsupported{"the Indices output"};
  const size_t nd = spatial_dims(x, "pooling");
  const std::vector<int64_t> kernel = m_.attr_ints(n, "kernel_shape");
  if (kernel.size() != nd) m_.fail_node(n, "kernel_shape must have " + std::to_string(nd) + " entries");
  SpatialAttrs a = spatial(n, nd, kernel);
  const std::vector<int64_t> in = spatial_extent(x.shape);
  plan_padding(n, a, in, false, {});
  const bool ceil_mode = m_.attr_i(n, "ceil_mode", 0) != 0;
  Value& o = m_.out(n);
  o.shape = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < nd; ++i) o.shape.push_back({window_out(n, a, in, i, ceil_mode), 0});
  Layer l;
  l.op = kind;
  l.inputs = {m_.tensor_in(x, Layout::kChannelsLast, n)};
  set_window(l, a, nd);
  l.ceil_mode = ceil_mode;
  m_.add_output(n, o, l, Layout::kChannelsLast);
}

void MatrixOps::op_global_pool(const Node& n, OpKind kind) {
  Value& x = m_.val(n, 0);
  if (x.shape.size() != 3 && x.shape.size() != 4) throw Unsupported{"global pooling of a rank-" + std::to_string(x.shape.size()) + " input"};
  if (!m_.can_channels_last(x.shape)) throw Unsupported{"input " + sym_shape_text(x.shape) + " does not have the batch first"};
  Value& o = m_.out(n);
  o.shape = {x.shape[0], x.shape[1]};
  for (size_t i = 2; i < x.shape.size(); ++i) o.shape.push_back({1, 0});
  Layer l;
  l.op = kind;
  l.keepdims = true;
  l.inputs = {m_.tensor_in(x, Layout::kChannelsLast, n)};
  m_.add_output(n, o, l, Layout::kChannelsLast);
}

}  // namespace tessera::graph::onnx_import

// ---------------------------------------------------------------- Einsum

namespace tessera::graph::onnx_import {

namespace {
constexpr const char* kEinsumForms =
    "two operands, no index repeated within one, every index in both operands or in the output, e.g. 'bij,bjk->bik', "
    "'ij,jk->ik', 'bhqd,bhkd->bhqk', 'bid,jd->bij'";
}

MatrixOps::EinsumSpec MatrixOps::einsum_spec(const Node& n, const std::vector<size_t>& ranks) {
  std::string eq;
  for (char c : m_.attr_s(n, "equation", "")) {
    if (c != ' ') eq += c;
  }
  auto unsupported = [&](const std::string& why) {
    return Unsupported{"equation '" + utf8_safe(eq) + "': " + why + " (supported: " + kEinsumForms + ")"};
  };
  if (eq.empty()) m_.fail_node(n, "needs the attribute 'equation'");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  const bool explicit_out = arrow != std::string::npos;
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    const size_t comma = lhs.find(',', b);
    terms.push_back(lhs.substr(b, comma == std::string::npos ? std::string::npos : comma - b));
    if (comma == std::string::npos) break;
    b = comma + 1;
  }
  if (terms.size() != ranks.size()) {
    m_.fail_node(n, "equation '" + utf8_safe(eq) + "' has " + std::to_string(terms.size()) + " operand(s) for " +
                     std::to_string(ranks.size()) + " input(s)");
  }
  // Letters as given, "..." as one marker ('.'); the ellipsis becomes digits (never letters).
  auto parse = [&](const std::string& t, std::string& letters, bool& ellipsis) {
    ellipsis = false;
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (c == '.') {
        if (ellipsis || t.compare(i, 3, "...") != 0) m_.fail_node(n, "equation '" + utf8_safe(eq) + "' has a malformed ellipsis");
        ellipsis = true;
        letters += '.';
        i += 2;
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        letters += c;
      } else {
        m_.fail_node(n, "equation '" + utf8_safe(eq) + "' has the character '" + utf8_safe(std::string(1, c)) + "'");
      }
    }
  };
  std::vector<std::string> raw(terms.size());
  std::vector<size_t> ell(terms.size(), 0);
  size_t max_ell = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    bool e = false;
    parse(terms[k], raw[k], e);
    const size_t letters = raw[k].size() - (e ? 1 : 0);
    if (e ? letters > ranks[k] : letters != ranks[k]) {
      m_.fail_node(n, "equation '" + utf8_safe(eq) + "' gives operand " + std::to_string(k) + " " + std::to_string(letters) +
                       " indices, but it has rank " + std::to_string(ranks[k]));
    }
    ell[k] = e ? ranks[k] - letters : 0;
    max_ell = std::max(max_ell, ell[k]);
  }
  if (max_ell > 10) throw unsupported("an ellipsis of more than 10 axes");
  auto expand = [&](const std::string& letters, size_t e) {
    std::string out;
    for (char c : letters) {
      if (c != '.') {
        out += c;
        continue;
      }
      for (size_t j = max_ell - e; j < max_ell; ++j) out += static_cast<char>('0' + j);
    }
    return out;
  };
  EinsumSpec spec;
  for (size_t k = 0; k < terms.size(); ++k) {
    spec.in.push_back(expand(raw[k], ell[k]));
    for (size_t i = 0; i < spec.in[k].size(); ++i) {
      if (spec.in[k].find(spec.in[k][i], i + 1) != std::string::npos) {
        throw unsupported("index '" + std::string(1, spec.in[k][i]) + "' repeats within operand " + std::to_string(k) +
                          " (a diagonal)");
      }
    }
  }
  if (explicit_out) {
    std::string letters;
    bool e = false;
    parse(eq.substr(arrow + 2), letters, e);
    spec.out = expand(letters, max_ell);
  } else {
    // Implicit output: the ellipsis, then the indices that occur once, in alphabetical order.
    for (size_t j = 0; j < max_ell; ++j) spec.out += static_cast<char>('0' + j);
    std::string once;
    for (const auto& t : spec.in) {
      for (char c : t) {
        if (c >= '0' && c <= '9') continue;
        int count = 0;
        for (const auto& u : spec.in) count += static_cast<int>(std::count(u.begin(), u.end(), c));
        if (count == 1) once += c;
      }
    }
    std::sort(once.begin(), once.end());
    spec.out += once;
  }
  for (size_t i = 0; i < spec.out.size(); ++i) {
    const char c = spec.out[i];
    if (spec.out.find(c, i + 1) != std::string::npos) {
      m_.fail_node(n, "equation '" + utf8_safe(eq) + "' names output index '" + std::string(1, c) + "' twice");
    }
    bool found = false;
    for (const auto& t : spec.in) found = found || t.find(c) != std::string::npos;
    if (!found) m_.fail_node(n, "equation '" + utf8_safe(eq) + "' has output index '" + std::string(1, c) + "' in no operand");
  }
  if (spec.in.size() != 2) throw unsupported(std::to_string(spec.in.size()) + " operand(s)");
  for (size_t k = 0; k < 2; ++k) {
    for (char c : spec.in[k]) {
      if (spec.out.find(c) == std::string::npos && spec.in[1 - k].find(c) == std::string::npos) {
        throw unsupported("index '" + std::string(1, c) + "' of operand " + std::to_string(k) +
                          " is summed over without being contracted with the other operand");
      }
    }
  }
  return spec;
}

// Every index's extent (equal in every operand, or 1 in one of them: broadcast); the output's shape.
SymShape MatrixOps::einsum_shape(const Node& n, const EinsumSpec& e, const std::vector<const SymShape*>& shapes) {
  std::map<char, Sym> dim;
  for (size_t k = 0; k < e.in.size(); ++k) {
    for (size_t i = 0; i < e.in[k].size(); ++i) {
      const char c = e.in[k][i];
      const Sym d = (*shapes[k])[i];
      auto it = dim.find(c);
      if (it == dim.end() || is_one(it->second)) {
        dim[c] = d;
      } else if (!(it->second == d) && !is_one(d)) {
        m_.fail_node(n, "index '" + std::string(1, c) + "' has extent " + sym_text(it->second) + " in one operand and " +
                         sym_text(d) + " in operand " + std::to_string(k));
      }
    }
  }
  SymShape out;
  for (char c : e.out) out.push_back(dim.at(c));
  return out;
}

// Two-operand Einsum as MatMul: the operands transposed to [batch..., M..., K...] and
// [batch..., K..., N...] (and reshaped to one M, K and N axis where there are several),
// multiplied, then brought into the output's order. With a constant operand, it goes
// second: a MatMul with constant weights is an fc layer.
void MatrixOps::op_einsum(const Node& n) {
  if (n.input_size() != 2) {
    throw Unsupported{"equation '" + utf8_safe(m_.attr_s(n, "equation", "")) + "': " + std::to_string(n.input_size()) +
                      " operand(s) (supported: " + kEinsumForms + ")"};
  }
  std::string ia = n.input(0), ib = n.input(1);
  if (m_.val(n, 0).constant && !m_.val(n, 1).constant) std::swap(ia, ib);
  const Value& A = m_.values_.at(ia);
  const Value& B = m_.values_.at(ib);
  EinsumSpec spec = einsum_spec(n, {m_.val(n, 0).shape.size(), m_.val(n, 1).shape.size()});
  if (ia != n.input(0)) std::swap(spec.in[0], spec.in[1]);
  const std::string la = spec.in[0], lb = spec.in[1], lo = spec.out;
  Value& o = m_.out(n);
  o.shape = einsum_shape(n, spec, {&A.shape, &B.shape});
  std::map<char, Sym> dim;
  for (size_t i = 0; i < la.size(); ++i) dim[la[i]] = A.shape[i];
  for (size_t i = 0; i < lb.size(); ++i) {
    if (!dim.count(lb[i]) || is_one(dim[lb[i]])) dim[lb[i]] = B.shape[i];
  }
  std::string batch, M, N, K;
  for (char c : lo) {
    const bool a = la.find(c) != std::string::npos, b = lb.find(c) != std::string::npos;
    (a && b ? batch : a ? M : N) += c;
  }
  for (char c : la) {
    if (lo.find(c) == std::string::npos) K += c;
  }
  auto prod = [&](const std::string& labels) {
    Sym p{1, 0};
    for (char c : labels) p = sym_mul(p, dim.at(c));
    return p;
  };
  auto dims_of = [&](const std::string& labels) {
    std::vector<Sym> d;
    for (char c : labels) d.push_back(dim.at(c));
    return d;
  };
  const std::string base = n.output(0) + "/einsum";
  int step = 0;
  // Value `name` with index order `from` -> order `to` (a Transpose when they differ).
  auto transpose = [&](const std::string& name, const std::string& from, const std::string& to, const std::string& out_name,
                       const std::string& suffix) {
    if (from == to) return name;
    std::vector<int64_t> perm;
    for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
    m_.synthetic(n, "Transpose", {name}, out_name, suffix, [&](Node& s) {
      auto* a = s.add_attribute();
      a->set_name("perm");
      a->set_type(onnx::AttributeProto_AttributeType_INTS);
      for (int64_t p : perm) a->add_ints(p);
    });
    return out_name;
  };
  // Value `name` reshaped to `target` (nothing when its shape is that already).
  auto reshape = [&](const std::string& name, const std::vector<Sym>& target, const std::string& out_name,
                     const std::string& suffix) {
    if (m_.values_.at(name).shape == SymShape(target.begin(), target.end())) return name;
    const std::string shape = m_.synthetic_ints(base + "/shape" + std::to_string(step++), target);
    m_.synthetic(n, "Reshape", {name, shape}, out_name, suffix);
    return out_name;
  };
  // The output after the MatMul: [batch..., M..., N...] in that order, then `lo`.
  const std::string after = batch + M + N;
  const bool permute = after != lo;
  std::vector<Sym> a_shape, b_shape, c_shape;
  const bool leading = batch.empty() && !M.empty();  // A's M axes can stay leading axes of the MatMul
  if (leading) {
    a_shape = dims_of(M);
  } else {
    a_shape = dims_of(batch);
    a_shape.push_back(prod(M));
  }
  a_shape.push_back(prod(K));
  b_shape = dims_of(batch);
  b_shape.push_back(prod(K));
  b_shape.push_back(prod(N));
  c_shape = leading ? dims_of(M) : dims_of(batch);
  if (!leading) c_shape.push_back(prod(M));
  c_shape.push_back(prod(N));
  const bool unflatten = SymShape(c_shape.begin(), c_shape.end()) != [&] {
    const auto d = dims_of(after);
    return SymShape(d.begin(), d.end());
  }();
  std::string a = transpose(ia, la, batch + M + K, base + "/a", "/a_transpose");
  a = reshape(a, a_shape, base + "/a_reshape", "/a_reshape");
  std::string b = transpose(ib, lb, batch + K + N, base + "/b", "/b_transpose");
  b = reshape(b, b_shape, base + "/b_reshape", "/b_reshape");
  const std::string c = unflatten || permute ? base + "/matmul" : n.output(0);
  m_.synthetic(n, "MatMul", {a, b}, c, "/matmul");
  std::string d = c;
  if (unflatten) {
    const auto target = dims_of(after);
    d = reshape(c, target, permute ? base + "/c_reshape" : n.output(0), "/c_reshape");
  }
  if (permute) transpose(d, after, lo, n.output(0), "/transpose");
}

}  // namespace tessera::graph::onnx_import
