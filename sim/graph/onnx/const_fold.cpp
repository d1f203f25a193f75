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
                                                   "Relu", "Sigmoid", "Tanh", "Erf", "Log", "Round", "Sign"};
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

// x op y for the element-wise binary ops (broadcasting), data when both are known and small.
Value Importer::fold_binary(const Node& n, const Value& x, const Value& y) {
  const std::string& op = n.op_type();
  Value res;
  res.elem = x.elem;
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
    if (!res.has_data) res.ints.clear(), res.floats.clear();
  }
  return res;
}

// The ops fold_or_shape evaluates (or shape-infers) when their inputs are constant.
bool Importer::foldable_op(const std::string& op) {
  static const std::unordered_set<std::string> other = {
      "Constant", "ConstantOfShape", "Range", "Shape", "Size", "Where", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
      "Concat", "Gather", "Slice", "Expand", "Transpose", "Split", "MatMul", "Gemm", "Tile", "Einsum", "CumSum", "TopK",
      "ArgMax", "ArgMin", "Clip", "Sign", "DynamicQuantizeLinear"};
  return other.count(op) || binary_fold_ops().count(op) || unary_fold_ops().count(op) || same_shape_ops().count(op) ||
         op.rfind("Reduce", 0) == 0;
}

// QuantizeLinear: saturate(round(x / scale) + zero_point), halves to even; DequantizeLinear:
// (x - zero_point) * scale. Scale and zero point per tensor (scalars) or per axis (1-D,
// along `axis`); the data when everything is known and small (blocked forms: the shape).
void Importer::fold_quantization(const Node& n, const Value& x, Value& res) {
  const bool dq = n.op_type() == "DequantizeLinear";
  const int32_t code = dq ? x.elem : quantize_elem(n);
  res.quant_elem = code;
  res.elem = dq ? onnx::TensorProto_DataType_FLOAT : code;
  res.is_float = dq;
  const Value& sv = val(n, 1);
  const Value* zv = opt_val(n, 2);
  if (!x.has_data || !sv.has_data || (zv && !zv->has_data) || !all_plain(x.shape) || !small_enough(x.shape, res.is_float)) {
    return;
  }
  const std::vector<double> scale = const_floats(n, 1, "scale");
  const std::vector<double> zero = zv ? const_floats(n, 2, "zero point") : std::vector<double>{0.0};
  const auto dims = plain_dims(x.shape);
  int64_t dim = 1, inner = 1;
  if (scale.size() != 1) {
    if (sv.shape.size() != 1 || dims.empty()) return;  // blocked quantization: shapes only
    const int64_t axis = norm_axis(attr_i(n, "axis", 1), dims.size(), "axis");
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
      res.quant_elem = x.quant_elem;
    } else if (op == "DequantizeLinear" || op == "QuantizeLinear") {
      fold_quantization(n, x, res);
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
          else if (op == "Sign") r = d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0;
          res.floats.push_back(r);
        }
      } else {
        for (Sym s : x.ints) {
          if (op == "Neg") res.ints.push_back({sub64(0, s.v), s.p});
          else if (op == "Abs") res.ints.push_back({s.v < 0 ? sub64(0, s.v) : s.v, s.p});
          else if (op == "Not") res.ints.push_back({s.v == 0, 0});
          else if (op == "Relu") res.ints.push_back({std::max<int64_t>(0, s.v), s.p});
          else if (op == "Floor" || op == "Ceil" || op == "Round") res.ints.push_back(s);
          else if (op == "Sign") res.ints.push_back({s.v > 0 ? 1 : s.v < 0 ? -1 : 0, 0});  // the batch is >= 1
          else res.has_data = false;
        }
      }
    }
    if (op == "Clip" && x.has_data) {
      // Bounds: attributes before opset 11, then inputs (absent: none).
      std::optional<double> lo, hi;
      if (opset_ < 11) {
        if (has_attr(n, "min")) lo = attr_f(n, "min", 0);
        if (has_attr(n, "max")) hi = attr_f(n, "max", 0);
      } else {
        if (has_input(n, 1) && val(n, 1).has_data) lo = const_floats(n, 1, "min").at(0);
        if (has_input(n, 2) && val(n, 2).has_data) hi = const_floats(n, 2, "max").at(0);
      }
      const bool known = (opset_ < 11 || ((!has_input(n, 1) || lo) && (!has_input(n, 2) || hi))) && all_plain(x.shape);
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
    for (int i = 1; i < n.output_size(); ++i) {  // e.g. Dropout's mask
      if (!n.output(i).empty()) {
        Value extra;
        extra.shape = res.shape;
        values_[n.output(i)] = extra;
      }
    }
    return finish();
  }
  if (binary_fold_ops().count(op) && n.input_size() > 2) {
    // Max / Min of more than two: pairwise, left to right.
    Value acc = x;
    for (int i = 1; i < n.input_size(); ++i) acc = fold_binary(n, acc, val(n, i));
    res = acc;
    return finish();
  }
  if (binary_fold_ops().count(op)) {
    res = fold_binary(n, x, val(n, 1));
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
    res.quant_elem = x.quant_elem;
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
  if (op == "DynamicQuantizeLinear") {
    // y (uint8 codes), then its scale and zero point: scalars.
    res.shape = x.shape;
    res.elem = res.quant_elem = onnx::TensorProto_DataType_UINT8;
    res.is_float = false;
    finish(0);
    for (int i = 1; i < 3; ++i) {
      res = Value{};
      res.elem = i == 1 ? onnx::TensorProto_DataType_FLOAT : onnx::TensorProto_DataType_UINT8;
      res.is_float = i == 1;
      finish(i);
    }
    return;
  }
  if (op == "CumSum" || op == "ArgMax" || op == "ArgMin" || op == "TopK") {
    const size_t r = x.shape.size();
    int64_t axis = 0, k = 0;
    if (op == "CumSum") {
      const auto a = const_ints(n, 1, "axis");
      if (a.size() != 1) throw ShapeError("axis must be a scalar, got " + std::to_string(a.size()) + " values");
      axis = a[0];
    } else {
      axis = attr_i(n, "axis", op == "TopK" ? -1 : 0);
    }
    axis = norm_axis(axis, r, "axis");
    const auto ax = static_cast<size_t>(axis);
    const bool arg = op == "ArgMax" || op == "ArgMin";
    SymShape shape = x.shape;
    if (arg) shape = reduce_shape(x.shape, {axis}, attr_i(n, "keepdims", 1) != 0);
    if (op == "TopK") {
      if (opset_ < 10) {
        k = attr_i(n, "k", -1);
      } else {
        const auto kv = const_ints(n, 1, "k");
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
      const int64_t width = op == "CumSum" ? dim : op == "TopK" ? k : 1;
      std::vector<double> vals(static_cast<size_t>(outer * width * inner)), pos(vals.size());
      std::vector<int64_t> order(static_cast<size_t>(dim));
      const bool largest = attr_i(n, "largest", 1) != 0, last = attr_i(n, "select_last_index", 0) != 0;
      const bool exclusive = attr_i(n, "exclusive", 0) != 0, reverse = attr_i(n, "reverse", 0) != 0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          auto at = [&](int64_t d) { return v[static_cast<size_t>((o * dim + d) * inner + j)]; };
          auto put = [&](int64_t d, double value, double p) {
            const auto i = static_cast<size_t>((o * width + d) * inner + j);
            vals[i] = value, pos[i] = p;
          };
          if (op == "CumSum") {
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
              if (op == "ArgMax" ? (a > b || (last && a == b)) : (a < b || (last && a == b))) best = d;
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
    if (op == "TopK") {
      res = idx;
      finish(1);
    }
    return;
  }
  if (op.rfind("Reduce", 0) == 0) {
    std::vector<int64_t> axes = reduce_axes(n);
    if (axes.empty() && attr_i(n, "noop_with_empty_axes", 0)) {
      res.shape = x.shape;
      res.has_data = x.has_data, res.ints = x.ints, res.floats = x.floats;
      return finish();
    }
    axes = norm_axes(axes, x.shape.size(), "axis");
    res.shape = reduce_shape(x.shape, axes, attr_i(n, "keepdims", 1) != 0);
    const bool known_op = op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd" ||
                          (op == "ReduceMean" && x.is_float);
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
      std::vector<bool> first(static_cast<size_t>(outs), true);
      int64_t e = 0;
      for_each_index(xd, [&](const std::vector<int64_t>& idx) {
        int64_t o = 0;
        for (size_t i = 0; i < xd.size(); ++i) o += reduced[i] ? 0 : idx[i] * ks[i];
        const auto oi = static_cast<size_t>(o);
        const double val = v[static_cast<size_t>(e++)];
        if (first[oi]) acc[oi] = val, first[oi] = false;
        else if (op == "ReduceMax") acc[oi] = std::max(acc[oi], val);
        else if (op == "ReduceMin") acc[oi] = std::min(acc[oi], val);
        else if (op == "ReduceProd") acc[oi] *= val;
        else acc[oi] += val;
        cnt[oi] += 1;
      });
      res.has_data = true;
      for (size_t i = 0; i < acc.size(); ++i) {
        const double r = op == "ReduceMean" ? acc[i] / cnt[i] : acc[i];
        if (res.is_float) res.floats.push_back(r);
        else res.ints.push_back({static_cast<int64_t>(r), 0});
      }
    }
    return finish();
  }
  res.shape = infer_shape_only(n);
  if (op == "Tile" && x.has_data && all_plain(x.shape) && small_enough(res.shape, res.is_float)) {
    const auto xd = plain_dims(x.shape);
    const auto xs = strides_of(xd);
    for_each_index(plain_dims(res.shape), [&](const std::vector<int64_t>& idx) {
      int64_t src = 0;
      for (size_t i = 0; i < xd.size(); ++i) src += (idx[i] % xd[i]) * xs[i];
      push_elem(x, src, res);
    });
    res.has_data = true;
  }
  return finish();
}

}  // namespace tessera::graph::onnx_import
