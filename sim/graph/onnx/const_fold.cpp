// Constant and shape sub-graphs: a node whose data inputs are all constant is evaluated
// here (Shape -> Gather -> Concat -> Reshape, small weights); only shapes are kept when
// the data is too large or not known.
#include <algorithm>
#include <cmath>

#include "sim/common/checked_math.h"
#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

namespace {
const std::unordered_set<std::string>& binary_fold_ops() {
  static const std::unordered_set<std::string> s = {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Equal", "Less", "Greater",
                                                   "LessOrEqual", "GreaterOrEqual", "Max", "Min", "And", "Or"};
  return s;
}
const std::unordered_set<std::string>& unary_fold_ops() {
  static const std::unordered_set<std::string> s = {"Neg", "Sqrt", "Reciprocal", "Abs", "Floor", "Ceil", "Not", "Exp",
                                                   "Relu", "Sigmoid", "Tanh", "Erf", "Log", "Round"};
  return s;
}
// Ops that keep the shape of their (first) input.
const std::unordered_set<std::string>& same_shape_ops() {
  static const std::unordered_set<std::string> s = {
      "Identity", "Cast", "CastLike", "Dropout", "DequantizeLinear", "QuantizeLinear", "Relu", "Sigmoid", "Tanh", "Erf",
      "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Round", "Not", "Clip", "LeakyRelu",
      "HardSigmoid", "HardSwish", "Gelu", "Softmax", "LogSoftmax", "BatchNormalization", "LayerNormalization", "Sign"};
  return s;
}

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

bool Importer::all_constant(const Node& n) {
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) continue;
    if (!val(n, i).constant) return false;
  }
  return true;
}

void Importer::fold_or_shape(const Node& n) {
  const std::string& op = n.op_type();
  Value res;
  res.constant = true;
  auto finish = [&](int output = 0) {
    if (res.has_data) {
      const int64_t want = count(full_dims(res.shape));
      const int64_t got = res.is_float ? static_cast<int64_t>(res.floats.size()) : static_cast<int64_t>(res.ints.size());
      if (!all_plain(res.shape) || want != got) res.has_data = false, res.ints.clear(), res.floats.clear();
    }
    if (res.has_data && !within_decode_budget(static_cast<int64_t>(res.is_float ? res.floats.size() : res.ints.size()),
                                              res.shape.size() && !small_enough(res.shape, res.is_float))) {
      res.has_data = false, res.ints.clear(), res.floats.clear();  // the model holds too much constant data: shapes only
    }
    if (n.output_size() > output && !n.output(output).empty()) values_[n.output(output)] = res;
  };

  if (op == "Constant") {
    if (const auto* a = attr(n, "value")) {
      for (int64_t d : a->t().dims()) res.shape.push_back({d, 0});
      res.elem = a->t().data_type();
      read_tensor_data(a->t(), res, true, where(n) + " value");
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
    absorb(n, "folded");
    return finish();
  }
  if (op == "ConstantOfShape") {
    const std::vector<Sym> dims = const_syms(n, 0, "the shape");
    for (Sym d : dims) {
      if (d.v < 0) throw ShapeError("the shape " + sym_shape_text(dims) + " has a negative dimension");
    }
    res.shape.assign(dims.begin(), dims.end());
    Value fill;
    fill.is_float = true, fill.floats = {0.0};
    if (const auto* a = attr(n, "value")) read_tensor_data(a->t(), fill, true, where(n) + " value");
    res.is_float = fill.is_float;
    if (small_enough(res.shape, res.is_float)) {
      const int64_t cnt = count(plain_dims(res.shape));
      for (int64_t k = 0; k < cnt; ++k) push_elem(fill, 0, res);
      res.has_data = true;
    }
    absorb(n, "folded");
    return finish();
  }
  if (op == "Range") {
    const Value& s = val(n, 0);
    res.is_float = s.is_float || val(n, 1).is_float || val(n, 2).is_float;
    int64_t cnt = 0;
    const std::string too_many = "Range has more than 2^50 elements (at most " + std::to_string(kMaxTensorElements) + ")";
    if (res.is_float) {
      const auto st = const_floats(n, 0, "start"), li = const_floats(n, 1, "limit"), de = const_floats(n, 2, "delta");
      if (st.size() != 1 || li.size() != 1 || de.size() != 1) throw ShapeError("start, limit and delta must be scalars");
      if (de[0] == 0) fail_node(n, "Range delta is 0");
      const double c = std::ceil((li[0] - st[0]) / de[0]);
      if (!(c <= static_cast<double>(kMaxTensorElements))) throw ShapeError(too_many);  // NaN too
      cnt = static_cast<int64_t>(std::max(0.0, c));
      if (cnt <= kMaxFoldInts) {
        for (int64_t k = 0; k < cnt; ++k) res.floats.push_back(st[0] + static_cast<double>(k) * de[0]);
        res.has_data = true;
      }
    } else {
      // Integers exactly: the count is ceil((limit - start) / delta), checked.
      const auto st = const_ints(n, 0, "start"), li = const_ints(n, 1, "limit"), de = const_ints(n, 2, "delta");
      if (st.size() != 1 || li.size() != 1 || de.size() != 1) throw ShapeError("start, limit and delta must be scalars");
      if (de[0] == 0) fail_node(n, "Range delta is 0");
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
    absorb(n, "folded");
    return finish();
  }

  if (n.input_size() == 0 || n.input(0).empty()) throw Unsupported{"a generator op (no inputs) is not supported"};
  Value& x = val(n, 0);
  res.elem = x.elem;
  res.is_float = x.is_float;
  absorb(n, "folded");
  if (op == "Identity" || op == "Dropout" || op == "Cast" || op == "CastLike" || op == "DequantizeLinear" ||
      op == "QuantizeLinear" || unary_fold_ops().count(op) || same_shape_ops().count(op)) {
    res.shape = x.shape;
    if (op == "Cast" || op == "CastLike") {
      const int32_t to = op == "Cast" ? static_cast<int32_t>(attr_i(n, "to", 1)) : val(n, 1).elem;
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
    } else if (op == "Identity" || op == "Dropout") {
      res.has_data = x.has_data, res.ints = x.ints, res.floats = x.floats;
    } else if (unary_fold_ops().count(op) && x.has_data) {
      res.has_data = true;
      if (x.is_float) {
        for (double d : x.floats) {
          double r = d;
          if (op == "Neg") r = -d;
          else if (op == "Sqrt") r = std::sqrt(d);
          else if (op == "Reciprocal") r = 1.0 / d;
          else if (op == "Abs") r = std::fabs(d);
          else if (op == "Floor") r = std::floor(d);
          else if (op == "Ceil") r = std::ceil(d);
          else if (op == "Round") r = std::nearbyint(d);
          else if (op == "Exp") r = std::exp(d);
          else if (op == "Log") r = std::log(d);
          else if (op == "Relu") r = std::max(0.0, d);
          else if (op == "Sigmoid") r = 1.0 / (1.0 + std::exp(-d));
          else if (op == "Tanh") r = std::tanh(d);
          else if (op == "Erf") r = std::erf(d);
          else if (op == "Not") r = d == 0;
          res.floats.push_back(r);
        }
      } else {
        for (Sym s : x.ints) {
          if (op == "Neg") res.ints.push_back({sub64(0, s.v), s.p});
          else if (op == "Abs") res.ints.push_back({s.v < 0 ? sub64(0, s.v) : s.v, s.p});
          else if (op == "Not") res.ints.push_back({s.v == 0, 0});
          else if (op == "Relu") res.ints.push_back({std::max<int64_t>(0, s.v), s.p});
          else if (op == "Floor" || op == "Ceil" || op == "Round") res.ints.push_back(s);
          else res.has_data = false;
        }
      }
    }
    for (int i = 1; i < n.output_size(); ++i) {  // e.g. Dropout's mask
      if (!n.output(i).empty()) {
        Value extra;
        extra.shape = res.shape;
        values_[n.output(i)] = extra;
      }
    }
    return finish();
  }
  if (binary_fold_ops().count(op)) {
    const Value& y = val(n, 1);
    res.shape = broadcast_sym(x.shape, y.shape);
    const bool cmp = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
                     op == "And" || op == "Or";
    res.is_float = !cmp && (x.is_float || y.is_float);
    if (x.has_data && y.has_data && small_enough(res.shape, res.is_float)) {
      const auto od = plain_dims(res.shape);
      const auto mx = broadcast_map(plain_dims(x.shape), od), my = broadcast_map(plain_dims(y.shape), od);
      res.has_data = true;
      for (size_t k = 0; k < mx.size(); ++k) {
        if (x.is_float || y.is_float) {
          const auto xv = plain_double(x, mx[k]), yv = plain_double(y, my[k]);
          const auto r = xv && yv ? float_binary(op, *xv, *yv) : std::nullopt;
          if (!r) { res.has_data = false; break; }
          if (res.is_float) res.floats.push_back(*r);
          else res.ints.push_back({static_cast<int64_t>(*r), 0});
        } else {
          const auto r = sym_binary(op, x.ints[mx[k]], y.ints[my[k]], op == "Mod" && attr_i(n, "fmod", 0) != 0);
          if (!r) { res.has_data = false; break; }
          res.ints.push_back(*r);
        }
      }
    }
    return finish();
  }
  if (op == "Where") {
    const Value& a = val(n, 1);
    const Value& b = val(n, 2);
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
    return finish();
  }
  if (op == "Shape" || op == "Size") {
    SymShape s = x.shape;
    if (op == "Size") {
      Sym t{1, 0};
      for (Sym d : s) t = sym_mul(t, d);
      res.shape = {};
      res.ints = {t};
    } else {
      const auto r = static_cast<int64_t>(s.size());
      int64_t b = attr_i(n, "start", 0), e = attr_i(n, "end", r);
      if (b < 0) b += r;
      if (e < 0) e += r;
      b = std::clamp<int64_t>(b, 0, r), e = std::clamp<int64_t>(e, 0, r);
      for (int64_t i = b; i < e; ++i) res.ints.push_back(s[static_cast<size_t>(i)]);
      res.shape = {{static_cast<int64_t>(res.ints.size()), 0}};
    }
    res.is_float = false;
    res.elem = onnx::TensorProto_DataType_INT64;
    res.has_data = true;
    return finish();
  }
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    res.shape = reshape_like_shape(n, x.shape, false);
    res.has_data = x.has_data, res.ints = x.ints, res.floats = x.floats;
    return finish();
  }
  if (op == "Concat") {
    const int64_t axis = norm_axis(attr_i(n, "axis", 0), x.shape.size(), "axis");
    res.shape = x.shape;
    res.shape[static_cast<size_t>(axis)] = {0, 0};
    bool data = true;
    for (int i = 0; i < n.input_size(); ++i) {
      const Value& v = val(n, i);
      if (v.shape.size() != x.shape.size()) throw ShapeError("Concat inputs differ in rank");
      const Sym d = v.shape[static_cast<size_t>(axis)];
      Sym& o = res.shape[static_cast<size_t>(axis)];
      auto s = sym_binary("Add", o, d);
      if (!s) throw Unsupported{"Concat along an axis that mixes the batch"};
      o = *s;
      data = data && v.has_data && v.is_float == x.is_float;
    }
    if (data && small_enough(res.shape, res.is_float)) {
      const auto od = plain_dims(res.shape);
      const int64_t outer = count(std::vector<int64_t>(od.begin(), od.begin() + axis));
      const int64_t inner = count(std::vector<int64_t>(od.begin() + axis + 1, od.end()));
      for (int64_t o = 0; o < outer; ++o) {
        for (int i = 0; i < n.input_size(); ++i) {
          const Value& v = val(n, i);
          const int64_t block = v.shape[static_cast<size_t>(axis)].v * inner;
          for (int64_t k = 0; k < block; ++k) push_elem(v, o * block + k, res);
        }
      }
      res.has_data = true;
    }
    return finish();
  }
  if (op == "Gather") {
    const Value& idx = val(n, 1);
    const int64_t axis = norm_axis(attr_i(n, "axis", 0), x.shape.size(), "axis");
    res.shape = gather_shape(x.shape, idx.shape, axis);
    if (x.has_data && idx.has_data && small_enough(res.shape, res.is_float) && all_plain(x.shape)) {
      const auto xd = plain_dims(x.shape);
      const int64_t outer = count(std::vector<int64_t>(xd.begin(), xd.begin() + axis));
      const int64_t inner = count(std::vector<int64_t>(xd.begin() + axis + 1, xd.end()));
      const int64_t dim = xd[static_cast<size_t>(axis)];
      res.has_data = true;
      for (int64_t o = 0; o < outer && res.has_data; ++o) {
        for (size_t j = 0; j < idx.ints.size(); ++j) {
          const int64_t k = gather_index(n, idx.ints[j].v, dim);
          for (int64_t in = 0; in < inner; ++in) push_elem(x, (o * dim + k) * inner + in, res);
        }
      }
    }
    return finish();
  }
  if (op == "Slice") {
    const auto [starts, ends, axes, steps] = read_slice(n, x.shape.size());
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
    return finish();
  }
  if (op == "Expand") {
    res.shape = expand_shape(n, x.shape);
    if (x.has_data && small_enough(res.shape, res.is_float)) {
      for (int64_t k : broadcast_map(plain_dims(x.shape), plain_dims(res.shape))) push_elem(x, k, res);
      res.has_data = true;
    }
    return finish();
  }
  if (op == "Transpose") {
    const std::vector<int64_t> perm = transpose_perm(n, x.shape.size());
    res.shape = permute_shape(x.shape, perm);
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
    return finish();
  }
  if (op == "Split") {
    const int64_t axis = norm_axis(attr_i(n, "axis", 0), x.shape.size(), "axis");
    if (x.shape[static_cast<size_t>(axis)].p) throw Unsupported{"Split of a constant along the batch"};
    const std::vector<int64_t> sizes = split_sizes(n, x.shape[static_cast<size_t>(axis)].v, axis);
    for (int i = 0; i < n.output_size(); ++i) {
      res.shape = x.shape;
      res.shape[static_cast<size_t>(axis)].v = sizes.at(static_cast<size_t>(i));
      finish(i);
    }
    return;
  }
  res.shape = infer_shape_only(n);
  return finish();
}

}  // namespace tessera::graph::onnx_import
