// Op attributes and output shapes that the constant-folding and the activation paths
// share: each is read in one place, so both paths accept and reject the same nodes.
#include <algorithm>

#include "sim/graph/onnx/shape_inference.h"

namespace tessera::graph::onnx_import {

// Reshape target -> output shape: 0 copies the input dim (unless allowzero), -1 is inferred.
SymShape NodeShapes::infer_reshape(const Node& n, const SymShape& in) {
  std::vector<Sym> target = m_.const_syms(n, 1, "the target shape");
  const bool allowzero = m_.attr_i(n, "allowzero", 0) != 0;
  SymShape out;
  int unknown = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    Sym t = target[i];
    if (t.p == 0 && t.v == 0 && !allowzero) {
      if (i >= in.size()) throw ShapeError("target shape copies dimension " + std::to_string(i) + " of a rank-" + std::to_string(in.size()) + " input");
      t = in[i];
    }
    if (t.p == 0 && t.v == -1) {
      if (unknown >= 0) throw ShapeError("target shape has more than one -1");
      unknown = static_cast<int>(i);
    } else if (t.p == 0 && t.v < 0) {
      throw ShapeError("target shape has a negative dimension " + std::to_string(t.v));
    }
    out.push_back(t);
  }
  // Element counts as symbols.
  Sym total{1, 0}, known{1, 0};
  for (Sym d : in) total = sym_mul(total, d);
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i) != unknown) known = sym_mul(known, out[i]);
  }
  if (unknown >= 0) {
    auto q = sym_binary(OpKind::kDiv, total, known);
    if (!q) {
      // The target hard-codes the batch (e.g. 1): solve at the bound batch.
      const int64_t t = eval(total, m_.batch_), k = eval(known, m_.batch_);
      if (k == 0 || t % k != 0) throw ShapeError("cannot reshape " + sym_shape_text(in) + " to " + sym_shape_text(out));
      q = Sym{t / k, 0};
    }
    out[static_cast<size_t>(unknown)] = *q;
    known = sym_mul(known, *q);
  }
  if (!(known == total)) {
    // Only consistent at the bound batch: the target spells the batch out as a number.
    if (eval(known, m_.batch_) != eval(total, m_.batch_) || total.p != 1 || known.p != 0) {
      throw ShapeError("cannot reshape " + sym_shape_text(in) + " to " + sym_shape_text(out));
    }
    // The batch is the outer factor of the first axis, or of the first after leading 1s
    // that cannot hold it (e.g. [1, N, ...] at a batch > 1).
    size_t k = 0;
    while (k + 1 < out.size() && out[k] == Sym{1, 0} && m_.batch_ > 1) ++k;
    if (out.empty() || out[k].p || out[k].v % m_.batch_ != 0) {
      throw ShapeError("the target shape " + sym_shape_text(out) + " hard-codes the batch in a way that cannot be followed");
    }
    out[k] = Sym{out[k].v / m_.batch_, 1};
  }
  return out;
}

SymShape NodeShapes::reshape_like_shape(const Node& n, const SymShape& in, bool keep_batch) {
  const OnnxOp* row = find_onnx_op(n.op_type());
  const ReshapeRule rule = row ? row->reshape : ReshapeRule::kNone;
  if (rule == ReshapeRule::kReshape) return infer_reshape(n, in);
  if (rule == ReshapeRule::kFlatten) return flatten_shape(in, flatten_axis(m_.attr_i(n, "axis", 1), in.size()));
  std::vector<int64_t> axes;
  if (auto ax = m_.ints_attr_or_input(n, "axes", 1, 13)) axes = *ax;
  if (rule == ReshapeRule::kUnsqueeze) return unsqueeze_shape(in, axes);
  if (keep_batch) {
    for (int64_t a : axes) {
      const int64_t k = a < 0 ? a + static_cast<int64_t>(in.size()) : a;
      if (k >= 0 && k < static_cast<int64_t>(in.size()) && in[static_cast<size_t>(k)].p) {
        throw Unsupported{"squeezes the batch dimension (axis " + std::to_string(k) + ")"};
      }
    }
  }
  return squeeze_shape(in, axes);
}

SymShape NodeShapes::expand_shape(const Node& n, const SymShape& in) {
  const std::vector<Sym> target = m_.const_syms(n, 1, "the shape");
  return broadcast_sym(in, SymShape(target.begin(), target.end()));
}

// Slice: attributes before opset 10, inputs from it on; axes default to 0.., steps to 1.
NodeShapes::SliceSpec NodeShapes::read_slice(const Node& n, size_t rank) {
  SliceSpec s;
  if (m_.opset_ < 10) {
    s.starts = m_.attr_ints(n, "starts"), s.ends = m_.attr_ints(n, "ends"), s.axes = m_.attr_ints(n, "axes");
  } else {
    s.starts = m_.const_ints(n, 1, "starts"), s.ends = m_.const_ints(n, 2, "ends");
    if (m_.has_input(n, 3)) s.axes = m_.const_ints(n, 3, "axes");
    if (m_.has_input(n, 4)) s.steps = m_.const_ints(n, 4, "steps");
  }
  if (s.axes.empty()) for (size_t i = 0; i < s.starts.size(); ++i) s.axes.push_back(static_cast<int64_t>(i));
  if (s.steps.empty()) s.steps.assign(s.starts.size(), 1);
  check_slice_lists(s.starts, s.ends, s.axes, s.steps, rank);
  return s;
}

// Reduce*: axes an attribute before opset 13 (ReduceSum) or 18 (the others), then an input.
std::vector<int64_t> NodeShapes::reduce_axes(const Node& n) {
  std::vector<int64_t> axes;
  if (auto a = m_.ints_attr_or_input(n, "axes", 1, n.op_type() == "ReduceSum" ? 13 : 18)) axes = *a;
  return axes;
}

// Transpose's perm: the axes reversed when absent.
std::vector<int64_t> NodeShapes::transpose_perm(const Node& n, size_t rank) {
  std::vector<int64_t> perm = m_.attr_ints(n, "perm");
  if (perm.empty()) for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  check_perm(perm, rank);
  return perm;
}

// A Gather index in [-dim, dim), made non-negative.
int64_t NodeShapes::gather_index(const Node& n, int64_t k, int64_t dim) const {
  if (k < -dim || k >= dim) {
    m_.fail_node(n, "index " + std::to_string(k) + " is out of range for dimension " + std::to_string(dim) + " (allowed: " +
                     std::to_string(-dim) + " to " + std::to_string(dim - 1) + ")");
  }
  return k < 0 ? k + dim : k;
}

}  // namespace tessera::graph::onnx_import
