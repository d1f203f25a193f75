// Functional mode: the vector layers (pooling, data movement, element-wise, reductions
// and the ops that run from their OpDef's fp32 function), and the index maps they use.
#include "sim/functional/internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "sim/graph/ops/registry.h"

namespace tessera::functional::internal {

using graph::op_def;

// ---- index maps (per sample, row-major) ----------------------------------------------

// Product of the extents of axes [begin, end) (clamped to the rank).
int64_t product(const Shape& s, std::size_t begin, std::size_t end) {
  const auto first = s.begin() + static_cast<std::ptrdiff_t>(std::min(begin, s.size()));
  const auto last = s.begin() + static_cast<std::ptrdiff_t>(std::min(end, s.size()));
  int64_t p = 1;
  for (auto it = first; it < last; ++it) p *= *it;
  return p;
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// For each element of a tensor of shape `out` (row-major), base + sum of its index
// along each axis times `stride[axis]`: the source element of a data movement.
std::vector<int64_t> index_map(const Shape& out, const std::vector<int64_t>& stride, int64_t base) {
  std::vector<int64_t> map(static_cast<std::size_t>(product(out)));
  std::vector<int64_t> idx(out.size(), 0);
  int64_t src = base;
  for (std::size_t i = 0; i < map.size(); ++i) {
    map[i] = src;
    for (std::size_t a = out.size(); a-- > 0;) {  // next multi-index
      ++idx[a];
      src += stride[a];
      if (idx[a] < out[a]) break;
      src -= stride[a] * idx[a];
      idx[a] = 0;
    }
  }
  return map;
}

// Numpy broadcasting: for each element of `out`, the element of an operand of shape
// `in` it reads (right-aligned axes; size-1 axes repeat). Returns empty if `in` does
// not broadcast to `out`.
std::vector<int64_t> broadcast_map(Shape in, const Shape& out) {
  while (in.size() > out.size() && in.front() == 1) in.erase(in.begin());  // [1, 768] against [768]
  if (in.size() > out.size()) return {};
  const std::vector<int64_t> in_stride = row_major_strides(in);
  std::vector<int64_t> stride(out.size(), 0);
  const std::size_t off = out.size() - in.size();
  for (std::size_t a = 0; a < in.size(); ++a) {
    if (in[a] != 1 && in[a] != out[off + a]) return {};
    stride[off + a] = in[a] == 1 ? 0 : in_stride[a];
  }
  return index_map(out, stride);
}

// ---- vector layers ------------------------------------------------------------------

void Runner::need_hwc(const Layer& l) const {
  const Tensor& x = g_.tensors[l.inputs.at(0)];
  const Tensor& y = g_.tensors[l.output];
  if (x.shape.size() != 3 || (l.op != OpKind::kGlobalAvgPool && y.shape.size() != 3)) {
    unsupported(l, op_text(l.op) + " on tensors that are not [H, W, C]");
  }
  if (y.shape.back() != x.shape.back()) unsupported(l, op_text(l.op) + " that changes the channel count");
}

void Runner::pool_layer(const Layer& l, std::vector<uint8_t>& flags) {
  need_hwc(l);
  const Tensor& xt = g_.tensors[l.inputs[0]];
  const Tensor& yt = g_.tensors[l.output];
  const int64_t h = xt.shape[0], w = xt.shape[1], c = xt.shape[2], oh = yt.shape[0], ow = yt.shape[1];
  const Window win(l);
  const bool is_max = l.op == OpKind::kMaxPool;
  // Visits the valid input positions of output pixel (oy, ox); padding is skipped
  // (max ignores it, average divides by the number of valid positions).
  auto window = [&](int64_t oy, int64_t ox, auto&& visit) {
    for (int64_t ky = 0; ky < win.kh; ++ky) {
      const int64_t iy = oy * win.sh - win.pt + ky * win.dh;
      if (iy < 0 || iy >= h) continue;
      for (int64_t kx = 0; kx < win.kw; ++kx) {
        const int64_t ix = ox * win.sw - win.pl + kx * win.dw;
        if (ix < 0 || ix >= w) continue;
        visit((iy * w + ix) * c);
      }
    }
  };
  const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t s = 0; s < n; ++s) {
      const float* x = in[0] + s * h * w * c;
      float* y = out + s * oh * ow * c;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox)
          for (int64_t ch = 0; ch < c; ++ch) {
            float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
            int64_t count = 0;
            window(oy, ox, [&](int64_t base) {
              acc = is_max ? std::max(acc, x[base + ch]) : acc + x[base + ch];
              ++count;
            });
            y[(oy * ow + ox) * c + ch] = count == 0 ? 0.0f : (is_max ? acc : acc / static_cast<float>(count));
          }
    }
  };
  reference(l, fn);
  if (!all_int(l)) return float_path(l, fn, flags);
  const QTensor& xq = q_[l.inputs[0]];
  QTensor& yq = int_output(l.output);
  const int bits = int_bits(yq.dtype);
  std::map<int64_t, FixedMultiplier> by_count;  // average: s_x / (s_y * count)
  auto mult_for = [&](int64_t count) {
    auto it = by_count.find(count);
    if (it == by_count.end()) {
      it = by_count.emplace(count, make_multiplier(xq.scale / (yq.scale * static_cast<double>(is_max ? 1 : count)))).first;
    }
    return it->second;
  };
  for (int64_t s = 0; s < n_eval_; ++s) {
    const int32_t* x = xq.q.data() + s * h * w * c;
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t ch = 0; ch < c; ++ch) {
          int64_t acc = is_max ? INT64_MIN : 0;
          int64_t count = 0;
          window(oy, ox, [&](int64_t base) {
            acc = is_max ? std::max<int64_t>(acc, x[base + ch]) : acc + x[base + ch];
            ++count;
          });
          const int64_t idx = s * oh * ow * c + (oy * ow + ox) * c + ch;
          bool sat = false;
          yq.q[idx] = count == 0 ? 0 : static_cast<int32_t>(requantize(acc, mult_for(count), bits, &sat));
          if (sat) flags[idx] |= kRequantSaturated;
        }
  }
}

void Runner::global_avgpool_layer(const Layer& l, std::vector<uint8_t>& flags) {
  need_hwc(l);
  const Tensor& xt = g_.tensors[l.inputs[0]];
  const int64_t hw = xt.shape[0] * xt.shape[1], c = xt.shape[2];
  const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t s = 0; s < n; ++s)
      for (int64_t ch = 0; ch < c; ++ch) {
        float acc = 0;
        for (int64_t p = 0; p < hw; ++p) acc += in[0][(s * hw + p) * c + ch];
        out[s * c + ch] = acc / static_cast<float>(hw);
      }
  };
  reference(l, fn);
  if (!all_int(l)) return float_path(l, fn, flags);
  const QTensor& xq = q_[l.inputs[0]];
  QTensor& yq = int_output(l.output);
  const int bits = int_bits(yq.dtype);
  const FixedMultiplier m = make_multiplier(xq.scale / (yq.scale * static_cast<double>(hw)));
  for (int64_t s = 0; s < n_eval_; ++s)
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t acc = 0;
      for (int64_t p = 0; p < hw; ++p) acc += xq.q[(s * hw + p) * c + ch];
      bool sat = false;
      yq.q[s * c + ch] = static_cast<int32_t>(requantize(acc, m, bits, &sat));
      if (sat) flags[s * c + ch] |= kRequantSaturated;
    }
}

// Rescales integer codes from one scale to another (identity when they are equal).
void Runner::rescale_into(const QTensor& from, QTensor& to, int64_t from_off, int64_t to_off, int64_t count,
                          std::vector<uint8_t>& flags) const {
  const FixedMultiplier m = make_multiplier(from.scale / to.scale);
  const int bits = int_bits(to.dtype);
  for (int64_t i = 0; i < count; ++i) {
    bool sat = false;
    to.q[to_off + i] = static_cast<int32_t>(requantize(from.q[from_off + i], m, bits, &sat));
    if (sat) flags[to_off + i] |= kRequantSaturated;
  }
}

void Runner::flatten_layer(const Layer& l, std::vector<uint8_t>& flags) {
  const int64_t e = elems(l.output);
  if (elems(l.inputs.at(0)) != e) unsupported(l, "a " + op_text(l.op) + " that changes the element count");
  const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
    std::copy(in[0], in[0] + n * e, out);
  };
  reference(l, fn);
  if (!all_int(l)) return float_path(l, fn, flags);
  rescale_into(q_[l.inputs[0]], int_output(l.output), 0, 0, n_eval_ * e, flags);
}

void Runner::concat_layer(const Layer& l, std::vector<uint8_t>& flags) {
  const Shape& ys = g_.tensors[l.output].shape;
  int64_t axis = l.axis < 0 ? l.axis + static_cast<int64_t>(ys.size()) : l.axis;
  if (axis < 0 || axis >= static_cast<int64_t>(ys.size())) unsupported(l, "this concat axis");
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= ys[a];
  for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < ys.size(); ++a) inner *= ys[a];
  std::vector<int64_t> part;  // elements each input contributes per outer index
  int64_t total = 0;
  for (int t : l.inputs) {
    const Shape& s = g_.tensors[t].shape;
    if (s.size() != ys.size()) unsupported(l, "concat of tensors of different rank");
    part.push_back(s[axis] * inner);
    total += part.back();
  }
  if (total * outer != elems(l.output)) unsupported(l, "this concat shape");
  const int64_t ey = elems(l.output);
  // Visits (input, source offset, destination offset, count) runs of one sample.
  auto runs = [&](int64_t s, auto&& visit) {
    for (int64_t o = 0; o < outer; ++o) {
      int64_t dst = s * ey + o * total;
      for (std::size_t i = 0; i < part.size(); ++i) {
        visit(i, s * outer * part[i] + o * part[i], dst, part[i]);
        dst += part[i];
      }
    }
  };
  const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t s = 0; s < n; ++s)
      runs(s, [&](std::size_t i, int64_t src, int64_t dst, int64_t count) {
        std::copy(in[i] + src, in[i] + src + count, out + dst);
      });
  };
  reference(l, fn);
  if (!all_int(l)) return float_path(l, fn, flags);
  QTensor& yq = int_output(l.output);
  for (int64_t s = 0; s < n_eval_; ++s)
    runs(s, [&](std::size_t i, int64_t src, int64_t dst, int64_t count) {
      rescale_into(q_[l.inputs[i]], yq, src, dst, count, flags);
    });
}

// The constant operand of an element-wise op: the workload's values when it gives
// them, except an all-zero tensor of more than one element (stripped weights, as in
// the generated ONNX models); otherwise seeded values: 1 + 0.1 z for mul/div (a
// scale near one, like LayerNorm's gamma), 0.1 z for the others (a shift, like beta
// or a position embedding). Kept in fp32 in both paths (a vector-unit parameter).
std::vector<float> Runner::constant_operand(int li) const {
  const Layer& l = g_.layers[li];
  const int64_t n = graph::shape_elements(l.const_shape);
  const bool known = static_cast<int64_t>(l.const_values.size()) == n &&
                     (n == 1 || std::any_of(l.const_values.begin(), l.const_values.end(), [](float v) { return v != 0; }));
  if (known) return l.const_values;
  const bool scale = l.op == OpKind::kMul || l.op == OpKind::kDiv;
  const Stream st(opt_.seed, kConstants, static_cast<uint64_t>(li));
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = (scale ? 1.0f : 0.0f) + 0.1f * st.normal(static_cast<uint64_t>(i));
  return v;
}

// add, sub, mul, div, pow, max, min: two inputs or one and a constant, broadcasting.
// Same-shape integer add and mul run the vector unit's integer arithmetic; the rest
// dequantize, compute in fp32 and requantize.
void Runner::binary_layer(int li, std::vector<uint8_t>& flags) {
  const Layer& l = g_.layers[li];
  const bool with_const = l.has_const;
  if (l.inputs.size() != (with_const ? 1u : 2u)) unsupported(l, op_text(l.op) + " with " + std::to_string(l.inputs.size()) + " inputs");
  const Shape& ys = g_.tensors[l.output].shape;
  const int64_t ey = elems(l.output), ea = elems(l.inputs[0]);
  const int64_t eb = with_const ? 0 : elems(l.inputs[1]);
  const std::vector<int64_t> map_a = broadcast_map(g_.tensors[l.inputs[0]].shape, ys);
  const std::vector<int64_t> map_b = broadcast_map(with_const ? l.const_shape : g_.tensors[l.inputs[1]].shape, ys);
  if (map_a.empty() || map_b.empty()) unsupported(l, op_text(l.op) + " with this broadcast");
  const std::vector<float> cv = with_const ? constant_operand(li) : std::vector<float>{};
  const OpKind op = l.op;
  float (*const binary_op)(float, float) = op_def(op).binary;
  const bool swap = with_const && l.const_first;  // 1 - x, c / x
  const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t s = 0; s < n; ++s)
      for (int64_t i = 0; i < ey; ++i) {
        float a = in[0][s * ea + map_a[i]];
        float b = with_const ? cv[map_b[i]] : in[1][s * eb + map_b[i]];
        if (swap) std::swap(a, b);
        out[s * ey + i] = binary_op(a, b);
      }
  };
  reference(l, fn);
  const bool same_shape = !with_const && ea == ey && eb == ey && g_.tensors[l.inputs[0]].shape == ys &&
                          g_.tensors[l.inputs[1]].shape == ys;
  if (!(same_shape && (op == OpKind::kAdd || op == OpKind::kMul) && all_int(l))) return float_path(l, fn, flags);
  const QTensor& aq = q_[l.inputs[0]];
  const QTensor& bq = q_[l.inputs[1]];
  QTensor& yq = int_output(l.output);
  const int bits = int_bits(yq.dtype);
  if (op == OpKind::kAdd) {  // y = (s_a q_a + s_b q_b) / s_y with one rounding
    const FixedPair p = make_multiplier_pair(aq.scale / yq.scale, bq.scale / yq.scale);
    for (int64_t i = 0; i < n_eval_ * ey; ++i) {
      bool sat = false;
      yq.q[i] = static_cast<int32_t>(saturate(apply_pair(aq.q[i], bq.q[i], p), bits, &sat));
      if (sat) flags[i] |= kRequantSaturated;
    }
  } else {  // y = q_a q_b * (s_a s_b / s_y)
    const FixedMultiplier m = make_multiplier(aq.scale * bq.scale / yq.scale);
    for (int64_t i = 0; i < n_eval_ * ey; ++i) {
      bool sat = false;
      yq.q[i] = static_cast<int32_t>(requantize(int64_t{aq.q[i]} * bq.q[i], m, bits, &sat));
      if (sat) flags[i] |= kRequantSaturated;
    }
  }
}

// relu (integer max), and table functions: sigmoid, tanh, sqrt, erf, exp, gelu
// (code -> f(code * s_x) -> code at s_y, which is what a lookup table computes).
void Runner::unary_layer(const Layer& l, std::vector<uint8_t>& flags) {
  const int64_t e = elems(l.output);
  if (elems(l.inputs.at(0)) != e) unsupported(l, "this " + op_text(l.op) + " shape");
  const OpKind op = l.op;
  float (*const unary_op)(float) = op_def(op).unary;
  const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t i = 0; i < n * e; ++i) out[i] = unary_op(in[0][i]);
  };
  reference(l, fn);
  if (!all_int(l)) return float_path(l, fn, flags);
  const QTensor& xq = q_[l.inputs[0]];
  QTensor& yq = int_output(l.output);
  const int bits = int_bits(yq.dtype);
  if (op == OpKind::kRelu) {  // integer max(q, 0), then rescale
    const FixedMultiplier m = make_multiplier(xq.scale / yq.scale);
    for (int64_t i = 0; i < n_eval_ * e; ++i) {
      bool sat = false;
      yq.q[i] = static_cast<int32_t>(requantize(std::max<int64_t>(xq.q[i], 0), m, bits, &sat));
      if (sat) flags[i] |= kRequantSaturated;
    }
    return;
  }
  for (int64_t i = 0; i < n_eval_ * e; ++i) {
    bool sat = false;
    yq.q[i] = static_cast<int32_t>(
        quantize(unary_op(static_cast<float>(dequantize(xq.q[i], xq.scale))), yq.scale, bits, &sat));
    if (sat) flags[i] |= kRequantSaturated;
  }
}

// reduce_mean/sum/max over `axes` (all when empty), global_maxpool over H and W:
// integer sums (or maxima) of the codes, one requantization s_x / (s_y count).
void Runner::reduce_layer(const Layer& l, std::vector<uint8_t>& flags) {
  const Shape& xs = g_.tensors[l.inputs.at(0)].shape;
  std::vector<bool> reduced(xs.size(), l.axes.empty());
  if (l.op == OpKind::kGlobalMaxPool) {
    need_hwc(l);
    reduced = {true, true, false};
  } else {
    for (int64_t a : l.axes) reduced.at(static_cast<std::size_t>(a)) = true;
  }
  // For each input element, its output element: strides of the kept axes, 0 on reduced ones.
  Shape kept;
  for (std::size_t a = 0; a < xs.size(); ++a) kept.push_back(reduced[a] ? 1 : xs[a]);
  std::vector<int64_t> stride = row_major_strides(kept);
  for (std::size_t a = 0; a < xs.size(); ++a)
    if (reduced[a]) stride[a] = 0;
  const std::vector<int64_t> dst = index_map(xs, stride);
  const int64_t ex = elems(l.inputs[0]), ey = elems(l.output);
  if (product(kept) != ey) unsupported(l, "this " + op_text(l.op) + " shape");
  const int64_t count = ex / ey;
  const bool is_max = l.op == OpKind::kReduceMax || l.op == OpKind::kGlobalMaxPool;
  const bool is_mean = l.op == OpKind::kReduceMean;
  const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t s = 0; s < n; ++s) {
      float* y = out + s * ey;
      std::fill(y, y + ey, is_max ? -std::numeric_limits<float>::infinity() : 0.0f);
      const float* x = in[0] + s * ex;
      for (int64_t i = 0; i < ex; ++i) y[dst[i]] = is_max ? std::max(y[dst[i]], x[i]) : y[dst[i]] + x[i];
      if (is_mean)
        for (int64_t j = 0; j < ey; ++j) y[j] /= static_cast<float>(count);
    }
  };
  reference(l, fn);
  if (!all_int(l)) return float_path(l, fn, flags);
  const QTensor& xq = q_[l.inputs[0]];
  QTensor& yq = int_output(l.output);
  const int bits = int_bits(yq.dtype);
  const FixedMultiplier m = make_multiplier(xq.scale / (yq.scale * static_cast<double>(is_mean ? count : 1)));
  std::vector<int64_t> acc(static_cast<std::size_t>(ey));
  for (int64_t s = 0; s < n_eval_; ++s) {
    std::fill(acc.begin(), acc.end(), is_max ? INT64_MIN : 0);
    const int32_t* x = xq.q.data() + s * ex;
    for (int64_t i = 0; i < ex; ++i) acc[dst[i]] = is_max ? std::max<int64_t>(acc[dst[i]], x[i]) : acc[dst[i]] + x[i];
    for (int64_t j = 0; j < ey; ++j) {
      bool sat = false;
      yq.q[s * ey + j] = static_cast<int32_t>(requantize(acc[j], m, bits, &sat));
      if (sat) flags[s * ey + j] |= kRequantSaturated;
    }
  }
}

// transpose, slice, expand: every output element copies one input element; integer
// codes are rescaled s_x / s_y (an exact identity when the calibrated ranges agree).
void Runner::move_layer(const Layer& l, std::vector<uint8_t>& flags) {
  const Shape& xs = g_.tensors[l.inputs.at(0)].shape;
  const Shape& ys = g_.tensors[l.output].shape;
  const std::vector<int64_t> xst = row_major_strides(xs);
  std::vector<int64_t> src;
  if (l.op == OpKind::kTranspose) {
    if (l.perm.size() != xs.size()) unsupported(l, "this transpose perm");
    std::vector<int64_t> stride;
    for (int64_t p : l.perm) stride.push_back(xst.at(static_cast<std::size_t>(p)));
    src = index_map(ys, stride);
  } else if (l.op == OpKind::kSlice) {
    const auto axis = static_cast<std::size_t>(l.axis);  // normalised by infer_layer
    const int64_t dim = xs.at(axis);
    int64_t b = l.slice_begin < 0 ? l.slice_begin + dim : l.slice_begin;
    b = l.slice_step > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, -1, dim - 1);
    std::vector<int64_t> stride = xst;
    stride[axis] *= l.slice_step;
    src = index_map(ys, stride, b * xst[axis]);
  } else {
    src = broadcast_map(xs, ys);
  }
  if (static_cast<int64_t>(src.size()) != elems(l.output)) unsupported(l, "this " + op_text(l.op) + " shape");
  const int64_t ex = elems(l.inputs[0]), ey = elems(l.output);
  const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t s = 0; s < n; ++s)
      for (int64_t i = 0; i < ey; ++i) out[s * ey + i] = in[0][s * ex + src[i]];
  };
  reference(l, fn);
  if (!all_int(l)) return float_path(l, fn, flags);
  const QTensor& xq = q_[l.inputs[0]];
  QTensor& yq = int_output(l.output);
  const int bits = int_bits(yq.dtype);
  const FixedMultiplier m = make_multiplier(xq.scale / yq.scale);
  for (int64_t s = 0; s < n_eval_; ++s)
    for (int64_t i = 0; i < ey; ++i) {
      bool sat = false;
      yq.q[s * ey + i] = static_cast<int32_t>(requantize(xq.q[s * ex + src[i]], m, bits, &sat));
      if (sat) flags[s * ey + i] |= kRequantSaturated;
    }
}

// A vector op without an integer path (softmax, layer_norm, ...): its OpDef's fp32
// kernel is the reference; the quantized path dequantizes, computes the same and
// requantizes at the output scale.
void Runner::fp32_layer(const Layer& l, const FloatFn& fn, std::vector<uint8_t>& flags) {
  reference(l, fn);
  float_path(l, fn, flags);
}

}  // namespace tessera::functional::internal
