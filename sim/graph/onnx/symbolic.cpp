#include "sim/graph/onnx/symbolic.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/common/checked_math.h"
#include "sim/graph/graph.h"

namespace tessera::graph::onnx_import {

std::string sym_text(Sym s) {
  if (s.p == 0) return std::to_string(s.v);
  const std::string n = s.p == 1 ? "N" : "N^" + std::to_string(s.p);
  return s.v == 1 ? n : std::to_string(s.v) + "*" + n;
}

std::string sym_shape_text(const SymShape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + sym_text(s[i]);
  return out + "]";
}


[[noreturn]] void overflow(int64_t a, const char* op, int64_t b) {
  throw ShapeError(std::to_string(a) + " " + op + " " + std::to_string(b) + " does not fit 64 bits");
}
int64_t add64(int64_t a, int64_t b) {
  if (auto r = checked_add(a, b)) return *r;
  overflow(a, "+", b);
}
int64_t sub64(int64_t a, int64_t b) {
  if (auto r = checked_sub(a, b)) return *r;
  overflow(a, "-", b);
}
int64_t mul64(int64_t a, int64_t b) {
  if (auto r = checked_mul(a, b)) return *r;
  overflow(a, "*", b);
}
int64_t to_int64(double d, const std::string& what) {
  if (auto r = checked_to_int64(d)) return *r;
  std::ostringstream os;
  os << what << " " << d << " is not an integer that fits 64 bits";
  throw ShapeError(os.str());
}

int64_t window_span(int64_t kernel, int64_t dilation) {
  const auto s = checked_mul(dilation, kernel - 1);
  if (!s || *s == std::numeric_limits<int64_t>::max()) {
    throw ShapeError("a window of kernel " + std::to_string(kernel) + " with dilation " + std::to_string(dilation) +
                     " does not fit 64 bits");
  }
  return *s + 1;
}

int batch_power(int a, int b) {
  const int p = a + b;
  if (p > kMaxBatchPower) throw ShapeError("a dimension grows to N^" + std::to_string(p) + " of the batch N, which does not fit 64 bits");
  return p;
}
Sym sym_mul(Sym a, Sym b) { return Sym{mul64(a.v, b.v), batch_power(a.p, b.p)}; }

int64_t eval(Sym s, int64_t batch) {
  int64_t v = s.v;
  for (int i = 0; i < s.p; ++i) {
    if (!checked_mul(v, batch)) throw ShapeError("dimension " + sym_text(s) + " at batch " + std::to_string(batch) + " does not fit 64 bits");
    v *= batch;
  }
  return v;
}

// ---------------------------------------------------------------- shape rules on symbolic shapes

SymShape broadcast_sym(const SymShape& a, const SymShape& b) {
  const size_t r = std::max(a.size(), b.size());
  SymShape out(r, Sym{1, 0});
  for (size_t i = 0; i < r; ++i) {
    const Sym da = i < r - a.size() ? Sym{1, 0} : a[i - (r - a.size())];
    const Sym db = i < r - b.size() ? Sym{1, 0} : b[i - (r - b.size())];
    if (da == db || is_one(db)) out[i] = da;
    else if (is_one(da)) out[i] = db;
    else throw ShapeError("shapes " + sym_shape_text(a) + " and " + sym_shape_text(b) + " do not broadcast");
  }
  return out;
}

int64_t norm_axis(int64_t axis, size_t rank, const std::string& what) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw ShapeError(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(r) +
                     (r > 0 ? " (allowed: " + std::to_string(-r) + " to " + std::to_string(r - 1) + ")" : std::string()));
  }
  return axis < 0 ? axis + r : axis;
}

// Flatten's axis: in [-rank, rank] (rank itself: everything in the first factor).
int64_t flatten_axis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis > r) {
    throw ShapeError("Flatten axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r) + " (allowed: " +
                     std::to_string(-r) + " to " + std::to_string(r) + ")");
  }
  return axis < 0 ? axis + r : axis;
}

// A list of axes, each in range, none repeated (the one validation path for every op's axes).
std::vector<int64_t> norm_axes(std::vector<int64_t> axes, size_t rank, const std::string& what) {
  for (int64_t& a : axes) a = norm_axis(a, rank, what);
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) throw ShapeError(what + "s repeat axis " + std::to_string(*dup) + " (each axis at most once)");
  return axes;
}

// perm must be a permutation of 0..rank-1.
void check_perm(const std::vector<int64_t>& perm, size_t rank) {
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (int64_t p : perm) {
    if (!ok) break;
    ok = p >= 0 && p < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(p)];
    if (ok) seen[static_cast<size_t>(p)] = true;
  }
  if (!ok) {
    throw ShapeError("perm " + shape_text(perm) + " is not a permutation of the " + std::to_string(rank) +
                     " axes (allowed: each of 0 to " + std::to_string(static_cast<int64_t>(rank) - 1) + " once)");
  }
}

bool all_plain(const SymShape& s) {
  return std::all_of(s.begin(), s.end(), [](Sym d) { return d.p == 0; });
}

std::vector<int64_t> plain_dims(const SymShape& s) {
  std::vector<int64_t> d;
  for (Sym x : s) d.push_back(x.v);
  return d;
}

int64_t count(const std::vector<int64_t>& d) {
  if (auto n = checked_product(d)) return *n;
  throw ShapeError("shape " + shape_text(d) + " has more elements than fit 64 bits");
}

// For every element of `out` (row-major), the flat index of the broadcast source in `in`.
std::vector<int64_t> broadcast_map(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  const size_t r = out.size();
  std::vector<int64_t> stride(r, 0);
  int64_t s = 1;
  for (size_t i = in.size(); i-- > 0;) {
    const size_t oi = i + r - in.size();
    stride[oi] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  std::vector<int64_t> map;
  for_each_index(out, [&](const std::vector<int64_t>& idx) {
    int64_t src = 0;
    for (size_t i = 0; i < r; ++i) src += idx[i] * stride[i];
    map.push_back(src);
  });
  return map;
}

// Integer folding, exact or not at all: nullopt when the result is not a constant (it
// depends on the batch, or divides by 0) or the op has no integer form; a ShapeError when
// it does not fit 64 bits. kMod takes the divisor's sign, kFmod the dividend's (ONNX Mod's fmod).
std::optional<Sym> sym_binary(OpKind op, Sym a, Sym b) {
  switch (op) {
    case OpKind::kAdd:
    case OpKind::kSub: {
      const bool add = op == OpKind::kAdd;
      if (a.p == b.p) return Sym{add ? add64(a.v, b.v) : sub64(a.v, b.v), a.p};
      if (b.v == 0) return a;
      if (a.v == 0) return Sym{add ? b.v : sub64(0, b.v), b.p};
      return std::nullopt;
    }
    case OpKind::kMul:
      return sym_mul(a, b);
    case OpKind::kDiv: {
      if (b.v == 0 || a.p < b.p || checked_rem(a.v, b.v) != 0) return std::nullopt;
      const auto q = checked_div(a.v, b.v);
      if (!q) overflow(a.v, "/", b.v);
      return Sym{*q, a.p - b.p};
    }
    case OpKind::kMod:
    case OpKind::kFmod:
      if (a.p || b.p || b.v == 0) return std::nullopt;
      return Sym{*(op == OpKind::kFmod ? checked_rem(a.v, b.v) : checked_floor_mod(a.v, b.v)), 0};
    case OpKind::kEqual:
      if (a == b) return Sym{1, 0};
      if (a.p == b.p) return Sym{0, 0};
      if ((a.p && b.v <= 0) || (b.p && a.v <= 0)) return Sym{0, 0};  // the batch is >= 1
      return std::nullopt;
    case OpKind::kLess:
    case OpKind::kGreater:
    case OpKind::kLessEqual:
    case OpKind::kGreaterEqual:
    case OpKind::kMax:
    case OpKind::kMin: {
      if (a.p != b.p) return std::nullopt;
      const bool lt = a.v < b.v, eq = a.v == b.v;
      if (op == OpKind::kLess) return Sym{lt, 0};
      if (op == OpKind::kGreater) return Sym{!lt && !eq, 0};
      if (op == OpKind::kLessEqual) return Sym{lt || eq, 0};
      if (op == OpKind::kGreaterEqual) return Sym{!lt, 0};
      if (op == OpKind::kMax) return lt ? b : a;
      return lt ? a : b;
    }
    case OpKind::kAnd:
      return Sym{a.v && b.v, 0};
    case OpKind::kOr:
      return Sym{a.v || b.v, 0};
    case OpKind::kPow: {
      if (a.p || b.p || b.v < 0) return std::nullopt;
      // Square-and-multiply: a huge exponent takes 63 steps, not b.v.
      const auto r = checked_pow(a.v, b.v);
      if (!r) overflow(a.v, "**", b.v);
      return Sym{*r, 0};
    }
    default:
      return std::nullopt;
  }
}

std::optional<Sym> sym_unary(OpKind op, Sym s) {
  switch (op) {
    case OpKind::kAbs:
      return Sym{s.v < 0 ? sub64(0, s.v) : s.v, s.p};
    case OpKind::kNot:
      return Sym{s.v == 0, 0};
    case OpKind::kRelu:
      return Sym{std::max<int64_t>(0, s.v), s.p};
    case OpKind::kFloor:
    case OpKind::kCeil:
    case OpKind::kRound:
      return s;
    case OpKind::kSign:
      return Sym{s.v > 0 ? 1 : s.v < 0 ? -1 : 0, 0};  // the batch is >= 1
    default:
      return std::nullopt;
  }
}

// [product of the dims before axis, product of the rest].
SymShape flatten_shape(const SymShape& in, int64_t axis) {
  Sym a{1, 0}, b{1, 0};
  for (size_t i = 0; i < in.size(); ++i) {
    Sym& t = static_cast<int64_t>(i) < axis ? a : b;
    t = sym_mul(t, in[i]);
  }
  return {a, b};
}

SymShape squeeze_shape(const SymShape& in, std::vector<int64_t> axes) {
  SymShape out;
  axes = norm_axes(axes, in.size(), "squeeze axis");
  for (size_t i = 0; i < in.size(); ++i) {
    const bool listed = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (axes.empty() ? is_one(in[i]) : listed) {
      if (!is_one(in[i])) throw ShapeError("cannot squeeze axis " + std::to_string(i) + " of " + sym_shape_text(in));
      continue;
    }
    out.push_back(in[i]);
  }
  return out;
}

SymShape unsqueeze_shape(const SymShape& in, std::vector<int64_t> axes) {
  const size_t r = in.size() + axes.size();
  axes = norm_axes(axes, r, "unsqueeze axis");
  SymShape out;
  size_t k = 0;
  for (size_t i = 0; i < r; ++i) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end()) out.push_back({1, 0});
    else out.push_back(in.at(k++));
  }
  return out;
}

// The reduced axes become 1 (keep) or disappear.
SymShape reduce_shape(const SymShape& in, const std::vector<int64_t>& axes, bool keep) {
  SymShape out;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool r = axes.empty() || std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!r) out.push_back(in[i]);
    else if (keep) out.push_back({1, 0});
  }
  return out;
}

SymShape permute_shape(const SymShape& in, const std::vector<int64_t>& perm) {
  SymShape out;
  for (int64_t p : perm) out.push_back(in.at(static_cast<size_t>(p)));
  return out;
}

// data's axis replaced by the indices' shape.
SymShape gather_shape(const SymShape& data, const SymShape& indices, int64_t axis) {
  SymShape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

// Slice's starts, ends, axes and steps: one entry per sliced axis, each axis once.
void check_slice_lists(const std::vector<int64_t>& starts, const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                       const std::vector<int64_t>& steps, size_t rank) {
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    throw ShapeError("starts, ends, axes and steps must have one entry per sliced axis, got " + std::to_string(starts.size()) +
                     ", " + std::to_string(ends.size()) + ", " + std::to_string(axes.size()) + " and " +
                     std::to_string(steps.size()));
  }
  norm_axes(axes, rank, "slice axis");
}

// Slice bounds along one axis, clamped as ONNX does; returns the output length.
int64_t slice_len(int64_t dim, int64_t& b, int64_t& e, int64_t step) {
  if (step == 0) throw ShapeError("slice step 0");
  if (dim == 0) return b = e = 0;
  if (b < 0) b += dim;
  if (e < 0) e += dim;
  // ceil((e - b) / step) without overflow: e - b <= dim, and -step may not exist (INT64_MIN).
  if (step > 0) {
    b = std::clamp<int64_t>(b, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    return e > b ? 1 + (e - b - 1) / step : 0;
  }
  b = std::clamp<int64_t>(b, 0, dim - 1);
  e = std::clamp<int64_t>(e, -1, dim - 1);
  return b > e ? 1 + static_cast<int64_t>(static_cast<uint64_t>(b - e - 1) / (0 - static_cast<uint64_t>(step))) : 0;
}

}  // namespace tessera::graph::onnx_import
