#include "sim/functional/functional.h"

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
#include "sim/functional/numerics.h"

namespace tessera::functional {

using graph::Activation;
using graph::Graph;
using graph::Layer;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- deterministic pseudo-random data ------------------------------------------------

uint64_t mix64(uint64_t x) {  // the splitmix64 finaliser
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

enum StreamKind : uint64_t { kInputEval = 1, kInputCalibration = 2, kWeights = 3 };

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
    for (int64_t i = 0; i < n_eval_ * e; ++i) r[i] = eval.normal(static_cast<uint64_t>(i));
    for (int64_t i = n_eval_ * e; i < n_all_ * e; ++i) r[i] = cal.normal(static_cast<uint64_t>(i - n_eval_ * e));
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
    if ((l.op == OpKind::kAdd || l.op == OpKind::kMul) && l.inputs.size() == 2) {
      err.b_dtype = g_.tensors[l.inputs[1]].dtype;
    }
    err.out_dtype = yt.dtype;
    std::vector<uint8_t> flags(static_cast<std::size_t>(n_eval_ * elems(y)), 0);

    switch (l.op) {
      case OpKind::kFc:
      case OpKind::kConv2d: matrix_layer(li, flags); break;
      case OpKind::kMaxPool:
      case OpKind::kAvgPool: pool_layer(l, flags); break;
      case OpKind::kGlobalAvgPool: global_avgpool_layer(l, flags); break;
      case OpKind::kFlatten:
      case OpKind::kReshape: flatten_layer(l, flags); break;
      case OpKind::kConcat: concat_layer(l, flags); break;
      case OpKind::kAdd:
      case OpKind::kMul: binary_layer(l, flags); break;
      case OpKind::kSigmoid:
      case OpKind::kTanh:
      case OpKind::kRelu: unary_layer(l, flags); break;
      default: unsupported(l, "op " + op_text(l.op));
    }

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
    const Dtype a_dt = q_[x].dtype, b_dt = l.weight_dtype, y_dt = g_.tensors[y].dtype;

    // Weights: groups x k x fg, N(0, gain / fan_in) so activations stay O(1).
    const double gain = (act == Activation::kRelu || act == Activation::kRelu6) ? 2.0 : 1.0;
    const float stddev = static_cast<float>(std::sqrt(gain / static_cast<double>(g.k)));
    std::vector<float> w(static_cast<std::size_t>(g.groups * g.k * g.fg));
    const Stream ws(opt_.seed, kWeights, static_cast<uint64_t>(li));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = ws.normal(i) * stddev;

    // fp32 reference (pre-activation kept for the activation table's input scale).
    const int64_t ey = elems(y);
    std::vector<float> pre(static_cast<std::size_t>(n_all_ * ey));
    matrix_float(l, g, ref_[x].data(), n_all_, w, pre.data());
    const bool table = act == Activation::kSigmoid || act == Activation::kTanh;
    const double pre_max = table ? calibration_max(pre, ey) : 0.0;
    for (float& v : pre) v = activate(act, v);
    ref_[y] = std::move(pre);
    calib_max_[y] = calibration_max(ref_[y], ey);

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
      for (float& v : out) v = activate(act, v);
      store(y, out, flags);
      return;
    }

    // Integer path.
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

    if (!is_int(y_dt)) {  // integer MACs, float output: dequantize the accumulator
      std::vector<float> out(acc.size());
      for (std::size_t i = 0; i < acc.size(); ++i) {
        const double real = static_cast<double>(acc[i]) * a_scale * w_scale[i % g.f];
        out[i] = activate(act, static_cast<float>(real));
      }
      store(y, out, flags);
      return;
    }

    // Requantize the accumulators to the output dtype with fixed-point multipliers.
    QTensor& out = int_output(y);
    const int ybits = int_bits(y_dt);
    const double y_scale = out.scale;
    // Sigmoid/tanh go through a table: requantize to an input code of the output's
    // width with the pre-activation's calibrated scale, then code -> f(code * s) -> code.
    const double target = table ? symmetric_scale(pre_max, ybits) : y_scale;
    std::vector<FixedMultiplier> mult(static_cast<std::size_t>(g.f));
    for (int64_t f = 0; f < g.f; ++f) mult[f] = make_multiplier(a_scale * w_scale[f] / target);
    const int64_t relu6_max = saturate(round_half_away(6.0 / y_scale), ybits);
    for (std::size_t i = 0; i < acc.size(); ++i) {
      bool sat = false;
      int64_t v = requantize(acc[i], mult[i % g.f], ybits, &sat);
      switch (act) {
        case Activation::kNone: break;
        case Activation::kRelu: v = std::max<int64_t>(v, 0); break;
        case Activation::kRelu6: v = std::min(std::max<int64_t>(v, 0), relu6_max); break;
        case Activation::kSigmoid:
        case Activation::kTanh:
          v = quantize(activate(act, static_cast<float>(dequantize(v, target))), y_scale, ybits, &sat);
          break;
      }
      out.q[i] = static_cast<int32_t>(v);
      if (sat) flags[i] |= kRequantSaturated;
    }
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

  void binary_layer(const Layer& l, std::vector<uint8_t>& flags) {
    if (l.inputs.size() != 2 || l.has_const) unsupported(l, op_text(l.op) + " with a constant operand");
    const Tensor& at = g_.tensors[l.inputs[0]];
    const Tensor& bt = g_.tensors[l.inputs[1]];
    if (at.shape != bt.shape) unsupported(l, op_text(l.op) + " with broadcasting");
    const int64_t e = elems(l.output);
    const bool add = l.op == OpKind::kAdd;
    const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
      for (int64_t i = 0; i < n * e; ++i) out[i] = add ? in[0][i] + in[1][i] : in[0][i] * in[1][i];
    };
    reference(l, fn);
    if (!all_int(l)) return float_path(l, fn, flags);
    const QTensor& aq = q_[l.inputs[0]];
    const QTensor& bq = q_[l.inputs[1]];
    QTensor& yq = int_output(l.output);
    const int bits = int_bits(yq.dtype);
    if (add) {  // y = (s_a q_a + s_b q_b) / s_y with one rounding
      const FixedPair p = make_multiplier_pair(aq.scale / yq.scale, bq.scale / yq.scale);
      for (int64_t i = 0; i < n_eval_ * e; ++i) {
        bool sat = false;
        yq.q[i] = static_cast<int32_t>(saturate(apply_pair(aq.q[i], bq.q[i], p), bits, &sat));
        if (sat) flags[i] |= kRequantSaturated;
      }
    } else {  // y = q_a q_b * (s_a s_b / s_y)
      const FixedMultiplier m = make_multiplier(aq.scale * bq.scale / yq.scale);
      for (int64_t i = 0; i < n_eval_ * e; ++i) {
        bool sat = false;
        yq.q[i] = static_cast<int32_t>(requantize(int64_t{aq.q[i]} * bq.q[i], m, bits, &sat));
        if (sat) flags[i] |= kRequantSaturated;
      }
    }
  }

  void unary_layer(const Layer& l, std::vector<uint8_t>& flags) {
    const int64_t e = elems(l.output);
    if (elems(l.inputs.at(0)) != e) unsupported(l, "this " + op_text(l.op) + " shape");
    const Activation act = l.op == OpKind::kSigmoid ? Activation::kSigmoid
                           : l.op == OpKind::kTanh  ? Activation::kTanh
                                                    : Activation::kRelu;
    const FloatFn fn = [&](const std::vector<const float*>& in, int64_t n, float* out) {
      for (int64_t i = 0; i < n * e; ++i) out[i] = activate(act, in[0][i]);
    };
    reference(l, fn);
    if (!all_int(l)) return float_path(l, fn, flags);
    const QTensor& xq = q_[l.inputs[0]];
    QTensor& yq = int_output(l.output);
    const int bits = int_bits(yq.dtype);
    if (act == Activation::kRelu) {  // integer max(q, 0), then rescale
      const FixedMultiplier m = make_multiplier(xq.scale / yq.scale);
      for (int64_t i = 0; i < n_eval_ * e; ++i) {
        bool sat = false;
        yq.q[i] = static_cast<int32_t>(requantize(std::max<int64_t>(xq.q[i], 0), m, bits, &sat));
        if (sat) flags[i] |= kRequantSaturated;
      }
      return;
    }
    // Table lookup: code -> f(code * s_x) -> code at s_y.
    for (int64_t i = 0; i < n_eval_ * e; ++i) {
      bool sat = false;
      yq.q[i] = static_cast<int32_t>(
          quantize(activate(act, static_cast<float>(dequantize(xq.q[i], xq.scale))), yq.scale, bits, &sat));
      if (sat) flags[i] |= kRequantSaturated;
    }
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
};

// Rejects unsupported graphs before any work is done.
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
  for (const Layer& l : g.layers) {
    switch (l.op) {
      case OpKind::kFc:
      case OpKind::kConv2d:
      case OpKind::kMaxPool:
      case OpKind::kAvgPool:
      case OpKind::kGlobalAvgPool:
      case OpKind::kFlatten:
      case OpKind::kReshape:
      case OpKind::kConcat:
      case OpKind::kAdd:
      case OpKind::kMul:
      case OpKind::kSigmoid:
      case OpKind::kTanh:
      case OpKind::kRelu: break;
      default: unsupported(l, "op " + op_text(l.op));
    }
    if (l.inputs.empty()) unsupported(l, "a layer without inputs");
    if (graph::is_matrix_op(l.op)) {
      const Activation act = l.activation;
      if (act != Activation::kNone && act != Activation::kRelu && act != Activation::kRelu6 &&
          act != Activation::kSigmoid && act != Activation::kTanh) {
        unsupported(l, "fused activation " + std::string(graph::activation_name(act)));
      }
      if (g.tensors[l.inputs[0]].dtype == Dtype::kInt32 || l.weight_dtype == Dtype::kInt32) {
        unsupported(l, "int32 matrix operands");
      }
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
