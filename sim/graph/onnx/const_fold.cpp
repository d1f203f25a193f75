// Constant and shape sub-graphs: a node whose data inputs are all constant is evaluated
// here (Shape -> Gather -> Concat -> Reshape, small weights); only shapes are kept when
// the data is too large or not known. Each op's row (op_table.cpp) names its family;
// element-wise families compute through the IR OpDef's fp32 kernel.
#include "sim/graph/onnx/const_fold.h"

#include <algorithm>
#include <cmath>

#include "sim/common/checked_math.h"
#include "sim/graph/onnx/ops.h"
#include "sim/graph/onnx/shape_inference.h"
#include "sim/graph/ops/registry.h"

namespace tessera::graph::onnx_import {

namespace {
// Element k as a double; nullopt when it carries the batch.
std::optional<double> plain_double(const Value& v, int64_t k) {
  if (v.is_float) return v.floats[static_cast<size_t>(k)];
  const Sym s = v.ints[static_cast<size_t>(k)];
  return s.p ? std::nullopt : std::optional<double>(s.v);
}

void push_elem(const Value& v, int64_t k, Value& o) {
  if (v.is_float) o.floats.push_back(v.floats[static_cast<size_t>(k)]);
  else o.ints.push_back(v.ints[static_cast<size_t>(k)]);
}

// Strides of a row-major shape.
std::vector<int64_t> strides_of(const std::vector<int64_t>& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

bool small_enough(const SymShape& s, bool is_float) {
  if (!all_plain(s)) return false;
  for (Sym d : s) {
    if (d.v < 0) return false;
  }
  const int64_t n = count(plain_dims(s));
  return n <= (is_float ? kMaxFoldFloats : kMaxFoldInts);
}
}  // namespace

// QuantizeLinear: saturate(round(x / scale) + zero_point), halves to even; DequantizeLinear:
// (x - zero_point) * scale. Scale and zero point per tensor (scalars) or per axis (1-D,
// along `axis`); the data when everything is known and small (blocked forms: the shape).
void Folder::quantize_data(const Value& x) {
  Importer& m = m_;
  const onnx::NodeProto& n = n_;
  Value& res = res_;
  const bool dq = kind() == OpKind::kDequantize;
  const int32_t code = dq ? x.elem : QuantOps(m).quantize_elem(n);
  res.quant_elem = code;
  res.elem = dq ? onnx::TensorProto_DataType_FLOAT : code;
  res.is_float = dq;
  const Value& sv = m.val(n, 1);
  const Value* zv = m.opt_val(n, 2);
  if (!x.has_data || !sv.has_data || (zv && !zv->has_data) || !all_plain(x.shape) || !small_enough(x.shape, res.is_float)) {
    return;
  }
  const std::vector<double> scale = m.const_floats(n, 1, "scale");
  const std::vector<double> zero = zv ? m.const_floats(n, 2, "zero point") : std::vector<double>{0.0};
  const auto dims = plain_dims(x.shape);
  int64_t dim = 1, inner = 1;
  if (scale.size() != 1) {
    if (sv.shape.size() != 1 || dims.empty()) return;  // blocked quantization: shapes only
    const int64_t axis = norm_axis(m.attr_i(n, "axis", 1), dims.size(), "axis");
    dim = dims[static_cast<size_t>(axis)];
    inner = count(std::vector<int64_t>(dims.begin() + axis + 1, dims.end()));
    if (static_cast<int64_t>(scale.size()) != dim) {
      throw ShapeError("scale has " + std::to_string(scale.size()) + " values for axis " + std::to_string(axis) + " of " +
                       std::to_string(dim));
    }
  }
  if (zero.size() != 1 && zero.size() != scale.size()) {
    throw ShapeError("zero point has " + std::to_string(zero.size()) + " values for " + std::to_string(scale.size()) + " scales");
  }
  double lo = -128, hi = 127;
  if (code == onnx::TensorProto_DataType_UINT8) lo = 0, hi = 255;
  else if (code == onnx::TensorProto_DataType_INT16) lo = -32768, hi = 32767;
  else if (!dq && code != onnx::TensorProto_DataType_INT8) return;  // other code types: shapes only
  const int64_t total = count(dims);
  for (int64_t k = 0; k < total; ++k) {
    const auto v = plain_double(x, k);
    if (!v) return res.ints.clear(), res.floats.clear();
    const size_t c = scale.size() == 1 ? 0 : static_cast<size_t>((k / inner) % dim);
    const double s = scale[c], z = zero[zero.size() == 1 ? 0 : c];
    if (dq) {
      res.floats.push_back((*v - z) * s);
    } else {
      const double q = std::clamp(std::nearbyint(*v / s) + z, lo, hi);
      if (std::isnan(q)) return res.ints.clear(), res.floats.clear();
      res.ints.push_back({static_cast<int64_t>(q), 0});
    }
  }
  res.has_data = true;
}

OpKind Folder::kind() const { return row_->kind_of ? row_->kind_of(m_, n_) : row_->kind; }

void Folder::run() {
  res_.constant = true;
  if (!row_ || !row_->fold) {
    first();
    throw Unsupported{"op " + n_.op_type() + " on constant inputs is not supported"};
  }
  (this->*row_->fold)();
}

const Value& Folder::first() {
  if (n_.input_size() == 0 || n_.input(0).empty()) throw Unsupported{"a generator op (no inputs) is not supported"};
  const Value& x = m_.val(n_, 0);
  res_.elem = x.elem;
  res_.is_float = x.is_float;
  m_.absorb(n_, "folded");
  return x;
}

void Folder::finish(int output) {
  Value& res = res_;
  if (res.has_data) {
    const int64_t want = count(m_.full_dims(res.shape));
    const int64_t got = res.is_float ? static_cast<int64_t>(res.floats.size()) : static_cast<int64_t>(res.ints.size());
    if (!all_plain(res.shape) || want != got) res.has_data = false, res.ints.clear(), res.floats.clear();
  }
  if (res.has_data && !m_.tensors_.within_budget(static_cast<int64_t>(res.is_float ? res.floats.size() : res.ints.size()),
                                               res.shape.size() && !small_enough(res.shape, res.is_float))) {
    res.has_data = false, res.ints.clear(), res.floats.clear();  // the model holds too much constant data: shapes only
  }
  if (n_.output_size() > output && !n_.output(output).empty()) m_.values_[n_.output(output)] = res;
}

void Folder::finish_same_shape() {
  for (int i = 1; i < n_.output_size(); ++i) {  // e.g. Dropout's mask
    if (!n_.output(i).empty()) {
      Value extra;
      extra.shape = res_.shape;
      m_.values_[n_.output(i)] = extra;
    }
  }
  finish();
}

// ---------------------------------------------------------------- generators

void Folder::constant() {
  const onnx::NodeProto& n = n_;
  Value& res = res_;
  if (const auto* a = attr(n, "value")) {
    for (int64_t d : a->t().dims()) res.shape.push_back({d, 0});
    res.elem = a->t().data_type();
    m_.tensors_.read(a->t(), res, true, m_.where(n) + " value");
  } else if (const auto* f = attr(n, "value_float")) {
    res.is_float = true, res.has_data = true, res.floats = {f->f()};
  } else if (const auto* fs = attr(n, "value_floats")) {
    res.is_float = true, res.has_data = true, res.shape = {{fs->floats_size(), 0}};
    res.floats.assign(fs->floats().begin(), fs->floats().end());
  } else if (const auto* i = attr(n, "value_int")) {
    res.has_data = true, res.ints = {{i->i(), 0}};
  } else if (const auto* is = attr(n, "value_ints")) {
    res.has_data = true, res.shape = {{is->ints_size(), 0}};
    for (int64_t v : is->ints()) res.ints.push_back({v, 0});
  } else {
    throw Unsupported{"Constant without a value, value_float(s) or value_int(s) attribute"};
  }
  m_.absorb(n, "folded");
  finish();
}

void Folder::constant_of_shape() {
  Value& res = res_;
  const std::vector<Sym> dims = m_.const_syms(n_, 0, "the shape");
  for (Sym d : dims) {
    if (d.v < 0) throw ShapeError("the shape " + sym_shape_text(dims) + " has a negative dimension");
  }
  res.shape.assign(dims.begin(), dims.end());
  Value fill;
  fill.is_float = true, fill.floats = {0.0};
  if (const auto* a = attr(n_, "value")) m_.tensors_.read(a->t(), fill, true, m_.where(n_) + " value");
  res.is_float = fill.is_float;
  if (small_enough(res.shape, res.is_float)) {
    const int64_t cnt = count(plain_dims(res.shape));
    for (int64_t k = 0; k < cnt; ++k) push_elem(fill, 0, res);
    res.has_data = true;
  }
  m_.absorb(n_, "folded");
  finish();
}

void Folder::range() {
  Importer& m = m_;
  const onnx::NodeProto& n = n_;
  Value& res = res_;
  const Value& s = m.val(n, 0);
  res.is_float = s.is_float || m.val(n, 1).is_float || m.val(n, 2).is_float;
  int64_t cnt = 0;
  const std::string too_many = "Range has more than 2^50 elements (at most " + std::to_string(kMaxTensorElements) + ")";
  if (res.is_float) {
    const auto st = m.const_floats(n, 0, "start"), li = m.const_floats(n, 1, "limit"), de = m.const_floats(n, 2, "delta");
    if (st.size() != 1 || li.size() != 1 || de.size() != 1) throw ShapeError("start, limit and delta must be scalars");
    if (de[0] == 0) m.fail_node(n, "Range delta is 0");
    const double c = std::ceil((li[0] - st[0]) / de[0]);
    if (!(c <= static_cast<double>(kMaxTensorElements))) throw ShapeError(too_many);  // NaN too
    cnt = static_cast<int64_t>(std::max(0.0, c));
    if (cnt <= kMaxFoldInts) {
      for (int64_t k = 0; k < cnt; ++k) res.floats.push_back(st[0] + static_cast<double>(k) * de[0]);
      res.has_data = true;
    }
  } else {
    // Integers exactly: the count is ceil((limit - start) / delta), checked.
    const auto st = m.const_ints(n, 0, "start"), li = m.const_ints(n, 1, "limit"), de = m.const_ints(n, 2, "delta");
    if (st.size() != 1 || li.size() != 1 || de.size() != 1) throw ShapeError("start, limit and delta must be scalars");
    if (de[0] == 0) m.fail_node(n, "Range delta is 0");
    const int64_t span = sub64(li[0], st[0]);
    const auto q = checked_div(span, de[0]);
    if (!q) overflow(span, "/", de[0]);
    cnt = *q + (span % de[0] != 0 && (span > 0) == (de[0] > 0) ? 1 : 0);
    cnt = std::max<int64_t>(cnt, 0);
    if (cnt > kMaxTensorElements) throw ShapeError(too_many);
    if (cnt <= kMaxFoldInts) {
      for (int64_t k = 0; k < cnt; ++k) res.ints.push_back({add64(st[0], mul64(k, de[0])), 0});
      res.has_data = true;
    }
  }
  res.shape = {{cnt, 0}};
  m.absorb(n, "folded");
  finish();
}

// ---------------------------------------------------------------- shapes

void Folder::shape() {
  const SymShape s = first().shape;
  const auto r = static_cast<int64_t>(s.size());
  int64_t b = m_.attr_i(n_, "start", 0), e = m_.attr_i(n_, "end", r);
  if (b < 0) b += r;
  if (e < 0) e += r;
  b = std::clamp<int64_t>(b, 0, r), e = std::clamp<int64_t>(e, 0, r);
  for (int64_t i = b; i < e; ++i) res_.ints.push_back(s[static_cast<size_t>(i)]);
  res_.shape = {{static_cast<int64_t>(res_.ints.size()), 0}};
  res_.is_float = false;
  res_.elem = onnx::TensorProto_DataType_INT64;
  res_.has_data = true;
  finish();
}

void Folder::size() {
  Sym t{1, 0};
  for (Sym d : first().shape) t = sym_mul(t, d);
  res_.shape = {};
  res_.ints = {t};
  res_.is_float = false;
  res_.elem = onnx::TensorProto_DataType_INT64;
  res_.has_data = true;
  finish();
}

// ---------------------------------------------------------------- same shape

void Folder::pass() {
  const Value& x = first();
  res_.shape = x.shape;
  res_.has_data = x.has_data, res_.ints = x.ints, res_.floats = x.floats;
  res_.quant_elem = x.quant_elem;
  finish_same_shape();
}

void Folder::cast() {
  const Value& x = first();
  Value& res = res_;
  res.shape = x.shape;
  // Cast: the attribute `to`; CastLike: input 1's type.
  const int32_t to = m_.has_input(n_, 1) ? m_.val(n_, 1).elem : static_cast<int32_t>(m_.attr_i(n_, "to", 1));
  res.elem = to;
  res.is_float = is_float_type(to);
  if (x.has_data) {
    res.has_data = true;
    if (res.is_float && !x.is_float) {
      for (Sym s : x.ints) {
        if (s.p) res.has_data = false;
        res.floats.push_back(static_cast<double>(s.v));
      }
    } else if (!res.is_float && x.is_float) {
      for (double d : x.floats) {
        // NaN, infinities and values past int64 have no integer: not folded.
        const auto i = checked_to_int64(d);
        if (!i) res.has_data = false;
        res.ints.push_back({i.value_or(0), 0});
      }
    } else {
      res.ints = x.ints, res.floats = x.floats;
    }
  }
  finish_same_shape();
}

void Folder::quantization() {
  const Value& x = first();
  res_.shape = x.shape;
  quantize_data(x);
  finish_same_shape();
}

void Folder::same_shape() {
  res_.shape = first().shape;
  finish_same_shape();
}

// Floats through the OpDef's kernel (in fp32, as the vector unit computes it); integers
// exactly (sym_unary), or not at all.
void Folder::unary() {
  const Value& x = first();
  Value& res = res_;
  res.shape = x.shape;
  if (x.has_data) {
    const OpKind k = kind();
    const graph::OpDef& def = graph::op_def(k);
    const bool scalar = def.binary != nullptr;  // Neg, Reciprocal: a binary op with the row's scalar
    const auto with_scalar = [&](float v) {
      return row_->scalar_first ? def.binary(row_->scalar, v) : def.binary(v, row_->scalar);
    };
    res.has_data = true;
    if (x.is_float) {
      for (double d : x.floats) {
        const auto v = static_cast<float>(d);
        res.floats.push_back(scalar ? with_scalar(v) : def.unary(v));
      }
    } else {
      for (Sym s : x.ints) {
        const auto r = scalar ? (row_->scalar_first ? sym_binary(k, {static_cast<int64_t>(row_->scalar), 0}, s)
                                                    : sym_binary(k, s, {static_cast<int64_t>(row_->scalar), 0}))
                              : sym_unary(k, s);
        if (r) res.ints.push_back(*r);
        else res.has_data = false;
      }
    }
  }
  finish_same_shape();
}

void Folder::clip() {
  Importer& m = m_;
  const onnx::NodeProto& n = n_;
  Value& res = res_;
  const Value& x = first();
  res.shape = x.shape;
  if (x.has_data) {
    // Bounds: attributes before opset 11, then inputs (absent: none).
    std::optional<double> lo, hi;
    if (m.opset() < 11) {
      if (m.has_attr(n, "min")) lo = m.attr_f(n, "min", 0);
      if (m.has_attr(n, "max")) hi = m.attr_f(n, "max", 0);
    } else {
      if (m.has_input(n, 1) && m.val(n, 1).has_data) lo = m.const_floats(n, 1, "min").at(0);
      if (m.has_input(n, 2) && m.val(n, 2).has_data) hi = m.const_floats(n, 2, "max").at(0);
    }
    const bool known = (m.opset() < 11 || ((!m.has_input(n, 1) || lo) && (!m.has_input(n, 2) || hi))) && all_plain(x.shape);
    res.has_data = known;
    for (int64_t k = 0; known && k < count(plain_dims(x.shape)); ++k) {
      const auto v = plain_double(x, k);
      if (!v) { res.has_data = false; break; }
      double r = *v;
      if (lo) r = std::max(r, *lo);
      if (hi) r = std::min(r, *hi);
      if (res.is_float) res.floats.push_back(r);
      else res.ints.push_back({static_cast<int64_t>(r), 0});
    }
    if (!res.has_data) res.ints.clear(), res.floats.clear();
  }
  finish_same_shape();
}

// ---------------------------------------------------------------- element-wise on several inputs

// x op y (broadcasting), data when both are known and small: floats through the OpDef's
// binary kernel, integers exactly (sym_binary).
Value Folder::binary_of(const Value& x, const Value& y) {
  const OpKind k = kind();
  const auto fn = graph::op_def(k).binary;
  Value res;
  res.elem = x.elem;
  res.shape = broadcast_sym(x.shape, y.shape);
  res.is_float = !row_->boolean && (x.is_float || y.is_float);
  if (x.has_data && y.has_data && small_enough(res.shape, res.is_float)) {
    const auto od = plain_dims(res.shape);
    const auto mx = broadcast_map(plain_dims(x.shape), od), my = broadcast_map(plain_dims(y.shape), od);
    res.has_data = true;
    for (size_t e = 0; e < mx.size(); ++e) {
      if (x.is_float || y.is_float) {
        const auto xv = plain_double(x, mx[e]), yv = plain_double(y, my[e]);
        if (!xv || !yv) { res.has_data = false; break; }
        const double r = fn(static_cast<float>(*xv), static_cast<float>(*yv));
        if (res.is_float) res.floats.push_back(r);
        else res.ints.push_back({static_cast<int64_t>(r), 0});
      } else {
        const auto r = sym_binary(k, x.ints[mx[e]], y.ints[my[e]]);
        if (!r) { res.has_data = false; break; }
        res.ints.push_back(*r);
      }
    }
    if (!res.has_data) res.ints.clear(), res.floats.clear();
  }
  return res;
}

void Folder::binary() {
  Value acc = first();
  for (int i = 1; i < n_.input_size(); ++i) acc = binary_of(acc, m_.val(n_, i));
  if (n_.input_size() > 1) res_ = acc;
  finish();
}

void Folder::where() {
  Value& res = res_;
  const Value& x = first();
  const Value& a = m_.val(n_, 1);
  const Value& b = m_.val(n_, 2);
  res.shape = broadcast_sym(broadcast_sym(x.shape, a.shape), b.shape);
  res.is_float = a.is_float;
  res.elem = a.elem;
  if (x.has_data && a.has_data && b.has_data && a.is_float == b.is_float && small_enough(res.shape, res.is_float)) {
    const auto od = plain_dims(res.shape);
    const auto mc = broadcast_map(plain_dims(x.shape), od), ma = broadcast_map(plain_dims(a.shape), od),
               mb = broadcast_map(plain_dims(b.shape), od);
    res.has_data = true;
    for (size_t k = 0; k < mc.size(); ++k) {
      const bool c = x.is_float ? x.floats[mc[k]] != 0 : x.ints[mc[k]].v != 0;
      push_elem(c ? a : b, c ? ma[k] : mb[k], res);
    }
  }
  finish();
}

// ---------------------------------------------------------------- data movement

void Folder::reshape() {
  const Value& x = first();
  res_.shape = NodeShapes(m_).reshape_like_shape(n_, x.shape, false);
  res_.has_data = x.has_data, res_.ints = x.ints, res_.floats = x.floats;
  res_.quant_elem = x.quant_elem;
  finish();
}

void Folder::concat() {
  Value& res = res_;
  const Value& x = first();
  const int64_t axis = norm_axis(m_.attr_i(n_, "axis", 0), x.shape.size(), "axis");
  res.shape = x.shape;
  res.shape[static_cast<size_t>(axis)] = {0, 0};
  bool data = true;
  for (int i = 0; i < n_.input_size(); ++i) {
    const Value& v = m_.val(n_, i);
    if (v.shape.size() != x.shape.size()) throw ShapeError("Concat inputs differ in rank");
    const Sym d = v.shape[static_cast<size_t>(axis)];
    Sym& o = res.shape[static_cast<size_t>(axis)];
    auto s = sym_binary(OpKind::kAdd, o, d);
    if (!s) throw Unsupported{"Concat along an axis that mixes the batch"};
    o = *s;
    data = data && v.has_data && v.is_float == x.is_float;
  }
  if (data && small_enough(res.shape, res.is_float)) {
    const auto od = plain_dims(res.shape);
    const int64_t outer = count(std::vector<int64_t>(od.begin(), od.begin() + axis));
    const int64_t inner = count(std::vector<int64_t>(od.begin() + axis + 1, od.end()));
    for (int64_t o = 0; o < outer; ++o) {
      for (int i = 0; i < n_.input_size(); ++i) {
        const Value& v = m_.val(n_, i);
        const int64_t block = v.shape[static_cast<size_t>(axis)].v * inner;
        for (int64_t k = 0; k < block; ++k) push_elem(v, o * block + k, res);
      }
    }
    res.has_data = true;
  }
  finish();
}

void Folder::gather() {
  Value& res = res_;
  const Value& x = first();
  const Value& idx = m_.val(n_, 1);
  const int64_t axis = norm_axis(m_.attr_i(n_, "axis", 0), x.shape.size(), "axis");
  res.shape = gather_shape(x.shape, idx.shape, axis);
  if (x.has_data && idx.has_data && small_enough(res.shape, res.is_float) && all_plain(x.shape)) {
    const auto xd = plain_dims(x.shape);
    const int64_t outer = count(std::vector<int64_t>(xd.begin(), xd.begin() + axis));
    const int64_t inner = count(std::vector<int64_t>(xd.begin() + axis + 1, xd.end()));
    const int64_t dim = xd[static_cast<size_t>(axis)];
    res.has_data = true;
    for (int64_t o = 0; o < outer && res.has_data; ++o) {
      for (size_t j = 0; j < idx.ints.size(); ++j) {
        const int64_t k = NodeShapes(m_).gather_index(n_, idx.ints[j].v, dim);
        for (int64_t in = 0; in < inner; ++in) push_elem(x, (o * dim + k) * inner + in, res);
      }
    }
  }
  finish();
}

void Folder::slice() {
  Value& res = res_;
  const Value& x = first();
  const auto [starts, ends, axes, steps] = NodeShapes(m_).read_slice(n_, x.shape.size());
  res.shape = x.shape;
  const size_t r = x.shape.size();
  std::vector<int64_t> b0(r, 0), st(r, 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = norm_axis(axes.at(i), r, "axis");
    if (x.shape[static_cast<size_t>(a)].p) throw Unsupported{"Slice of a constant along the batch"};
    int64_t b = starts[i], e = ends.at(i);
    const int64_t len = slice_len(x.shape[static_cast<size_t>(a)].v, b, e, steps.at(i));
    res.shape[static_cast<size_t>(a)] = {len, 0};
    b0[static_cast<size_t>(a)] = b, st[static_cast<size_t>(a)] = steps[i];
  }
  if (x.has_data && small_enough(res.shape, res.is_float) && all_plain(x.shape)) {
    const auto od = plain_dims(res.shape);
    const auto is = strides_of(plain_dims(x.shape));
    for_each_index(od, [&](const std::vector<int64_t>& idx) {
      int64_t src = 0;
      for (size_t i = 0; i < r; ++i) src += (b0[i] + idx[i] * st[i]) * is[i];
      push_elem(x, src, res);
    });
    res.has_data = true;
  }
  finish();
}

void Folder::expand() {
  const Value& x = first();
  res_.shape = NodeShapes(m_).expand_shape(n_, x.shape);
  if (x.has_data && small_enough(res_.shape, res_.is_float)) {
    for (int64_t k : broadcast_map(plain_dims(x.shape), plain_dims(res_.shape))) push_elem(x, k, res_);
    res_.has_data = true;
  }
  finish();
}

void Folder::transpose() {
  Value& res = res_;
  const Value& x = first();
  const std::vector<int64_t> perm = NodeShapes(m_).transpose_perm(n_, x.shape.size());
  res.shape = permute_shape(x.shape, perm);
  res.quant_elem = x.quant_elem;
  if (x.has_data && small_enough(res.shape, res.is_float) && all_plain(x.shape)) {
    const auto is = strides_of(plain_dims(x.shape));
    const auto od = plain_dims(res.shape);
    for_each_index(od, [&](const std::vector<int64_t>& idx) {
      int64_t src = 0;
      for (size_t i = 0; i < od.size(); ++i) src += idx[i] * is[static_cast<size_t>(perm[i])];
      push_elem(x, src, res);
    });
    res.has_data = true;
  }
  finish();
}

void Folder::split() {
  const Value& x = first();
  const int64_t axis = norm_axis(m_.attr_i(n_, "axis", 0), x.shape.size(), "axis");
  if (x.shape[static_cast<size_t>(axis)].p) throw Unsupported{"Split of a constant along the batch"};
  const std::vector<int64_t> sizes = LayoutOps(m_).split_sizes(n_, x.shape[static_cast<size_t>(axis)].v, axis);
  for (int i = 0; i < n_.output_size(); ++i) {
    res_.shape = x.shape;
    res_.shape[static_cast<size_t>(axis)].v = sizes.at(static_cast<size_t>(i));
    finish(i);
  }
}

void Folder::tile() {
  const Value& x = first();
  const auto reps = m_.const_ints(n_, 1, "repeats");
  if (reps.size() != x.shape.size()) {
    throw ShapeError("repeats has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(x.shape.size()));
  }
  res_.shape = x.shape;
  for (size_t i = 0; i < res_.shape.size(); ++i) {
    if (reps[i] < 0) throw ShapeError("repeats must be >= 0, got " + std::to_string(reps[i]));
    res_.shape[i].v = mul64(res_.shape[i].v, reps[i]);
  }
  if (x.has_data && all_plain(x.shape) && small_enough(res_.shape, res_.is_float)) {
    const auto xd = plain_dims(x.shape);
    const auto xs = strides_of(xd);
    for_each_index(plain_dims(res_.shape), [&](const std::vector<int64_t>& idx) {
      int64_t src = 0;
      for (size_t i = 0; i < xd.size(); ++i) src += (idx[i] % xd[i]) * xs[i];
      push_elem(x, src, res_);
    });
    res_.has_data = true;
  }
  finish();
}

// ---------------------------------------------------------------- along one axis

void Folder::cum_sum() { along_axis(AlongAxis::kCumSum); }
void Folder::arg_max() { along_axis(AlongAxis::kArgMax); }
void Folder::arg_min() { along_axis(AlongAxis::kArgMin); }
void Folder::top_k() { along_axis(AlongAxis::kTopK); }

void Folder::along_axis(AlongAxis how) {
  Importer& m = m_;
  const onnx::NodeProto& n = n_;
  Value& res = res_;
  const Value& x = first();
  const bool cumsum = how == AlongAxis::kCumSum, topk = how == AlongAxis::kTopK;
  const bool arg = how == AlongAxis::kArgMax || how == AlongAxis::kArgMin;
  const size_t r = x.shape.size();
  int64_t axis = 0, k = 0;
  if (cumsum) {
    const auto a = m.const_ints(n, 1, "axis");
    if (a.size() != 1) throw ShapeError("axis must be a scalar, got " + std::to_string(a.size()) + " values");
    axis = a[0];
  } else {
    axis = m.attr_i(n, "axis", topk ? -1 : 0);
  }
  axis = norm_axis(axis, r, "axis");
  const auto ax = static_cast<size_t>(axis);
  SymShape shape = x.shape;
  if (arg) shape = reduce_shape(x.shape, {axis}, m.attr_i(n, "keepdims", 1) != 0);
  if (topk) {
    if (m.opset() < 10) {
      k = m.attr_i(n, "k", -1);
    } else {
      const auto kv = m.const_ints(n, 1, "k");
      if (kv.size() != 1) throw ShapeError("k must hold one value, got " + std::to_string(kv.size()));
      k = kv[0];
    }
    if (x.shape[ax].p) throw Unsupported{"TopK of a constant along the batch"};
    if (k < 1 || k > x.shape[ax].v) {
      throw ShapeError("k = " + std::to_string(k) + " must be in [1, " + std::to_string(x.shape[ax].v) + "]");
    }
    shape[ax] = {k, 0};
  }
  res.shape = shape;
  if (arg) res.is_float = false, res.elem = onnx::TensorProto_DataType_INT64;
  Value idx;  // TopK's second output
  idx.shape = shape;
  idx.elem = onnx::TensorProto_DataType_INT64;
  std::vector<double> v;
  bool data = x.has_data && all_plain(x.shape) && small_enough(shape, res.is_float);
  for (int64_t e = 0; data && e < count(plain_dims(x.shape)); ++e) {
    const auto d = plain_double(x, e);
    if (!d) data = false;
    else v.push_back(*d);
  }
  if (data) {
    const auto xd = plain_dims(x.shape);
    const int64_t outer = count(std::vector<int64_t>(xd.begin(), xd.begin() + axis));
    const int64_t dim = xd[ax];
    const int64_t inner = count(std::vector<int64_t>(xd.begin() + axis + 1, xd.end()));
    const int64_t width = cumsum ? dim : topk ? k : 1;
    std::vector<double> vals(static_cast<size_t>(outer * width * inner)), pos(vals.size());
    std::vector<int64_t> order(static_cast<size_t>(dim));
    const bool largest = m.attr_i(n, "largest", 1) != 0, last = m.attr_i(n, "select_last_index", 0) != 0;
    const bool exclusive = m.attr_i(n, "exclusive", 0) != 0, reverse = m.attr_i(n, "reverse", 0) != 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        auto at = [&](int64_t d) { return v[static_cast<size_t>((o * dim + d) * inner + j)]; };
        auto put = [&](int64_t d, double value, double p) {
          const auto i = static_cast<size_t>((o * width + d) * inner + j);
          vals[i] = value, pos[i] = p;
        };
        if (cumsum) {
          double acc = 0;
          for (int64_t t = 0; t < dim; ++t) {
            const int64_t d = reverse ? dim - 1 - t : t;
            if (!exclusive) acc += at(d);
            put(d, acc, 0);
            if (exclusive) acc += at(d);
          }
        } else if (arg) {
          int64_t best = 0;
          for (int64_t d = 1; d < dim; ++d) {
            const double a = at(d), b = at(best);
            if (how == AlongAxis::kArgMax ? (a > b || (last && a == b)) : (a < b || (last && a == b))) best = d;
          }
          put(0, static_cast<double>(best), 0);
        } else {
          for (int64_t d = 0; d < dim; ++d) order[static_cast<size_t>(d)] = d;
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return largest ? at(a) > at(b) : at(a) < at(b);
          });
          for (int64_t d = 0; d < k; ++d) put(d, at(order[static_cast<size_t>(d)]), static_cast<double>(order[static_cast<size_t>(d)]));
        }
      }
    res.has_data = idx.has_data = true;
    for (size_t i = 0; i < vals.size(); ++i) {
      if (res.is_float) res.floats.push_back(vals[i]);
      else res.ints.push_back({static_cast<int64_t>(vals[i]), 0});
      idx.ints.push_back({static_cast<int64_t>(pos[i]), 0});
    }
  }
  finish(0);
  if (topk) {
    res = idx;
    finish(1);
  }
}

// ---------------------------------------------------------------- reductions

void Folder::reduce_sum() { reduce(Reduction::kSum); }
void Folder::reduce_mean() { reduce(Reduction::kMean); }
void Folder::reduce_max() { reduce(Reduction::kMax); }
void Folder::reduce_min() { reduce(Reduction::kMin); }
void Folder::reduce_prod() { reduce(Reduction::kProd); }
void Folder::reduce_shapes_only() { reduce(Reduction::kNone); }

void Folder::reduce(Reduction how) {
  Value& res = res_;
  const Value& x = first();
  std::vector<int64_t> axes = NodeShapes(m_).reduce_axes(n_);
  if (axes.empty() && m_.attr_i(n_, "noop_with_empty_axes", 0)) {
    res.shape = x.shape;
    res.has_data = x.has_data, res.ints = x.ints, res.floats = x.floats;
    return finish();
  }
  axes = norm_axes(axes, x.shape.size(), "axis");
  res.shape = reduce_shape(x.shape, axes, m_.attr_i(n_, "keepdims", 1) != 0);
  const bool known_op = how != Reduction::kNone && (how != Reduction::kMean || x.is_float);
  bool data = known_op && x.has_data && all_plain(x.shape) && small_enough(x.shape, x.is_float);
  std::vector<double> v;
  for (int64_t e = 0; data && e < count(plain_dims(x.shape)); ++e) {
    const auto d = plain_double(x, e);
    if (!d) data = false;
    else v.push_back(*d);
  }
  if (data) {
    const auto xd = plain_dims(x.shape);
    std::vector<bool> reduced(xd.size(), axes.empty());
    for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
    std::vector<int64_t> kept;
    for (size_t i = 0; i < xd.size(); ++i) kept.push_back(reduced[i] ? 1 : xd[i]);
    const auto ks = strides_of(kept);
    const int64_t outs = count(kept);
    std::vector<double> acc(static_cast<size_t>(outs)), cnt(static_cast<size_t>(outs), 0);
    std::vector<bool> first_seen(static_cast<size_t>(outs), true);
    int64_t e = 0;
    for_each_index(xd, [&](const std::vector<int64_t>& idx) {
      int64_t o = 0;
      for (size_t i = 0; i < xd.size(); ++i) o += reduced[i] ? 0 : idx[i] * ks[i];
      const auto oi = static_cast<size_t>(o);
      const double val = v[static_cast<size_t>(e++)];
      if (first_seen[oi]) acc[oi] = val, first_seen[oi] = false;
      else if (how == Reduction::kMax) acc[oi] = std::max(acc[oi], val);
      else if (how == Reduction::kMin) acc[oi] = std::min(acc[oi], val);
      else if (how == Reduction::kProd) acc[oi] *= val;
      else acc[oi] += val;
      cnt[oi] += 1;
    });
    res.has_data = true;
    for (size_t i = 0; i < acc.size(); ++i) {
      const double r = how == Reduction::kMean ? acc[i] / cnt[i] : acc[i];
      if (res.is_float) res.floats.push_back(r);
      else res.ints.push_back({static_cast<int64_t>(r), 0});
    }
  }
  finish();
}

// ---------------------------------------------------------------- shapes only

// y (uint8 codes), then its scale and zero point: scalars.
void Folder::dynamic_quantize() {
  const Value& x = first();
  res_.shape = x.shape;
  res_.elem = res_.quant_elem = onnx::TensorProto_DataType_UINT8;
  res_.is_float = false;
  finish(0);
  for (int i = 1; i < 3; ++i) {
    res_ = Value{};
    res_.elem = i == 1 ? onnx::TensorProto_DataType_FLOAT : onnx::TensorProto_DataType_UINT8;
    res_.is_float = i == 1;
    finish(i);
  }
}

void Folder::matmul() {
  const SymShape a = first().shape, b = m_.val(n_, 1).shape;
  if (a.size() < 2 || b.size() < 2) throw Unsupported{"1-D MatMul operands"};
  SymShape la(a.begin(), a.end() - 2), lb(b.begin(), b.end() - 2);
  res_.shape = broadcast_sym(la, lb);
  res_.shape.push_back(a[a.size() - 2]);
  res_.shape.push_back(b.back());
  finish();
}

void Folder::gemm() {
  const Value& x = first();
  const Value& b = m_.val(n_, 1);
  if (x.shape.size() != 2 || b.shape.size() != 2) {
    throw ShapeError("Gemm needs 2-D operands, got " + sym_shape_text(x.shape) + " and " + sym_shape_text(b.shape));
  }
  const Sym rows = m_.attr_i(n_, "transA", 0) ? x.shape.at(1) : x.shape.at(0);
  const Sym cols = m_.attr_i(n_, "transB", 0) ? b.shape.at(0) : b.shape.at(1);
  res_.shape = {rows, cols};
  finish();
}

void Folder::einsum() {
  first();
  std::vector<size_t> ranks;
  std::vector<const SymShape*> shapes;
  for (int i = 0; i < n_.input_size(); ++i) {
    ranks.push_back(m_.val(n_, i).shape.size());
    shapes.push_back(&m_.val(n_, i).shape);
  }
  res_.shape = MatrixOps(m_).einsum_shape(n_, MatrixOps(m_).einsum_spec(n_, ranks), shapes);
  finish();
}

}  // namespace tessera::graph::onnx_import
