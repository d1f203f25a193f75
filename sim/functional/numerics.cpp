#include "sim/functional/numerics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "models/array/pe_reference.h"
#include "sim/common/error.h"

namespace tessera::functional {

namespace {

using i128 = __int128;

int64_t clamp_to_int64(i128 v) {
  if (v > static_cast<i128>(INT64_MAX)) return INT64_MAX;
  if (v < static_cast<i128>(INT64_MIN)) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// round_half_away(p / 2^shift) for any shift (negative: a left shift).
i128 round_shift(i128 p, int shift) {
  if (shift <= 0) {
    if (p == 0) return 0;
    if (shift < -32) return p > 0 ? static_cast<i128>(INT64_MAX) : static_cast<i128>(INT64_MIN);
    return p * (static_cast<i128>(1) << -shift);  // |p| < 2^96 here, so no overflow
  }
  if (shift > 120) return 0;  // |p| < 2^97 < 2^(shift-1): rounds to zero
  const i128 half = static_cast<i128>(1) << (shift - 1);
  return p >= 0 ? (p + half) >> shift : -((-p + half) >> shift);
}

}  // namespace

int int_bits(Dtype t) {
  switch (t) {
    case Dtype::kInt8:
    case Dtype::kUint8: return 8;  // functional mode's own symmetric codes: the width, not the model's zero points
    case Dtype::kInt16: return 16;
    case Dtype::kInt32: return 32;
    case Dtype::kInt4: return 4;
    case Dtype::kFp16:
    case Dtype::kBf16:
    case Dtype::kFp32:
    case Dtype::kFp8E4m3:
    case Dtype::kFp8E5m2: return 0;
  }
  return 0;
}

int64_t round_half_away(double x) {
  if (std::isnan(x)) return 0;
  constexpr double kLimit = 4611686018427387904.0;  // 2^62
  x = std::clamp(x, -kLimit, kLimit);
  return std::llround(x);  // halfway cases away from zero, independent of the rounding mode
}

int64_t saturate(int64_t v, int bits, bool* saturated) {
  const int64_t lo = int_min(bits), hi = int_max(bits);
  if (v > hi || v < lo) {
    if (saturated) *saturated = true;
    return v > hi ? hi : lo;
  }
  return v;
}

double symmetric_scale(double max_abs, int bits) {
  if (!(max_abs > 0) || !std::isfinite(max_abs)) return 1.0;
  return max_abs / static_cast<double>(int_max(bits));
}

int64_t quantize(double x, double scale, int bits, bool* saturated) {
  return saturate(round_half_away(x / scale), bits, saturated);
}

double FixedMultiplier::value() const { return std::ldexp(static_cast<double>(multiplier), -shift); }

FixedMultiplier make_multiplier(double real) {
  if (!(real > 0) || !std::isfinite(real)) {
    throw std::invalid_argument("requantization multiplier must be finite and positive, got " + std::to_string(real));
  }
  int e = 0;
  const double q = std::frexp(real, &e);  // real = q * 2^e, q in [0.5, 1)
  int64_t m = std::llround(std::ldexp(q, 31));
  if (m == (int64_t{1} << 31)) {  // q rounded up to 1.0
    m = int64_t{1} << 30;
    ++e;
  }
  FixedMultiplier out;
  out.multiplier = static_cast<int32_t>(m);
  out.shift = 31 - e;
  return out;
}

int64_t apply_multiplier(int64_t v, FixedMultiplier m) {
  return clamp_to_int64(round_shift(static_cast<i128>(v) * m.multiplier, m.shift));
}

FixedPair make_multiplier_pair(double r1, double r2) {
  if (!(r1 >= 0) || !(r2 >= 0) || !std::isfinite(r1) || !std::isfinite(r2) || (r1 == 0 && r2 == 0)) {
    throw std::invalid_argument("rescale multipliers must be finite, non-negative and not both zero");
  }
  int e = 0;
  std::frexp(std::max(r1, r2), &e);
  FixedPair p;
  p.shift = 31 - e;
  p.m1 = std::llround(std::ldexp(r1, p.shift));
  p.m2 = std::llround(std::ldexp(r2, p.shift));
  return p;
}

int64_t apply_pair(int64_t q1, int64_t q2, const FixedPair& p) {
  const i128 sum = static_cast<i128>(q1) * p.m1 + static_cast<i128>(q2) * p.m2;
  return clamp_to_int64(round_shift(sum, p.shift));
}

// ---- 16-bit floats ------------------------------------------------------------------

uint16_t fp16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((ax >> 13) & 0x3ffu);  // NaN (quiet)
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (65504 + half an ulp, a tie to even = up): inf
  const int e = static_cast<int>(ax >> 23) - 127;
  const uint32_t mant = ax & 0x7fffffu;
  if (e >= -14) {  // normal fp16
    uint32_t h = (static_cast<uint32_t>(e + 15) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is correct
    return sign | static_cast<uint16_t>(h);
  }
  // Subnormal fp16 (unit 2^-24) or zero. value = full * 2^(e-23), full = 1.mant as 24 bits.
  if (ax == 0) return sign;
  const uint32_t full = mant | 0x800000u;
  const int s = -(e + 1);  // value / 2^-24 = full >> s
  if (e < -127 + 1) return sign;  // float32 subnormal input: far below 2^-25
  if (s > 24) return sign;        // below 2^-25: rounds to zero
  uint32_t h = full >> s;
  const uint32_t rest = full & ((1u << s) - 1u);
  const uint32_t half = 1u << (s - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;  // may become the smallest normal, 0x400: correct
  return sign | static_cast<uint16_t>(h);
}

float fp16_value(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);  // exact
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (mant << 13));
}

uint16_t bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);  // ties to even; overflow carries into inf
  return static_cast<uint16_t>(rounded >> 16);
}

float bf16_value(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// ---- 8-bit floats -------------------------------------------------------------------

Fp8Format fp8_format(Dtype t) {
  // OCP 8-bit Floating Point Formats (2023) v1.0, Table 1: E4M3 bias 7, max 1.75 x 2^8 = 448
  // (S.1111.111 is NaN, so the top exponent holds normals); E5M2 bias 15, max 1.75 x 2^15 = 57344.
  if (t == Dtype::kFp8E5m2) return Fp8Format{2, 15, 57344.0, true};
  return Fp8Format{3, 7, 448.0, false};
}

float round_fp8(float f, Dtype t) {
  const Fp8Format fmt = fp8_format(t);
  if (std::isnan(f)) return f;
  const double a = std::fabs(static_cast<double>(f));
  double r;
  if (std::isinf(f)) {
    r = fmt.has_inf ? a : fmt.max_finite;  // E4M3 has no infinity: saturate (OCP's saturating conversion)
  } else if (a >= fmt.max_finite) {
    r = fmt.max_finite;  // saturating: no finite input becomes inf or NaN
  } else {
    // Quantum of a's binade; below the smallest normal 2^(1 - bias) the subnormal quantum.
    const int emin = 1 - fmt.bias;
    int e = a > 0 ? std::ilogb(a) : emin;
    if (e < emin) e = emin;
    const double quantum = std::ldexp(1.0, e - fmt.mantissa_bits);
    const double q = a / quantum;  // exact: a power-of-two scaling of a float in double
    double n = std::floor(q);
    const double rest = q - n;
    if (rest > 0.5 || (rest == 0.5 && std::fmod(n, 2.0) != 0.0)) n += 1;  // ties to even
    r = std::min(n * quantum, fmt.max_finite);  // the max's binade rounds up at most to the max (< max + half ulp)
  }
  return static_cast<float>(std::signbit(f) ? -r : r);
}

uint8_t fp8_bits(float f, Dtype t) {
  const Fp8Format fmt = fp8_format(t);
  if (std::isnan(f)) return fmt.has_inf ? 0x7e : 0x7f;  // E5M2: a quiet NaN, S.11111.10; E4M3: S.1111.111
  const float r = round_fp8(f, t);
  const uint8_t sign = std::signbit(r) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(r));
  const int exp_bits = 7 - fmt.mantissa_bits;
  if (std::isinf(r)) return sign | static_cast<uint8_t>(((1u << exp_bits) - 1u) << fmt.mantissa_bits);
  if (a == 0) return sign;
  const int emin = 1 - fmt.bias;
  const int e = std::max(std::ilogb(a), emin);
  const auto significand = static_cast<uint32_t>(std::ldexp(a, fmt.mantissa_bits - e));  // exact after rounding
  const uint32_t biased = std::ilogb(a) < emin ? 0u : static_cast<uint32_t>(e + fmt.bias);
  const uint32_t mant = significand & ((1u << fmt.mantissa_bits) - 1u);
  return sign | static_cast<uint8_t>((biased << fmt.mantissa_bits) | mant);
}

float fp8_value(uint8_t bits, Dtype t) {
  const Fp8Format fmt = fp8_format(t);
  const int exp_bits = 7 - fmt.mantissa_bits;
  const uint32_t e = (bits >> fmt.mantissa_bits) & ((1u << exp_bits) - 1u);
  const uint32_t mant = bits & ((1u << fmt.mantissa_bits) - 1u);
  const bool negative = (bits & 0x80) != 0;
  const uint32_t top = (1u << exp_bits) - 1u;
  if (fmt.has_inf && e == top) {
    if (mant != 0) return std::numeric_limits<float>::quiet_NaN();
    return negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }
  if (!fmt.has_inf && e == top && mant == (1u << fmt.mantissa_bits) - 1u) return std::numeric_limits<float>::quiet_NaN();
  const double v = e == 0 ? std::ldexp(static_cast<double>(mant), 1 - fmt.bias - fmt.mantissa_bits)
                          : std::ldexp(static_cast<double>(mant | (1u << fmt.mantissa_bits)),
                                       static_cast<int>(e) - fmt.bias - fmt.mantissa_bits);
  return static_cast<float>(negative ? -v : v);
}

float round_to_float_dtype(float f, Dtype t) {
  if (t == Dtype::kFp16) return round_fp16(f);
  if (t == Dtype::kBf16) return round_bf16(f);
  if (dtype_is_fp8(t)) return round_fp8(f, t);
  return f;
}

float round_fp8_scaled(float f, Dtype t, double scale, bool* saturated) {
  const double x = static_cast<double>(f) / scale;
  if (saturated && std::fabs(x) > fp8_format(t).max_finite) *saturated = true;
  return static_cast<float>(static_cast<double>(round_fp8(static_cast<float>(x), t)) * scale);
}

double fp8_scale(double max_abs, Dtype t) {
  if (!(max_abs > 0) || !std::isfinite(max_abs)) return 1.0;
  return max_abs / fp8_format(t).max_finite;
}

// ---- GEMMs --------------------------------------------------------------------------

namespace {

int64_t max_abs16(const int16_t* v, int64_t count) {
  int64_t mx = 0;
  for (int64_t i = 0; i < count; ++i) mx = std::max<int64_t>(mx, v[i] < 0 ? -int64_t{v[i]} : int64_t{v[i]});
  return mx;
}

// Could a K tile's partial sum leave int32?
bool partial_sum_may_leave_int32(const int16_t* a, const int16_t* b, int64_t m, int64_t k, int64_t n, int64_t k_tile) {
  const int64_t bound = max_abs16(a, m * k) * max_abs16(b, k * n) * std::min(k, k_tile);
  return bound > INT32_MAX;
}

// Adds one tile's (already 32-bit) partial sum into a saturating accumulator entry.
inline void accumulate(int64_t& acc, int64_t part, int64_t lo, int64_t hi, uint8_t& flag) {
  const i128 s = static_cast<i128>(acc) + part;
  if (s > hi) {
    acc = hi;
    flag |= kAccSaturated;
  } else if (s < lo) {
    acc = lo;
    flag |= kAccSaturated;
  } else {
    acc = static_cast<int64_t>(s);
  }
}

// x86-64: an AVX2 clone of each hot kernel, picked at load time. Vector width does not
// change results: every output still sums in K order, and fp contraction is off.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TESSERA_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define TESSERA_KERNEL
#endif

// One K tile [k0, k1) of rows [i0, i0 + rows) x columns [j0, j0 + jn): the exact
// partial sums (part, row stride kNb).
template <typename P>
TESSERA_KERNEL void int_tile_kernel(const int16_t* __restrict a, const int16_t* __restrict b, int64_t k, int64_t n,
                                    int64_t i0, int64_t rows, int64_t j0, int64_t jn, int64_t k0, int64_t k1,
                                    P* __restrict part, int64_t stride) {
  for (int64_t r = 0; r < rows; ++r) std::fill(part + r * stride, part + r * stride + jn, P{0});
  for (int64_t kk = k0; kk < k1; ++kk) {
    const int16_t* __restrict brow = b + kk * n + j0;
    for (int64_t r = 0; r < rows; ++r) {
      const P av = a[(i0 + r) * k + kk];
      if (av == 0) continue;
      P* __restrict pr = part + r * stride;
      for (int64_t j = 0; j < jn; ++j) pr[j] += av * static_cast<P>(brow[j]);
    }
  }
}

template <typename P>
void int_gemm_impl(const int16_t* a, const int16_t* b, int64_t m, int64_t k, int64_t n, AccumulatorModel model,
                   int64_t* acc, uint8_t* flags) {
  // Loop order: column block, K tile, row block; one K tile of a column block of B
  // (k_tile x 256 int16 = 128 KiB at k_tile 256) stays in L2 while every row passes.
  constexpr int64_t kNb = 256, kMb = 8;
  const int64_t lo = int_min(model.width_bits), hi = int_max(model.width_bits);
  std::fill(acc, acc + m * n, 0);
  std::fill(flags, flags + m * n, 0);
  std::vector<P> part(kMb * kNb);
  for (int64_t j0 = 0; j0 < n; j0 += kNb) {
    const int64_t jn = std::min(kNb, n - j0);
    for (int64_t k0 = 0; k0 < k; k0 += model.k_tile) {
      const int64_t k1 = std::min(k, k0 + model.k_tile);
      for (int64_t i0 = 0; i0 < m; i0 += kMb) {
        const int64_t rows = std::min(kMb, m - i0);
        int_tile_kernel<P>(a, b, k, n, i0, rows, j0, jn, k0, k1, part.data(), kNb);
        for (int64_t r = 0; r < rows; ++r) {
          int64_t* accr = acc + (i0 + r) * n + j0;
          uint8_t* fr = flags + (i0 + r) * n + j0;
          const P* pr = part.data() + r * kNb;
          for (int64_t j = 0; j < jn; ++j) accumulate(accr[j], pr[j], lo, hi, fr[j]);
        }
      }
    }
  }
}

void check_model(AccumulatorModel model) {
  if (model.k_tile < 1) throw std::invalid_argument("k_tile must be >= 1");
  if (model.width_bits < 2 || model.width_bits > 64) throw std::invalid_argument("accumulator width must be 2..64 bits");
}

}  // namespace

void int_gemm(const int16_t* a, const int16_t* b, int64_t m, int64_t k, int64_t n, AccumulatorModel model,
              int64_t* acc, uint8_t* flags) {
  check_model(model);
  if (partial_sum_may_leave_int32(a, b, m, k, n, model.k_tile)) {
    int_gemm_impl<int64_t>(a, b, m, k, n, model, acc, flags);
  } else {
    int_gemm_impl<int32_t>(a, b, m, k, n, model, acc, flags);
  }
}

void pe_gemm(const array::PeArrayReference& pe, const int16_t* a, const int16_t* b, int64_t m, int64_t k, int64_t n,
             AccumulatorModel model, int64_t* acc, uint8_t* flags) {
  check_model(model);
  const array::ArrayDims dims = pe.dims();
  const array::Dataflow df = pe.dataflow();
  // Stationary extents as large as the array allows; streamed ones may be any size
  // and 256 keeps the tiles small. K steps by k_tile, as the compiler's tiles do.
  const array::GemmTile bounds = array::dataflow_model(df).tile_bounds(dims);
  const int64_t mt = bounds.m != array::kUnbounded ? bounds.m : 256;
  const int64_t nt = bounds.n != array::kUnbounded ? bounds.n : 256;
  const int64_t kt = model.k_tile;
  if (kt > bounds.k) {
    throw std::invalid_argument("pe_gemm: K tile " + std::to_string(kt) + " exceeds the array's " +
                                std::to_string(dims.rows) + " rows");
  }
  const bool may_leave_int32 = partial_sum_may_leave_int32(a, b, m, k, n, kt);
  const int64_t lo = int_min(model.width_bits), hi = int_max(model.width_bits);
  std::fill(acc, acc + m * n, 0);
  std::fill(flags, flags + m * n, 0);

  struct Origin {
    int64_t m0, k0, n0;
  };
  constexpr std::size_t kTilesPerRun = 64;  // bounds the operand copies held at once
  std::vector<array::ReferenceTile> tiles;
  std::vector<Origin> origins;
  auto flush = [&] {
    if (tiles.empty()) return;
    const array::ReferenceRun run = pe.run(tiles);
    for (std::size_t t = 0; t < tiles.size(); ++t) {
      const array::GemmTile& g = tiles[t].shape;
      const Origin& o = origins[t];
      const std::vector<int32_t>& c = run.tiles[t].c;
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          const int64_t idx = (o.m0 + i) * n + o.n0 + j;
          if (may_leave_int32) {  // the PE's 32-bit registers cannot hold every partial sum: check this one
            int64_t exact = 0;
            for (int64_t p = 0; p < g.k; ++p) exact += int64_t{a[(o.m0 + i) * k + o.k0 + p]} * b[(o.k0 + p) * n + o.n0 + j];
            if (exact != c[i * g.n + j]) {
              throw InputError("a K-tile partial sum (" + std::to_string(exact) +
                               ") does not fit the 32-bit registers of the PE-level reference; run without it");
            }
          }
          accumulate(acc[idx], c[i * g.n + j], lo, hi, flags[idx]);
        }
      }
    }
    tiles.clear();
    origins.clear();
  };
  for (int64_t m0 = 0; m0 < m; m0 += mt) {
    const int64_t m1 = std::min(m, m0 + mt);
    for (int64_t n0 = 0; n0 < n; n0 += nt) {
      const int64_t n1 = std::min(n, n0 + nt);
      for (int64_t k0 = 0; k0 < k; k0 += kt) {  // K innermost: tiles reach the accumulators in K order
        const int64_t k1 = std::min(k, k0 + kt);
        array::ReferenceTile tile;
        tile.shape = {m1 - m0, k1 - k0, n1 - n0};
        if (!array::tile_fits(df, dims, tile.shape)) throw std::logic_error("pe_gemm: tile does not fit the array");
        tile.a.resize(static_cast<std::size_t>((m1 - m0) * (k1 - k0)));
        tile.b.resize(static_cast<std::size_t>((k1 - k0) * (n1 - n0)));
        for (int64_t i = m0; i < m1; ++i)
          for (int64_t p = k0; p < k1; ++p) tile.a[(i - m0) * (k1 - k0) + (p - k0)] = a[i * k + p];
        for (int64_t p = k0; p < k1; ++p)
          for (int64_t j = n0; j < n1; ++j) tile.b[(p - k0) * (n1 - n0) + (j - n0)] = b[p * n + j];
        tiles.push_back(std::move(tile));
        origins.push_back({m0, k0, n0});
        if (tiles.size() >= kTilesPerRun) flush();
      }
    }
  }
  flush();
}

namespace {

// Rows [i0, i0 + rows) (rows <= 4) x columns [j0, j0 + jn) of C += A[:, k0:k1] * B[k0:k1, :].
TESSERA_KERNEL void float_block_kernel(const float* __restrict a, const float* __restrict b, int64_t k, int64_t n,
                                       int64_t i0, int64_t rows, int64_t j0, int64_t jn, int64_t k0, int64_t k1,
                                       float* __restrict c, int64_t ldc) {
  if (rows == 4) {
    float* __restrict c0 = c + i0 * ldc + j0;
    float* __restrict c1 = c0 + ldc;
    float* __restrict c2 = c1 + ldc;
    float* __restrict c3 = c2 + ldc;
    for (int64_t kk = k0; kk < k1; ++kk) {
      const float a0 = a[i0 * k + kk], a1 = a[(i0 + 1) * k + kk], a2 = a[(i0 + 2) * k + kk], a3 = a[(i0 + 3) * k + kk];
      if (a0 == 0 && a1 == 0 && a2 == 0 && a3 == 0) continue;
      const float* __restrict brow = b + kk * n + j0;
      for (int64_t j = 0; j < jn; ++j) {
        const float bj = brow[j];
        c0[j] += a0 * bj;
        c1[j] += a1 * bj;
        c2[j] += a2 * bj;
        c3[j] += a3 * bj;
      }
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict cr = c + (i0 + r) * ldc + j0;
    for (int64_t kk = k0; kk < k1; ++kk) {
      const float av = a[(i0 + r) * k + kk];
      if (av == 0) continue;
      const float* __restrict brow = b + kk * n + j0;
      for (int64_t j = 0; j < jn; ++j) cr[j] += av * brow[j];
    }
  }
}

}  // namespace

void float_gemm(const float* a, const float* b, int64_t m, int64_t k, int64_t n, float* c, int64_t ldc) {
  // Blocked over N and K so a 256 x 256 block of B (256 KiB) stays in L2 while every row
  // passes; each C element still accumulates in K order (adding a zero product, or
  // skipping it, leaves it unchanged), so results do not depend on the blocking.
  constexpr int64_t kNb = 256, kKb = 256, kMb = 4;
  for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
  for (int64_t j0 = 0; j0 < n; j0 += kNb) {
    const int64_t jn = std::min(kNb, n - j0);
    for (int64_t k0 = 0; k0 < k; k0 += kKb) {
      const int64_t k1 = std::min(k, k0 + kKb);
      for (int64_t i0 = 0; i0 < m; i0 += kMb) {
        float_block_kernel(a, b, k, n, i0, std::min(kMb, m - i0), j0, jn, k0, k1, c, ldc);
      }
    }
  }
}

}  // namespace tessera::functional
