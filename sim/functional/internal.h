#pragma once
// Internals of functional mode shared by its source files (not a public header:
// sim/functional/functional.h is). runner.cpp walks the layers, calibrates and
// reports; kernels_matrix.cpp and kernels_vector.cpp compute the layers.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "models/array/pe_reference.h"
#include "sim/functional/functional.h"
#include "sim/functional/numerics.h"
#include "sim/graph/graph.h"

namespace tessera::functional::internal {

using graph::Activation;
using graph::Graph;
using graph::Layer;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- deterministic pseudo-random data ------------------------------------------------

inline uint64_t mix64(uint64_t x) {  // the splitmix64 finaliser
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

inline bool is_int(Dtype t) { return int_bits(t) > 0; }

// A tensor at the assigned precision, for the evaluated batch.
struct QTensor {
  Dtype dtype = Dtype::kInt8;
  double scale = 0;           // integer dtypes: a code's step; fp8: the per-tensor scale (f already holds scaled values)
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

inline float activate(Activation a, float x) {
  switch (a) {
    case Activation::kNone: return x;
    case Activation::kRelu: return x > 0 ? x : 0.0f;
    case Activation::kRelu6: return std::min(std::max(x, 0.0f), 6.0f);
    case Activation::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
    case Activation::kTanh: return std::tanh(x);
  }
  return x;
}

std::string op_text(OpKind op);

[[noreturn]] void unsupported(const Layer& l, const std::string& what);

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

// Defined in kernels_vector.cpp.
// Product of the extents of axes [begin, end) (clamped to the rank).
int64_t product(const Shape& s, std::size_t begin = 0, std::size_t end = SIZE_MAX);
std::vector<int64_t> row_major_strides(const Shape& s);
// For each element of a tensor of shape `out` (row-major), base + sum of its index
// along each axis times `stride[axis]`: the source element of a data movement.
std::vector<int64_t> index_map(const Shape& out, const std::vector<int64_t>& stride, int64_t base = 0);
// Numpy broadcasting: for each element of `out`, the element of an operand of shape
// `in` it reads (right-aligned axes; size-1 axes repeat). Returns empty if `in` does
// not broadcast to `out`.
std::vector<int64_t> broadcast_map(Shape in, const Shape& out);

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
  Runner(const Graph& g, const ArchConfig& arch, const FunctionalOptions& opt);
  FunctionalResult run();
 private:
  int64_t elems(int t) const { return graph::shape_elements(g_.tensors[t].shape); }
  void release(int t);
  double calibration_max(const std::vector<float>& v, int64_t per_sample) const;

  double scale_of(int t) const { return symmetric_scale(calib_max_[t], int_bits(g_.tensors[t].dtype)); }
  int64_t make_input(int t);
  void store(int t, const std::vector<float>& values, std::vector<uint8_t>& flags);
  QTensor& int_output(int t);
  LayerError run_layer(int li);

  // Reference output of a layer from its function on float buffers, then calibration.
  using FloatFn = std::function<void(const std::vector<const float*>& in, int64_t n, float* out)>;
  void reference(const Layer& l, const FloatFn& fn);
  void float_path(const Layer& l, const FloatFn& fn, std::vector<uint8_t>& flags);
  bool all_int(const Layer& l) const;

  // ---- matrix layers (kernels_matrix.cpp) ---------------------------------------------
  MatrixGeom geometry(const Layer& l) const;
  void matrix_float(const Layer& l, const MatrixGeom& g, const float* x, int64_t n, const std::vector<float>& w,
                    float* y) const;
  void int_gemm_dispatch(const Layer& l, const int16_t* a, const int16_t* b, int64_t m, int64_t k, int64_t n,
                         int64_t* acc, uint8_t* flags) const;
  void matrix_layer(int li, std::vector<uint8_t>& flags);
  double reference_output(const Layer& l, std::vector<float>& pre);
  double apply_headroom(double raw_max, double a_scale, std::vector<double>& w_scale) const;
  void write_accumulators(const Layer& l, const std::vector<int64_t>& acc, double a_scale,
                          const std::vector<double>& w_scale, double pre_max, std::vector<uint8_t>& flags);
  void matmul_layer(const Layer& l, std::vector<uint8_t>& flags);

  // ---- vector layers (kernels_vector.cpp) ---------------------------------------------
  void need_hwc(const Layer& l) const;
  void pool_layer(const Layer& l, std::vector<uint8_t>& flags);
  void global_avgpool_layer(const Layer& l, std::vector<uint8_t>& flags);
  void rescale_into(const QTensor& from, QTensor& to, int64_t from_off, int64_t to_off, int64_t count,
                    std::vector<uint8_t>& flags) const;
  void flatten_layer(const Layer& l, std::vector<uint8_t>& flags);
  void concat_layer(const Layer& l, std::vector<uint8_t>& flags);
  std::vector<float> constant_operand(int li) const;
  void binary_layer(int li, std::vector<uint8_t>& flags);
  void unary_layer(const Layer& l, std::vector<uint8_t>& flags);
  void reduce_layer(const Layer& l, std::vector<uint8_t>& flags);
  void move_layer(const Layer& l, std::vector<uint8_t>& flags);
  void fp32_layer(const Layer& l, const FloatFn& fn, std::vector<uint8_t>& flags);

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

}  // namespace tessera::functional::internal
