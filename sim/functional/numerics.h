#pragma once
// Bit-level numerics of functional mode (docs/precision-functional.md): integer
// quantization and rounding, fixed-point requantization multipliers, fp16/bf16
// rounding, and the integer GEMM with the accumulator model of the hardware (one
// exact partial sum per K tile from the array, added into saturating accumulators
// of `accumulators.width_bits` bits), both as a fast kernel and tile by tile
// through the cycle-exact PE-level reference.
//
// Rounding, everywhere in the integer path: round half away from zero
// (2.5 -> 3, -2.5 -> -3, 1.5 -> 2). fp16/bf16/fp8: round to nearest, ties to even; fp8
// saturates at its largest finite value.
#include <cstdint>
#include <vector>

#include "models/array/dataflow.h"
#include "models/array/systolic_timing.h"
#include "sim/common/dtype.h"

namespace tessera::array {
class PeArrayReference;
}

namespace tessera::functional {

// ---- integer ranges and rounding ----------------------------------------------------

// Bits of an integer dtype (int4 4, int8 8, int16 16, int32 32); 0 for float dtypes.
int int_bits(Dtype t);
inline int64_t int_max(int bits) { return bits >= 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1; }
inline int64_t int_min(int bits) { return bits >= 64 ? INT64_MIN : -(int64_t{1} << (bits - 1)); }

// Round half away from zero; values beyond +-2^62 are clamped there first.
int64_t round_half_away(double x);

// Clamp to the signed range of `bits`; sets *saturated when it clamps.
int64_t saturate(int64_t v, int bits, bool* saturated = nullptr);

// Symmetric scale that maps max_abs onto the largest code 2^(bits-1)-1 (1.0 when
// max_abs is 0 or not finite, so an all-zero tensor still quantizes to zeros).
double symmetric_scale(double max_abs, int bits);

// q = clamp(round_half_away(x / scale), -2^(bits-1), 2^(bits-1)-1).
int64_t quantize(double x, double scale, int bits, bool* saturated = nullptr);
inline double dequantize(int64_t q, double scale) { return static_cast<double>(q) * scale; }

// ---- fixed-point requantization -----------------------------------------------------

// A positive real multiplier as multiplier * 2^-shift with multiplier in [2^30, 2^31)
// (an int32), as accelerators and gemmlowp/TFLite implement requantization.
struct FixedMultiplier {
  int32_t multiplier = 0;
  int shift = 0;
  double value() const;  // multiplier * 2^-shift
};
// Throws std::invalid_argument if real is not finite and > 0.
FixedMultiplier make_multiplier(double real);

// round_half_away(v * multiplier / 2^shift), exact (128-bit product); clamped to int64.
int64_t apply_multiplier(int64_t v, FixedMultiplier m);

// apply_multiplier, then saturate to `bits`.
inline int64_t requantize(int64_t acc, FixedMultiplier m, int bits, bool* saturated = nullptr) {
  return saturate(apply_multiplier(acc, m), bits, saturated);
}

// Two multipliers sharing one shift, for y = r1*q1 + r2*q2 with a single rounding
// (element-wise add with rescaling): the larger multiplier is normalised to
// [2^30, 2^31], the other uses the same shift.
struct FixedPair {
  int64_t m1 = 0, m2 = 0;
  int shift = 0;
};
FixedPair make_multiplier_pair(double r1, double r2);
int64_t apply_pair(int64_t q1, int64_t q2, const FixedPair& p);  // round_half_away((q1*m1 + q2*m2) / 2^shift)

// ---- 16-bit floats ------------------------------------------------------------------

// float32 -> IEEE binary16 bits, round to nearest even on the float32 bit pattern;
// subnormals kept, overflow to +-inf (anything >= 65520 in magnitude), NaN stays NaN.
uint16_t fp16_bits(float f);
float fp16_value(uint16_t h);
// float32 -> bfloat16 bits (the top 16 bits), round to nearest even; NaN stays NaN.
uint16_t bf16_bits(float f);
float bf16_value(uint16_t h);
inline float round_fp16(float f) { return fp16_value(fp16_bits(f)); }
inline float round_bf16(float f) { return bf16_value(bf16_bits(f)); }

// ---- 8-bit floats (OCP 8-bit Floating Point Formats v1.0) ----------------------------

struct Fp8Format {
  int mantissa_bits = 3;     // stored; the significand has one more (implicit) bit
  int bias = 7;
  double max_finite = 448;   // E4M3 448, E5M2 57344
  bool has_inf = false;      // E5M2 has infinities; E4M3 uses its top exponent for normals
};
Fp8Format fp8_format(Dtype t);  // fp8_e4m3 or fp8_e5m2
// float32 -> the nearest fp8 value, ties to even, subnormals kept (E4M3 quantum 2^-9, E5M2
// 2^-16), saturating: any finite magnitude >= the max (and E4M3's +-inf) gives +-max, so no
// finite input becomes inf or NaN; E5M2 keeps +-inf; NaN stays NaN; the sign of zero is kept.
float round_fp8(float f, Dtype t);
uint8_t fp8_bits(float f, Dtype t);  // the encoding of round_fp8(f, t); NaN: E4M3 0x7f, E5M2 0x7e
float fp8_value(uint8_t bits, Dtype t);
// fp8 with a per-tensor scale (as FP8 training and inference keep one, e.g. NVIDIA Transformer
// Engine's amax scaling): scale * round_fp8(f / scale); *saturated set when |f / scale| > max.
float round_fp8_scaled(float f, Dtype t, double scale, bool* saturated = nullptr);
// The scale that maps max_abs onto the format's largest finite value (1 when max_abs is 0 or
// not finite).
double fp8_scale(double max_abs, Dtype t);

// fp16/bf16/fp8 (unscaled): rounds to that format; any other dtype: returns f unchanged.
float round_to_float_dtype(float f, Dtype t);

// ---- integer GEMM with the accumulator model ---------------------------------------

// How the array and the accumulators add up products (the compiler's tiling: one
// partial sum per K tile of `k_tile` = array.rows reaches the accumulators).
struct AccumulatorModel {
  int64_t k_tile = 256;  // K extent of one matmul tile (array rows)
  int width_bits = 32;   // accumulator entry width; each tile's add saturates to it
};

// Per-element status bits of a GEMM output.
enum : uint8_t {
  kAccSaturated = 1,      // an add into the accumulator clamped at width_bits
  kRequantSaturated = 2,  // requantization (or an activation table) clamped the output
};

// acc[m x n] = sum over K tiles t of A[:, t] * B[t, :]: each tile's partial sum (exact:
// the array's partial-sum path is as wide as the products need, log2(k_tile) + 2 x
// operand bits) is added into a width_bits accumulator with saturation, in K order.
// A is m x k, B is k x n, both row-major, values within int16. flags[m x n] gets the
// status bits.
void int_gemm(const int16_t* a, const int16_t* b, int64_t m, int64_t k, int64_t n, AccumulatorModel model,
              int64_t* acc, uint8_t* flags);

// The same computation tile by tile on the cycle-exact PE-level reference: the tiles
// are those the compiler emits for the reference's dataflow (K tiles of k_tile, N
// tiles of array cols, M tiles of rows (os) / cols (is)), each tile's C added into
// the saturating accumulators exactly as int_gemm. Requires model.k_tile <= rows
// (ws/is). Gives bit-identical acc and flags to int_gemm. The reference's registers
// are 32 bits: a tile partial sum outside int32 (possible only for int16 x int16)
// cannot be represented there and throws InputError.
void pe_gemm(const array::PeArrayReference& pe, const int16_t* a, const int16_t* b, int64_t m, int64_t k, int64_t n,
             AccumulatorModel model, int64_t* acc, uint8_t* flags);

// c[m x n] (row stride ldc) = A[m x k] * B[k x n] in float32, each output summed in
// K order (no reassociation), so results are reproducible.
void float_gemm(const float* a, const float* b, int64_t m, int64_t k, int64_t n, float* c, int64_t ldc);

}  // namespace tessera::functional
