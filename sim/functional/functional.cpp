#include "sim/functional/functional.h"

#include "sim/graph/ops/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "models/array/pe_reference.h"
#include "sim/common/error.h"
#include "sim/common/memory_limit.h"
#include "sim/functional/numerics.h"

namespace tessera::functional {

using graph::Activation;
using graph::Graph;
using graph::Layer;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;
using graph::op_def;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- deterministic pseudo-random data ------------------------------------------------

uint64_t mix64(uint64_t x) {  // the splitmix64 finaliser
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

enum StreamKind : uint64_t { kInputEval = 1, kInputCalibration = 2, kWeights = 3, kConstants = 4 };

// A counter-based stream: element i depends only on (seed, kind, id, i), so values do
// not change with the batch size or the order in which they are drawn.
struct Stream {
  uint64_t key = 0;
  Stream(uint64_t seed, uint64_t kind, uint64_t id) : key(mix64(mix64(mix64(seed + 0x9E3779B97F4A7C15ull) ^ kind) ^ (id + 1))) {}
  // Approximately standard normal: the sum of four 16-bit uniforms (Irwin-Hall, n = 4),
  // centred and scaled to unit variance; bounded to +-2*sqrt(3) = +-3.46.
  float normal(uint64_t i) const {
    const uint64_t h = mix64(key + (i + 1) * 0x9E3779B97F4A7C15ull);
    double s = 0;
    for (int p = 0; p < 4; ++p) s += (static_cast<double>((h >> (16 * p)) & 0xffffu) + 0.5) / 65536.0;
    return static_cast<float>((s - 2.0) * 1.7320508075688772);  // var of the sum = 4/12
  }
};

// ---- tensors --------------------------------------------------------------------------

bool is_int(Dtype t) { return int_bits(t) > 0; }

// A tensor at the assigned precision, for the evaluated batch.
struct QTensor {
  Dtype dtype = Dtype::kInt8;
  double scale = 0;           // integer dtypes
  std::vector<int32_t> q;     // integer dtypes: codes
  std::vector<float> f;       // float dtypes: values already rounded to the format
  bool integer() const { return is_int(dtype); }
  int64_t size() const { return integer() ? static_cast<int64_t>(q.size()) : static_cast<int64_t>(f.size()); }
  std::vector<float> dequantized() const {
    if (!integer()) return f;
    std::vector<float> out(q.size());
    for (std::size_t i = 0; i < q.size(); ++i) out[i] = static_cast<float>(dequantize(q[i], scale));
    return out;
  }
};

float activate(Activation a, float x) {
  switch (a) {
    case Activation::kNone: return x;
    case Activation::kRelu: return x > 0 ? x : 0.0f;
    case Activation::kRelu6: return std::min(std::max(x, 0.0f), 6.0f);
    case Activation::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
    case Activation::kTanh: return std::tanh(x);
  }
  return x;
}

std::string op_text(OpKind op) {
  const std::string_view s = graph::op_name(op);
  if (s.empty() || s == "?") {
    std::string text = "#";  // (not "#" + to_string: GCC 12 -O3 warns falsely, -Wrestrict)
    text += std::to_string(static_cast<int>(op));
    return text;
  }
  return std::string(s);
}

[[noreturn]] void unsupported(const Layer& l, const std::string& what) {
  throw InputError("functional mode does not support " + what + " (layer " + l.name + ")");
}

// Geometry of a matrix layer, read from the tensor shapes.
struct MatrixGeom {
  bool conv = false;
  int64_t rows_per_sample = 1;  // fc: rows of the per-sample 2-D view; conv: OH * OW
  int64_t k = 0;                // per group
  int64_t f = 0;                // output channels (all groups)
  int64_t groups = 1;
  int64_t fg = 0;               // per group
  // conv
  int64_t h = 0, w = 0, c = 0, cg = 0, oh = 0, ow = 0;
};

// A window over an [H, W, C] input for conv and pooling.
struct Window {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0, dh = 1, dw = 1;
  explicit Window(const Layer& l)
      : kh(l.kernel_h), kw(l.kernel_w), sh(l.stride_h), sw(l.stride_w), pt(l.pad_top), pl(l.pad_left),
        dh(std::max<int64_t>(1, l.dilation_h)), dw(std::max<int64_t>(1, l.dilation_w)) {}
};

template <typename T>
void im2col(const T* x, const MatrixGeom& g, const Window& win, int64_t group, T* col) {
  const int64_t kdim = g.k;
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      T* row = col + (oy * g.ow + ox) * kdim;
      for (int64_t ky = 0; ky < win.kh; ++ky) {
        const int64_t iy = oy * win.sh - win.pt + ky * win.dh;
        for (int64_t kx = 0; kx < win.kw; ++kx) {
          const int64_t ix = ox * win.sw - win.pl + kx * win.dw;
          T* dst = row + (ky * win.kw + kx) * g.cg;
          if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
            std::fill(dst, dst + g.cg, T{0});
          } else {
            const T* src = x + (iy * g.w + ix) * g.c + group * g.cg;
            std::copy(src, src + g.cg, dst);
          }
        }
      }
    }
  }
}

// ---- index maps (per sample, row-major) ----------------------------------------------

// Product of the extents of axes [begin, end) (clamped to the rank).
int64_t product(const Shape& s, std::size_t begin = 0, std::size_t end = SIZE_MAX) {
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
std::vector<int64_t> index_map(const Shape& out, const std::vector<int64_t>& stride, int64_t base = 0) {
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

struct Stats {
  double signal = 0, noise = 0, max_abs = 0;
  int64_t count = 0;
  void add(double ref, double out) {
    const double d = ref - out;
    signal += ref * ref;
    noise += d * d;
    max_abs = std::max(max_abs, std::abs(d));
    ++count;
  }
  double sqnr_db() const {
    if (noise == 0) return kInf;
    if (signal == 0) return -kInf;
    return 10.0 * std::log10(signal / noise);
  }
};

class Runner {
 public:
  Runner(const Graph& g, const ArchConfig& arch, const FunctionalOptions& opt) : g_(g), arch_(arch), opt_(opt) {
    n_eval_ = opt.batch;
    n_all_ = opt.batch * (1 + opt.calibration_batches);
    model_.k_tile = std::max<int64_t>(1, arch.array.rows);
    model_.width_bits = static_cast<int>(arch.accumulators.width_bits);
    if (opt.use_pe_reference) {
      pe_ = std::make_unique<array::PeArrayReference>(arch.array.dataflow,
                                                      array::ArrayDims{arch.array.rows, arch.array.cols},
                                                      arch.array.double_buffered);
    }
    ref_.resize(g.tensors.size());
    q_.resize(g.tensors.size());
    calib_max_.assign(g.tensors.size(), 0.0);
    last_use_.assign(g.tensors.size(), -1);
    for (std::size_t li = 0; li < g.layers.size(); ++li)
      for (int t : g.layers[li].inputs) last_use_[t] = static_cast<int>(li);
    for (int t : g.outputs) last_use_[t] = static_cast<int>(g.layers.size());
  }

  FunctionalResult run() {
    FunctionalResult result;
    result.options = opt_;
    result.accumulator_bits = model_.width_bits;
    result.k_tile = model_.k_tile;
    for (int t : g_.inputs) result.input_saturated += make_input(t);
    for (std::size_t li = 0; li < g_.layers.size(); ++li) {
      result.layers.push_back(run_layer(static_cast<int>(li)));
      for (int t : g_.layers[li].inputs) {
        if (last_use_[t] == static_cast<int>(li)) release(t);
      }
    }
    Stats total;
    for (int t : g_.outputs) {
      const Tensor& ten = g_.tensors[t];
      OutputValues ov;
      ov.name = ten.name;
      ov.dtype = q_[t].dtype;
      ov.scale = q_[t].integer() ? q_[t].scale : 0.0;
      if (q_[t].integer()) ov.codes.assign(q_[t].q.begin(), q_[t].q.end());
      ov.values = q_[t].dequantized();
      ov.reference.assign(ref_[t].begin(), ref_[t].begin() + static_cast<std::ptrdiff_t>(ov.values.size()));
      for (std::size_t i = 0; i < ov.values.size(); ++i) total.add(ov.reference[i], ov.values[i]);
      result.outputs.push_back(std::move(ov));
    }
    result.output_sqnr_db = total.sqnr_db();
    result.output_max_abs_error = total.max_abs;
    return result;
  }

 private:
  int64_t elems(int t) const { return graph::shape_elements(g_.tensors[t].shape); }

  void release(int t) {
    std::vector<float>().swap(ref_[t]);
    q_[t] = QTensor{};
  }

  // Max |x| over the calibration samples of a reference buffer of n_all samples
  // (over the evaluated batch when there are no calibration batches).
  double calibration_max(const std::vector<float>& v, int64_t per_sample) const {
    const int64_t begin = opt_.calibration_batches > 0 ? n_eval_ * per_sample : 0;
    const int64_t end = opt_.calibration_batches > 0 ? n_all_ * per_sample : n_eval_ * per_sample;
    double mx = 0;
    for (int64_t i = begin; i < end; ++i) mx = std::max(mx, static_cast<double>(std::abs(v[i])));
    return mx;
  }

  double scale_of(int t) const { return symmetric_scale(calib_max_[t], int_bits(g_.tensors[t].dtype)); }

  int64_t make_input(int t) {
    const int64_t e = elems(t);
    std::vector<float>& r = ref_[t];
    r.resize(static_cast<std::size_t>(n_all_ * e));
    const Stream eval(opt_.seed, kInputEval, static_cast<uint64_t>(t));
    const Stream cal(opt_.seed, kInputCalibration, static_cast<uint64_t>(t));
    const auto given = opt_.inputs.find(g_.tensors[t].name);
    if (given != opt_.inputs.end()) {
      if (static_cast<int64_t>(given->second.size()) != n_eval_ * e) {
        throw InputError("functional mode: input '" + g_.tensors[t].name + "' needs " + std::to_string(n_eval_ * e) +
                         " values (batch " + std::to_string(n_eval_) + " x " + std::to_string(e) + "), got " +
                         std::to_string(given->second.size()));
      }
      std::copy(given->second.begin(), given->second.end(), r.begin());
      for (int64_t i = n_eval_ * e; i < n_all_ * e; ++i) r[i] = cal.normal(static_cast<uint64_t>(i - n_eval_ * e));
    } else if (g_.tensors[t].integer_values) {
      // Integer host data (an attention mask): ones, i.e. nothing masked; random values
      // would turn BERT's (1 - mask) * -10000 into noise that swamps the scores.
      std::fill(r.begin(), r.end(), 1.0f);
    } else {
      for (int64_t i = 0; i < n_eval_ * e; ++i) r[i] = eval.normal(static_cast<uint64_t>(i));
      for (int64_t i = n_eval_ * e; i < n_all_ * e; ++i) r[i] = cal.normal(static_cast<uint64_t>(i - n_eval_ * e));
    }
    calib_max_[t] = calibration_max(r, e);
    std::vector<float> x(r.begin(), r.begin() + n_eval_ * e);
    std::vector<uint8_t> flags(x.size(), 0);
    store(t, x, flags);
    int64_t sat = 0;
    for (uint8_t f : flags) sat += (f & kRequantSaturated) ? 1 : 0;
    return sat;
  }

  // Converts fp32 values of the evaluated batch to tensor t's dtype (quantize with its
  // calibrated scale, or round to fp16/bf16) and stores them.
  void store(int t, const std::vector<float>& values, std::vector<uint8_t>& flags) {
    QTensor& qt = q_[t];
    qt = QTensor{};
    qt.dtype = g_.tensors[t].dtype;
    if (qt.integer()) {
      const int bits = int_bits(qt.dtype);
      qt.scale = scale_of(t);
      qt.q.resize(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) {
        bool sat = false;
        qt.q[i] = static_cast<int32_t>(quantize(values[i], qt.scale, bits, &sat));
        if (sat) flags[i] |= kRequantSaturated;
      }
    } else {
      qt.f.resize(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) qt.f[i] = round_to_float_dtype(values[i], qt.dtype);
    }
  }

  // Prepares an integer output tensor (codes filled by the caller).
  QTensor& int_output(int t) {
    QTensor& qt = q_[t];
    qt = QTensor{};
    qt.dtype = g_.tensors[t].dtype;
    qt.scale = scale_of(t);
    qt.q.assign(static_cast<std::size_t>(n_eval_ * elems(t)), 0);
    return qt;
  }

  LayerError run_layer(int li) {
    const Layer& l = g_.layers[li];
    const int y = l.output;
    const Tensor& yt = g_.tensors[y];
    LayerError err;
    err.name = l.name;
    err.op = op_text(l.op);
    err.a_dtype = l.inputs.empty() ? yt.dtype : g_.tensors[l.inputs[0]].dtype;
    err.b_dtype = err.a_dtype;
    if (graph::is_matrix_op(l.op)) err.b_dtype = l.weight_dtype;
    if ((l.op == OpKind::kMatmul || op_def(l.op).binary) && l.inputs.size() == 2) err.b_dtype = g_.tensors[l.inputs[1]].dtype;
    err.out_dtype = yt.dtype;
    std::vector<uint8_t> flags(static_cast<std::size_t>(n_eval_ * elems(y)), 0);
    headroom_factor_ = 1.0;

    switch (l.op) {
      case OpKind::kFc:
      case OpKind::kConv2d: matrix_layer(li, flags); break;
      case OpKind::kMatmul: matmul_layer(l, flags); break;
      case OpKind::kMaxPool:
      case OpKind::kAvgPool: pool_layer(l, flags); break;
      case OpKind::kGlobalAvgPool: global_avgpool_layer(l, flags); break;
      case OpKind::kGlobalMaxPool:
      case OpKind::kReduceMean:
      case OpKind::kReduceSum:
      case OpKind::kReduceMax: reduce_layer(l, flags); break;
      case OpKind::kFlatten:
      case OpKind::kReshape: flatten_layer(l, flags); break;
      case OpKind::kTranspose:
      case OpKind::kSlice:
      case OpKind::kExpand: move_layer(l, flags); break;
      case OpKind::kConcat: concat_layer(l, flags); break;
      default: {
        // Every other op runs from its OpDef's fp32 function (sim/graph/ops/).
        const graph::OpDef& def = op_def(l.op);
        if (def.binary) {
          binary_layer(li, flags);
        } else if (def.unary) {
          unary_layer(l, flags);
        } else if (def.fp32) {
          fp32_layer(l, def.fp32(g_, l), flags);
        } else {
          unsupported(l, "op " + op_text(l.op));
        }
      }
    }
    err.headroom_factor = headroom_factor_;

    const std::vector<float> out = q_[y].dequantized();
    const std::vector<float>& ref = ref_[y];
    Stats st;
    double ref_sq = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      st.add(ref[i], out[i]);
      ref_sq += static_cast<double>(ref[i]) * ref[i];
    }
    err.sqnr_db = st.sqnr_db();
    err.max_abs_error = st.max_abs;
    err.elements = st.count;
    err.ref_rms = st.count ? std::sqrt(ref_sq / static_cast<double>(st.count)) : 0.0;
    err.out_scale = q_[y].integer() ? q_[y].scale : 0.0;
    for (uint8_t f : flags) {
      err.saturated += f ? 1 : 0;
      err.accumulator_saturated += (f & kAccSaturated) ? 1 : 0;
      err.requant_saturated += (f & kRequantSaturated) ? 1 : 0;
    }
    return err;
  }

  // Reference output of a layer from its function on float buffers, then calibration.
  using FloatFn = std::function<void(const std::vector<const float*>& in, int64_t n, float* out)>;

  void reference(const Layer& l, const FloatFn& fn) {
    std::vector<const float*> in;
    for (int t : l.inputs) in.push_back(ref_[t].data());
    const int y = l.output;
    ref_[y].assign(static_cast<std::size_t>(n_all_ * elems(y)), 0.0f);
    fn(in, n_all_, ref_[y].data());
    calib_max_[y] = calibration_max(ref_[y], elems(y));
  }

  // The float path of a vector op: dequantized (or already fp16/bf16) inputs, fp32
  // arithmetic, the result rounded or quantized to the output dtype.
  void float_path(const Layer& l, const FloatFn& fn, std::vector<uint8_t>& flags) {
    std::vector<std::vector<float>> vals;
    std::vector<const float*> in;
    for (int t : l.inputs) vals.push_back(q_[t].dequantized());
    for (const auto& v : vals) in.push_back(v.data());
    std::vector<float> out(static_cast<std::size_t>(n_eval_ * elems(l.output)));
    fn(in, n_eval_, out.data());
    store(l.output, out, flags);
  }

  bool all_int(const Layer& l) const {
    if (!is_int(g_.tensors[l.output].dtype)) return false;
    for (int t : l.inputs)
      if (!q_[t].integer()) return false;
    return true;
  }

  // ---- matrix layers ------------------------------------------------------------------

  MatrixGeom geometry(const Layer& l) const {
    const Tensor& x = g_.tensors[l.inputs.at(0)];
    const Tensor& y = g_.tensors[l.output];
    MatrixGeom g;
    if (l.op == OpKind::kFc) {
      g.k = x.shape.back();
      g.f = y.shape.back();
      g.rows_per_sample = graph::shape_elements(x.shape) / g.k;
      g.fg = g.f;
      if (graph::shape_elements(y.shape) != g.rows_per_sample * g.f) unsupported(l, "this fc shape");
      return g;
    }
    if (x.shape.size() != 3 || y.shape.size() != 3) unsupported(l, "conv2d on tensors that are not [H, W, C]");
    g.conv = true;
    g.h = x.shape[0], g.w = x.shape[1], g.c = x.shape[2];
    g.oh = y.shape[0], g.ow = y.shape[1], g.f = y.shape[2];
    g.groups = std::max<int64_t>(1, l.groups);
    if (g.c % g.groups != 0 || g.f % g.groups != 0) unsupported(l, "conv2d groups that do not divide the channels");
    g.cg = g.c / g.groups;
    g.fg = g.f / g.groups;
    g.k = l.kernel_h * l.kernel_w * g.cg;
    g.rows_per_sample = g.oh * g.ow;
    return g;
  }

  // Pre-activation y[n x rows x f] = x * w in fp32; w is groups x k x fg.
  void matrix_float(const Layer& l, const MatrixGeom& g, const float* x, int64_t n, const std::vector<float>& w,
                    float* y) const {
    if (!g.conv) {
      float_gemm(x, w.data(), n * g.rows_per_sample, g.k, g.f, y, g.f);
      return;
    }
    const Window win(l);
    std::vector<float> col(static_cast<std::size_t>(g.rows_per_sample * g.k));
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        im2col(x + s * g.h * g.w * g.c, g, win, grp, col.data());
        float_gemm(col.data(), w.data() + grp * g.k * g.fg, g.rows_per_sample, g.k, g.fg,
                   y + s * g.rows_per_sample * g.f + grp * g.fg, g.f);
      }
    }
  }

  void int_gemm_dispatch(const Layer& l, const int16_t* a, const int16_t* b, int64_t m, int64_t k, int64_t n,
                         int64_t* acc, uint8_t* flags) const {
    if (pe_) {
      try {
        pe_gemm(*pe_, a, b, m, k, n, model_, acc, flags);
      } catch (const InputError& e) {
        throw InputError("functional mode, layer " + l.name + ": " + e.what());
      }
    } else {
      int_gemm(a, b, m, k, n, model_, acc, flags);
    }
  }

  void matrix_layer(int li, std::vector<uint8_t>& flags) {
    const Layer& l = g_.layers[li];
    const int x = l.inputs.at(0), y = l.output;
    if (l.inputs.size() != 1) unsupported(l, "a matrix layer with a second activation input");
    const MatrixGeom g = geometry(l);
    const Activation act = l.activation;  // validate() checked it and the operand dtypes
    const Dtype a_dt = q_[x].dtype, b_dt = l.weight_dtype;

    // Weights: groups x k x fg, N(0, gain / fan_in) so activations stay O(1).
    const double gain = (act == Activation::kRelu || act == Activation::kRelu6) ? 2.0 : 1.0;
    const float stddev = static_cast<float>(std::sqrt(gain / static_cast<double>(g.k)));
    std::vector<float> w(static_cast<std::size_t>(g.groups * g.k * g.fg));
    const Stream ws(opt_.seed, kWeights, static_cast<uint64_t>(li));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = ws.normal(i) * stddev;

    // fp32 reference (the calibrated pre-activation range sets the accumulator headroom
    // and the activation table's input scale).
    const int64_t ey = elems(y);
    std::vector<float> pre(static_cast<std::size_t>(n_all_ * ey));
    matrix_float(l, g, ref_[x].data(), n_all_, w, pre.data());
    const double raw_max = reference_output(l, pre);

    // Weight scales: per output channel (column of each group's k x fg block) or per tensor.
    std::vector<double> w_scale(static_cast<std::size_t>(g.f), 1.0);
    if (is_int(b_dt)) {
      const int bits = int_bits(b_dt);
      std::vector<double> col_max(static_cast<std::size_t>(g.f), 0.0);
      for (int64_t grp = 0; grp < g.groups; ++grp)
        for (int64_t kk = 0; kk < g.k; ++kk)
          for (int64_t j = 0; j < g.fg; ++j) {
            double& m = col_max[grp * g.fg + j];
            m = std::max(m, static_cast<double>(std::abs(w[(grp * g.k + kk) * g.fg + j])));
          }
      const double tensor_max = *std::max_element(col_max.begin(), col_max.end());
      for (int64_t f = 0; f < g.f; ++f) w_scale[f] = symmetric_scale(opt_.per_channel ? col_max[f] : tensor_max, bits);
    }
    auto w_channel = [&](int64_t idx_in_block) {  // output channel of element i of the groups x k x fg block
      const int64_t grp = idx_in_block / (g.k * g.fg);
      return grp * g.fg + idx_in_block % g.fg;
    };

    if (!(is_int(a_dt) && is_int(b_dt))) {
      // Float path: operands rounded to their formats (an integer operand enters as
      // its dequantized codes), fp32 accumulation, activation in fp32.
      std::vector<float> wq(w.size());
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (is_int(b_dt)) {
          const double s = w_scale[w_channel(static_cast<int64_t>(i))];
          wq[i] = static_cast<float>(dequantize(quantize(w[i], s, int_bits(b_dt)), s));
        } else {
          wq[i] = round_to_float_dtype(w[i], b_dt);
        }
      }
      const std::vector<float> xv = q_[x].dequantized();
      std::vector<float> out(static_cast<std::size_t>(n_eval_ * ey));
      matrix_float(l, g, xv.data(), n_eval_, wq, out.data());
      const auto om = static_cast<float>(l.output_multiplier);
      for (float& v : out) v = activate(act, v * om);
      store(y, out, flags);
      return;
    }

    // Integer path.
    headroom_factor_ = apply_headroom(raw_max, q_[x].scale, w_scale);
    const int wbits = int_bits(b_dt);
    std::vector<int16_t> wq(w.size());
    for (std::size_t i = 0; i < w.size(); ++i)
      wq[i] = static_cast<int16_t>(quantize(w[i], w_scale[w_channel(static_cast<int64_t>(i))], wbits));
    const double a_scale = q_[x].scale;
    std::vector<int16_t> xa(q_[x].q.begin(), q_[x].q.end());  // int8/int16 codes fit int16

    const int64_t rows = n_eval_ * g.rows_per_sample;
    std::vector<int64_t> acc(static_cast<std::size_t>(rows * g.f));
    std::vector<uint8_t> aflags(acc.size(), 0);
    if (!g.conv) {
      int_gemm_dispatch(l, xa.data(), wq.data(), rows, g.k, g.f, acc.data(), aflags.data());
    } else {
      const Window win(l);
      std::vector<int16_t> col(static_cast<std::size_t>(g.rows_per_sample * g.k));
      std::vector<int64_t> acc_g(static_cast<std::size_t>(g.rows_per_sample * g.fg));
      std::vector<uint8_t> flags_g(acc_g.size());
      for (int64_t s = 0; s < n_eval_; ++s) {
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          im2col(xa.data() + s * g.h * g.w * g.c, g, win, grp, col.data());
          int_gemm_dispatch(l, col.data(), wq.data() + grp * g.k * g.fg, g.rows_per_sample, g.k, g.fg, acc_g.data(),
                            flags_g.data());
          for (int64_t r = 0; r < g.rows_per_sample; ++r)
            for (int64_t j = 0; j < g.fg; ++j) {
              const int64_t dst = (s * g.rows_per_sample + r) * g.f + grp * g.fg + j;
              acc[dst] = acc_g[r * g.fg + j];
              aflags[dst] = flags_g[r * g.fg + j];
            }
        }
      }
    }
    for (std::size_t i = 0; i < acc.size(); ++i) flags[i] |= aflags[i];
    write_accumulators(l, acc, a_scale, w_scale, raw_max * std::abs(l.output_multiplier), flags);
  }

  // Stores a matrix layer's fp32 pre-activation `pre` (n_all samples) as its reference
  // output: times the absorbed output multiplier, then the fused activation. Returns
  // the calibrated max |pre-activation| before the multiplier (the accumulator range).
  double reference_output(const Layer& l, std::vector<float>& pre) {
    const int64_t ey = elems(l.output);
    const double raw_max = calibration_max(pre, ey);
    const auto om = static_cast<float>(l.output_multiplier);
    for (float& v : pre) v = activate(l.activation, v * om);
    ref_[l.output] = std::move(pre);
    calib_max_[l.output] = calibration_max(ref_[l.output], ey);
    return raw_max;
  }

  // Accumulator headroom: an accumulator holds pre / (s_a s_w), so weight (second
  // operand) scales below raw_max / (s_a 2^(width - 1 - h)) are raised to it, leaving
  // the calibrated range h bits below saturation. Returns the largest raise (1: none).
  double apply_headroom(double raw_max, double a_scale, std::vector<double>& w_scale) const {
    if (opt_.accumulator_headroom_bits < 0 || !(raw_max > 0) || !std::isfinite(raw_max)) return 1.0;
    const double limit = std::ldexp(1.0, model_.width_bits - 1 - opt_.accumulator_headroom_bits);
    const double floor = raw_max / (a_scale * limit);
    double factor = 1.0;
    for (double& s : w_scale) {
      if (s < floor) {
        factor = std::max(factor, floor / s);
        s = floor;
      }
    }
    return factor;
  }

  // Accumulators (output element i in channel i % w_scale.size()) -> the output
  // tensor: dequantized for a float output, else requantized with fixed-point
  // multipliers s_a s_w[c] |multiplier| / s_out and the fused activation applied.
  // pre_max: calibrated max |pre-activation| (the sigmoid/tanh table's input range).
  void write_accumulators(const Layer& l, const std::vector<int64_t>& acc, double a_scale,
                          const std::vector<double>& w_scale, double pre_max, std::vector<uint8_t>& flags) {
    const int y = l.output;
    const Activation act = l.activation;
    const auto channels = static_cast<int64_t>(w_scale.size());
    const double om = l.output_multiplier;
    if (!is_int(g_.tensors[y].dtype)) {  // integer MACs, float output: dequantize the accumulator
      std::vector<float> out(acc.size());
      for (std::size_t i = 0; i < acc.size(); ++i) {
        double real = static_cast<double>(acc[i]) * a_scale * w_scale[i % channels];
        if (om != 1.0) real *= om;
        out[i] = activate(act, static_cast<float>(real));
      }
      store(y, out, flags);
      return;
    }

    // Requantize the accumulators to the output dtype with fixed-point multipliers.
    QTensor& out = int_output(y);
    const int ybits = int_bits(out.dtype);
    const double y_scale = out.scale;
    const bool table = act == Activation::kSigmoid || act == Activation::kTanh;
    // Sigmoid/tanh go through a table: requantize to an input code of the output's
    // width with the pre-activation's calibrated scale, then code -> f(code * s) -> code.
    const double target = table ? symmetric_scale(pre_max, ybits) : y_scale;
    std::vector<FixedMultiplier> mult(static_cast<std::size_t>(channels));
    for (int64_t f = 0; f < channels; ++f) mult[f] = make_multiplier(a_scale * w_scale[f] * std::abs(om) / target);
    const int64_t relu6_max = saturate(round_half_away(6.0 / y_scale), ybits);
    for (std::size_t i = 0; i < acc.size(); ++i) {
      bool sat = false;
      // A negative multiplier (Mul by -c) negates the accumulator first.
      const int64_t a = om >= 0 ? acc[i] : (acc[i] == INT64_MIN ? INT64_MAX : -acc[i]);
      // relu/relu6 clamp before the output range does, so only what they let through
      // can saturate (a value that relu6 cuts to 6 anyway is not an error).
      int64_t v = apply_multiplier(a, mult[i % channels]);
      switch (act) {
        case Activation::kNone: v = saturate(v, ybits, &sat); break;
        case Activation::kRelu: v = saturate(std::max<int64_t>(v, 0), ybits, &sat); break;
        case Activation::kRelu6: v = saturate(std::min(std::max<int64_t>(v, 0), relu6_max), ybits, &sat); break;
        case Activation::kSigmoid:
        case Activation::kTanh:
          v = saturate(v, ybits, &sat);
          v = quantize(activate(act, static_cast<float>(dequantize(v, target))), y_scale, ybits, &sat);
          break;
      }
      out.q[i] = static_cast<int32_t>(v);
      if (sat) flags[i] |= kRequantSaturated;
    }
  }

  // Activation x activation (attention's Q K^T and P V): [..., M, K] x [..., K, N]
  // per sample, leading axes broadcast; the second operand is loaded into the array
  // as weights. Same accumulator model and requantization as fc.
  void matmul_layer(const Layer& l, std::vector<uint8_t>& flags) {
    if (l.inputs.size() != 2) unsupported(l, "matmul without two activation inputs");
    const int xa = l.inputs[0], xb = l.inputs[1], y = l.output;
    const Shape &as = g_.tensors[xa].shape, &bs = g_.tensors[xb].shape, &ys = g_.tensors[y].shape;
    if (as.size() < 2 || bs.size() < 2 || ys.size() < 2) unsupported(l, "matmul of operands of rank < 2");
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    const Shape lead(ys.begin(), ys.end() - 2);
    const std::vector<int64_t> ga = broadcast_map(Shape(as.begin(), as.end() - 2), lead);
    const std::vector<int64_t> gb = broadcast_map(Shape(bs.begin(), bs.end() - 2), lead);
    if (ga.empty() || gb.empty() || bs[bs.size() - 2] != k) unsupported(l, "this matmul shape");
    const int64_t ea = elems(xa), eb = elems(xb), ey = elems(y);
    const auto groups = static_cast<int64_t>(ga.size());
    // Visits (sample, group) with the offsets of the A block, the B block and the output.
    auto blocks = [&](int64_t samples, auto&& visit) {
      for (int64_t s = 0; s < samples; ++s)
        for (int64_t gi = 0; gi < groups; ++gi) visit(s * ea + ga[gi] * m * k, s * eb + gb[gi] * k * n, s * ey + gi * m * n);
    };
    std::vector<float> pre(static_cast<std::size_t>(n_all_ * ey));
    blocks(n_all_, [&](int64_t oa, int64_t ob, int64_t oy) {
      float_gemm(ref_[xa].data() + oa, ref_[xb].data() + ob, m, k, n, pre.data() + oy, n);
    });
    const double raw_max = reference_output(l, pre);

    if (!(q_[xa].integer() && q_[xb].integer())) {  // fp16/bf16 operand: fp32 products and sums
      const std::vector<float> av = q_[xa].dequantized(), bv = q_[xb].dequantized();
      std::vector<float> out(static_cast<std::size_t>(n_eval_ * ey));
      blocks(n_eval_, [&](int64_t oa, int64_t ob, int64_t oy) {
        float_gemm(av.data() + oa, bv.data() + ob, m, k, n, out.data() + oy, n);
      });
      const auto om = static_cast<float>(l.output_multiplier);
      for (float& v : out) v = activate(l.activation, v * om);
      store(y, out, flags);
      return;
    }

    std::vector<int16_t> aq(q_[xa].q.begin(), q_[xa].q.end()), bq(q_[xb].q.begin(), q_[xb].q.end());
    std::vector<double> b_scale(1, q_[xb].scale);
    headroom_factor_ = apply_headroom(raw_max, q_[xa].scale, b_scale);
    if (headroom_factor_ > 1.0) {  // B is requantized to the coarser scale as it is loaded
      const FixedMultiplier down = make_multiplier(q_[xb].scale / b_scale[0]);
      const int bits = int_bits(q_[xb].dtype);
      for (int16_t& v : bq) v = static_cast<int16_t>(requantize(v, down, bits));
    }
    std::vector<int64_t> acc(static_cast<std::size_t>(n_eval_ * ey));
    std::vector<uint8_t> aflags(acc.size(), 0);
    blocks(n_eval_, [&](int64_t oa, int64_t ob, int64_t oy) {
      int_gemm_dispatch(l, aq.data() + oa, bq.data() + ob, m, k, n, acc.data() + oy, aflags.data() + oy);
    });
    for (std::size_t i = 0; i < acc.size(); ++i) flags[i] |= aflags[i];
    write_accumulators(l, acc, q_[xa].scale, std::vector<double>(static_cast<std::size_t>(n), b_scale[0]),
                       raw_max * std::abs(l.output_multiplier), flags);
  }

  // ---- vector layers ------------------------------------------------------------------

  void need_hwc(const Layer& l) const {
    const Tensor& x = g_.tensors[l.inputs.at(0)];
    const Tensor& y = g_.tensors[l.output];
    if (x.shape.size() != 3 || (l.op != OpKind::kGlobalAvgPool && y.shape.size() != 3)) {
      unsupported(l, op_text(l.op) + " on tensors that are not [H, W, C]");
    }
    if (y.shape.back() != x.shape.back()) unsupported(l, op_text(l.op) + " that changes the channel count");
  }

  void pool_layer(const Layer& l, std::vector<uint8_t>& flags) {
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

  void global_avgpool_layer(const Layer& l, std::vector<uint8_t>& flags) {
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
  void rescale_into(const QTensor& from, QTensor& to, int64_t from_off, int64_t to_off, int64_t count,
                    std::vector<uint8_t>& flags) const {
    const FixedMultiplier m = make_multiplier(from.scale / to.scale);
    const int bits = int_bits(to.dtype);
    for (int64_t i = 0; i < count; ++i) {
      bool sat = false;
      to.q[to_off + i] = static_cast<int32_t>(requantize(from.q[from_off + i], m, bits, &sat));
      if (sat) flags[to_off + i] |= kRequantSaturated;
    }
  }

  void flatten_layer(const Layer& l, std::vector<uint8_t>& flags) {
    const int64_t e = elems(l.output);
    if (elems(l.inputs.at(0)) != e) unsupported(l, "a " + op_text(l.op) + " that changes the element count");
    const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
      std::copy(in[0], in[0] + n * e, out);
    };
    reference(l, fn);
    if (!all_int(l)) return float_path(l, fn, flags);
    rescale_into(q_[l.inputs[0]], int_output(l.output), 0, 0, n_eval_ * e, flags);
  }

  void concat_layer(const Layer& l, std::vector<uint8_t>& flags) {
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
  std::vector<float> constant_operand(int li) const {
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
  void binary_layer(int li, std::vector<uint8_t>& flags) {
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
  void unary_layer(const Layer& l, std::vector<uint8_t>& flags) {
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
  void reduce_layer(const Layer& l, std::vector<uint8_t>& flags) {
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
  void move_layer(const Layer& l, std::vector<uint8_t>& flags) {
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
  void fp32_layer(const Layer& l, const FloatFn& fn, std::vector<uint8_t>& flags) {
    reference(l, fn);
    float_path(l, fn, flags);
  }

  const Graph& g_;
  const ArchConfig& arch_;
  FunctionalOptions opt_;
  int64_t n_eval_ = 1, n_all_ = 1;
  AccumulatorModel model_;
  std::unique_ptr<array::PeArrayReference> pe_;
  std::vector<std::vector<float>> ref_;  // fp32 reference, n_all samples (evaluated batch first)
  std::vector<QTensor> q_;               // assigned precision, evaluated batch
  std::vector<double> calib_max_;
  std::vector<int> last_use_;
  double headroom_factor_ = 1.0;  // set by the matrix layer being run
};

}  // namespace

bool functional_supports(OpKind op) {
  switch (op) {
    // Matrix ops and the ops with integer paths, run by the Runner itself.
    case OpKind::kFc:
    case OpKind::kConv2d:
    case OpKind::kMatmul:
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
    case OpKind::kGlobalAvgPool:
    case OpKind::kGlobalMaxPool:
    case OpKind::kReduceMean:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kExpand:
    case OpKind::kConcat: return true;
    default: break;
  }
  if (op == OpKind::kOpCount) return false;
  const graph::OpDef& def = op_def(op);
  return def.cls == graph::OpClass::kVector && (def.unary || def.binary || def.fp32);
}

namespace {

// Rejects unsupported graphs before any work is done.
// The run keeps, for the tensors of the layer being computed, fp32 reference values of
// every sample (evaluated + calibration) and quantized codes and values of the evaluated
// ones, plus the layer's weights a few times over. Checked against the memory this
// process may use before anything is allocated (a std::bad_alloc otherwise, audit D14).
void check_memory(const Graph& g, const FunctionalOptions& opt) {
  const double n_eval = static_cast<double>(opt.batch);
  const double n_all = n_eval * (1.0 + static_cast<double>(opt.calibration_batches));
  const double per_element = 4.0 * n_all + 8.0 * n_eval;
  double worst = 0;
  const Layer* worst_layer = nullptr;
  for (const Layer& l : g.layers) {
    double elements = static_cast<double>(graph::shape_elements(g.tensors[l.output].shape));
    for (int t : l.inputs) elements += static_cast<double>(graph::shape_elements(g.tensors[t].shape));
    const double bytes = elements * per_element + 16.0 * static_cast<double>(l.weight_count());
    if (bytes > worst) worst = bytes, worst_layer = &l;
  }
  const double limit = memory_limit_bytes();
  if (worst_layer && worst > limit) {
    throw InputError("functional mode: layer '" + worst_layer->name + "' of " + g.name + " needs about " +
                     gib_text(worst) + " at --functional-batch " + std::to_string(opt.batch) + " with " +
                     std::to_string(opt.calibration_batches) +
                     " calibration batches, more than this process may use (" + gib_text(limit) +
                     "); use a smaller --functional-batch or --functional-calibration");
  }
}

void validate(const Graph& g, const ArchConfig& arch, const FunctionalOptions& opt) {
  if (opt.batch < 1) throw InputError("functional mode: batch must be >= 1, got " + std::to_string(opt.batch));
  if (opt.calibration_batches < 0) {
    throw InputError("functional mode: calibration batches must be >= 0, got " + std::to_string(opt.calibration_batches));
  }
  if (opt.use_pe_reference && (arch.array.rows > 32 || arch.array.cols > 32)) {
    throw InputError("functional mode: the PE-level reference runs arrays up to 32x32; " + arch.name + " is " +
                     std::to_string(arch.array.rows) + "x" + std::to_string(arch.array.cols));
  }
  if (arch.accumulators.width_bits < 2 || arch.accumulators.width_bits > 64) {
    throw InputError("functional mode: accumulator width must be 2..64 bits");
  }
  for (const auto& given : opt.inputs) {
    const int t = g.find_tensor(given.first);
    if (t < 0 || std::find(g.inputs.begin(), g.inputs.end(), t) == g.inputs.end()) {
      throw InputError("functional mode: '" + given.first + "' is not a graph input of " + g.name);
    }
  }
  check_memory(g, opt);
  for (const Layer& l : g.layers) {
    if (!functional_supports(l.op)) {
      std::vector<std::string> names;
      for (const graph::OpDef* d : graph::all_ops())
        if (functional_supports(d->kind)) names.emplace_back(d->name);
      std::sort(names.begin(), names.end());
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      unsupported(l, "op " + op_text(l.op) + " (supported: " + list + ")");
    }
    if (l.inputs.empty()) unsupported(l, "a layer without inputs");
    if (l.op == OpKind::kPow && l.has_const &&
        static_cast<int64_t>(l.const_values.size()) != graph::shape_elements(l.const_shape)) {
      unsupported(l, "pow without a known exponent (the workload gives no constant values)");
    }
    if (graph::is_matrix_op(l.op)) {
      const Activation act = l.activation;
      if (act != Activation::kNone && act != Activation::kRelu && act != Activation::kRelu6 &&
          act != Activation::kSigmoid && act != Activation::kTanh) {
        unsupported(l, "fused activation " + std::string(graph::activation_name(act)));
      }
      const bool int32_b = l.op == OpKind::kMatmul ? l.inputs.size() > 1 && g.tensors[l.inputs[1]].dtype == Dtype::kInt32
                                                   : l.weight_dtype == Dtype::kInt32;
      if (g.tensors[l.inputs[0]].dtype == Dtype::kInt32 || int32_b) unsupported(l, "int32 matrix operands");
    }
  }
}

nlohmann::ordered_json sqnr_json(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

std::string format_db(double v) {
  if (v == kInf) return "exact";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f dB", v);
  return buf;
}

}  // namespace

FunctionalResult run_functional(const Graph& graph, const ArchConfig& arch, const FunctionalOptions& options) {
  validate(graph, arch, options);
  return Runner(graph, arch, options).run();
}

nlohmann::ordered_json to_json(const FunctionalResult& r) {
  nlohmann::ordered_json j;
  j["reference"] = "fp32";
  j["batch"] = r.options.batch;
  j["seed"] = r.options.seed;
  j["calibration_batches"] = r.options.calibration_batches;
  j["weight_scales"] = r.options.per_channel ? "per_channel" : "per_tensor";
  j["pe_reference"] = r.options.use_pe_reference;
  j["accumulator_bits"] = r.accumulator_bits;
  j["k_tile"] = r.k_tile;
  j["accumulator_headroom_bits"] = r.options.accumulator_headroom_bits;
  j["rounding"] = {{"integer", "half_away_from_zero"}, {"fp16_bf16", "nearest_even"}};
  j["output_sqnr_db"] = sqnr_json(r.output_sqnr_db);
  j["output_exact"] = r.output_sqnr_db == kInf;
  j["output_max_abs_error"] = r.output_max_abs_error;
  j["input_saturated"] = r.input_saturated;
  int64_t saturated = 0;
  for (const LayerError& e : r.layers) saturated += e.saturated;
  j["saturated"] = saturated;
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerError& e : r.layers) {
    nlohmann::ordered_json l;
    l["name"] = e.name;
    l["op"] = e.op;
    l["a_dtype"] = dtype_name(e.a_dtype);
    l["b_dtype"] = dtype_name(e.b_dtype);
    l["out_dtype"] = dtype_name(e.out_dtype);
    l["sqnr_db"] = sqnr_json(e.sqnr_db);
    l["exact"] = e.sqnr_db == kInf;
    l["max_abs_error"] = e.max_abs_error;
    l["ref_rms"] = e.ref_rms;
    l["out_scale"] = e.out_scale;
    l["elements"] = e.elements;
    l["saturated"] = e.saturated;
    l["accumulator_saturated"] = e.accumulator_saturated;
    l["requant_saturated"] = e.requant_saturated;
    if (e.headroom_factor != 1.0) l["headroom_factor"] = e.headroom_factor;
    layers.push_back(std::move(l));
  }
  j["layers"] = std::move(layers);
  return j;
}

std::string summary_line(const FunctionalResult& r) {
  std::string s = "functional: output SQNR " + format_db(r.output_sqnr_db);
  const LayerError* worst = nullptr;
  int64_t saturated = 0;
  for (const LayerError& e : r.layers) {
    saturated += e.saturated;
    if (!worst || e.sqnr_db < worst->sqnr_db) worst = &e;
  }
  if (worst) s += " (worst layer " + worst->name + " " + format_db(worst->sqnr_db) + ")";
  char buf[64];
  std::snprintf(buf, sizeof buf, ", max abs error %.3g", r.output_max_abs_error);
  s += buf;
  s += ", " + std::to_string(saturated) + " saturated outputs";
  if (saturated > 0) {
    int64_t acc = 0, requant = 0;
    for (const LayerError& e : r.layers) {
      acc += e.accumulator_saturated;
      requant += e.requant_saturated;
    }
    s += " (accumulator " + std::to_string(acc) + ", requantization " + std::to_string(requant) + ")";
  }
  if (r.input_saturated > 0) s += ", " + std::to_string(r.input_saturated) + " clipped inputs";
  return s;
}

}  // namespace tessera::functional
