// Bit-level numerics of functional mode, against hand-derived values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "models/array/pe_reference.h"
#include "sim/common/error.h"
#include "sim/functional/numerics.h"

using namespace tessera;
using namespace tessera::functional;

namespace {

float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

}  // namespace

// ---- rounding and quantization ----------------------------------------------------------

TEST(FunctionalRounding, HalfAwayFromZero) {
  EXPECT_EQ(round_half_away(0.5), 1);
  EXPECT_EQ(round_half_away(1.5), 2);
  EXPECT_EQ(round_half_away(2.5), 3);  // half-to-even would give 2
  EXPECT_EQ(round_half_away(-0.5), -1);
  EXPECT_EQ(round_half_away(-2.5), -3);
  EXPECT_EQ(round_half_away(2.4999999), 2);
  EXPECT_EQ(round_half_away(-2.5000001), -3);
  EXPECT_EQ(round_half_away(0.0), 0);
}

TEST(FunctionalQuantize, SymmetricScaleAndSaturation) {
  EXPECT_DOUBLE_EQ(symmetric_scale(12.7, 8), 0.1);
  EXPECT_DOUBLE_EQ(symmetric_scale(0.0, 8), 1.0);  // all-zero tensor
  EXPECT_DOUBLE_EQ(symmetric_scale(32767.0, 16), 1.0);
  // scale 0.25 (a power of two, so x / s is exact): ties go away from zero
  EXPECT_EQ(quantize(0.125, 0.25, 8), 1);   // 0.5
  EXPECT_EQ(quantize(0.625, 0.25, 8), 3);   // 2.5
  EXPECT_EQ(quantize(-0.625, 0.25, 8), -3);
  EXPECT_EQ(quantize(0.6, 0.25, 8), 2);     // 2.4
  bool sat = false;
  EXPECT_EQ(quantize(31.75, 0.25, 8, &sat), 127);  // 127 exactly: in range
  EXPECT_FALSE(sat);
  EXPECT_EQ(quantize(31.875, 0.25, 8, &sat), 127);  // 127.5 -> 128 -> clamps
  EXPECT_TRUE(sat);
  sat = false;
  EXPECT_EQ(quantize(-32.0, 0.25, 8, &sat), -128);  // -128 exactly: in range
  EXPECT_FALSE(sat);
  EXPECT_EQ(quantize(-100.0, 0.25, 8, &sat), -128);
  EXPECT_TRUE(sat);
  sat = false;
  EXPECT_EQ(quantize(1e6, 1.0, 16, &sat), 32767);
  EXPECT_TRUE(sat);
}

TEST(FunctionalQuantize, RoundTripWithinHalfAStep) {
  std::mt19937_64 rng(5);
  for (int bits : {8, 16}) {
    const double max_abs = 3.7;
    const double s = symmetric_scale(max_abs, bits);
    std::uniform_real_distribution<double> d(-max_abs, max_abs);
    double worst = 0;
    for (int i = 0; i < 100000; ++i) {
      const double x = d(rng);
      bool sat = false;
      const int64_t q = quantize(x, s, bits, &sat);
      EXPECT_FALSE(sat);
      worst = std::max(worst, std::abs(dequantize(q, s) - x));
    }
    EXPECT_LE(worst, s / 2 * (1 + 1e-12)) << bits;
    EXPECT_GT(worst, s / 2 * 0.99) << bits;  // the bound is tight
    // The range ends map onto the extreme codes and back exactly (up to double rounding).
    EXPECT_EQ(quantize(max_abs, s, bits), int_max(bits));
    EXPECT_EQ(quantize(-max_abs, s, bits), -int_max(bits));
    EXPECT_NEAR(dequantize(int_max(bits), s), max_abs, 1e-12);
  }
}

// ---- fixed-point requantization -------------------------------------------------------

TEST(FunctionalRequantize, MultiplierForScaleOneHundredth) {
  // 0.01 = 0.64 * 2^-6; 0.64 * 2^31 = 1374389534.72 -> 1374389535, shift 31 + 6 = 37.
  const FixedMultiplier m = make_multiplier(0.01);
  EXPECT_EQ(m.multiplier, 1374389535);
  EXPECT_EQ(m.shift, 37);
  EXPECT_NEAR(m.value(), 0.01, 1e-11);
  // 1000 * 1374389535 / 2^37 = 10.0000000002
  EXPECT_EQ(requantize(1000, m, 8), 10);
  EXPECT_EQ(requantize(-1000, m, 8), -10);
  EXPECT_EQ(requantize(1049, m, 8), 10);   // 10.49
  EXPECT_EQ(requantize(1050, m, 8), 11);   // 10.5000000002
  EXPECT_EQ(requantize(-1050, m, 8), -11);
  EXPECT_EQ(requantize(12749, m, 8), 127);  // 127.49: in range
  bool sat = false;
  EXPECT_EQ(requantize(12750, m, 8, &sat), 127);  // 127.5 -> 128: saturates
  EXPECT_TRUE(sat);
  sat = false;
  EXPECT_EQ(requantize(-12800, m, 8, &sat), -128);  // exactly -128: in range
  EXPECT_FALSE(sat);
  EXPECT_EQ(requantize(-20000, m, 8, &sat), -128);  // -200
  EXPECT_TRUE(sat);
  sat = false;
  EXPECT_EQ(requantize(20000, m, 8, &sat), 127);  // 200
  EXPECT_TRUE(sat);
  sat = false;
  EXPECT_EQ(requantize(20000, m, 16, &sat), 200);  // fits int16
  EXPECT_FALSE(sat);
  EXPECT_EQ(requantize(5000000, m, 16, &sat), 32767);  // 50000
  EXPECT_TRUE(sat);
}

TEST(FunctionalRequantize, ExactTiesRoundAwayFromZero) {
  const FixedMultiplier half = make_multiplier(0.5);  // 2^30 * 2^-31: exact
  EXPECT_EQ(half.multiplier, 1 << 30);
  EXPECT_EQ(half.shift, 31);
  EXPECT_EQ(requantize(1, half, 8), 1);    // 0.5
  EXPECT_EQ(requantize(3, half, 8), 2);    // 1.5
  EXPECT_EQ(requantize(5, half, 8), 3);    // 2.5 (half-to-even: 2)
  EXPECT_EQ(requantize(-1, half, 8), -1);
  EXPECT_EQ(requantize(-5, half, 8), -3);
  EXPECT_EQ(requantize(4, half, 8), 2);
  const FixedMultiplier quarter = make_multiplier(0.25);
  EXPECT_EQ(requantize(6, quarter, 8), 2);   // 1.5
  EXPECT_EQ(requantize(-6, quarter, 8), -2);
  EXPECT_EQ(requantize(5, quarter, 8), 1);   // 1.25
  EXPECT_EQ(requantize(7, quarter, 8), 2);   // 1.75
}

TEST(FunctionalRequantize, IdentityAndLargeMultipliers) {
  const FixedMultiplier one = make_multiplier(1.0);  // 0.5 * 2^1 -> 2^30 * 2^-30
  EXPECT_EQ(one.multiplier, 1 << 30);
  EXPECT_EQ(one.shift, 30);
  for (int64_t v : {0, 1, -1, 127, -128, 32767, -32768, 123456789}) EXPECT_EQ(apply_multiplier(v, one), v);
  const FixedMultiplier three = make_multiplier(3.0);  // 0.75 * 2^2 -> 1610612736 * 2^-29
  EXPECT_EQ(three.multiplier, 1610612736);
  EXPECT_EQ(three.shift, 29);
  EXPECT_EQ(apply_multiplier(7, three), 21);
  EXPECT_EQ(apply_multiplier(-7, three), -21);
  // A 64-bit accumulator value times an int32 multiplier stays exact (128-bit product).
  EXPECT_EQ(apply_multiplier(int64_t{1} << 40, make_multiplier(0.5)), int64_t{1} << 39);
  EXPECT_EQ(apply_multiplier(INT64_MAX, make_multiplier(0.5)), (int64_t{1} << 62));
  // q rounding up to 1.0 moves into the next binade: 1 - 2^-40 -> 2^30 * 2^-30.
  const FixedMultiplier almost = make_multiplier(1.0 - std::ldexp(1.0, -40));
  EXPECT_EQ(almost.multiplier, 1 << 30);
  EXPECT_EQ(almost.shift, 30);
  EXPECT_THROW(make_multiplier(0.0), std::invalid_argument);
  EXPECT_THROW(make_multiplier(-1.0), std::invalid_argument);
}

TEST(FunctionalRequantize, PairSharesOneRounding) {
  // y = 0.5 q1 + 0.25 q2, one rounding (half away from zero).
  const FixedPair p = make_multiplier_pair(0.5, 0.25);
  EXPECT_EQ(apply_pair(3, 2, p), 2);    // 1.5 + 0.5 = 2
  EXPECT_EQ(apply_pair(3, 1, p), 2);    // 1.75
  EXPECT_EQ(apply_pair(1, 0, p), 1);    // 0.5
  EXPECT_EQ(apply_pair(-1, 0, p), -1);  // -0.5
  EXPECT_EQ(apply_pair(1, -1, p), 0);   // 0.25
  EXPECT_EQ(apply_pair(1, 2, p), 1);    // 1.0
  // Adding values at scales 0.1 and 0.2 into scale 0.3: 0.3 + 0.6 = 0.9 -> 3.
  const FixedPair q = make_multiplier_pair(0.1 / 0.3, 0.2 / 0.3);
  EXPECT_EQ(apply_pair(3, 3, q), 3);
  EXPECT_EQ(apply_pair(127, 127, q), 127);
  EXPECT_EQ(saturate(apply_pair(127, 127, make_multiplier_pair(1.0, 1.0)), 8), 127);
}

// ---- fp16 / bf16 ------------------------------------------------------------------------

TEST(FunctionalFloat16, RoundToNearestEven) {
  EXPECT_EQ(fp16_bits(1.0f), 0x3C00);
  EXPECT_EQ(fp16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie: 0x3C00 is even
  EXPECT_EQ(fp16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie between 0x3C01 and 0x3C02
  EXPECT_EQ(fp16_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);  // above the tie
  EXPECT_EQ(fp16_bits(-1.0f - std::ldexp(1.0f, -11)), 0xBC00);
  EXPECT_EQ(fp16_bits(3.14159f), 0x4248);  // 3.140625
  EXPECT_EQ(round_fp16(3.14159f), 3.140625f);
  EXPECT_EQ(fp16_bits(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(fp16_bits(65519.0f), 0x7BFF);
  EXPECT_EQ(fp16_bits(65520.0f), 0x7C00);  // tie to even: up, into inf
  EXPECT_EQ(fp16_bits(-1e6f), 0xFC00);
  EXPECT_EQ(fp16_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(fp16_bits(std::ldexp(2047.0f, -25)), 0x0400);  // tie between 0x03FF and 0x0400
  EXPECT_EQ(fp16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie: 0 is even
  EXPECT_EQ(fp16_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(fp16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: tie to 2
  EXPECT_EQ(fp16_bits(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(fp16_bits(-0.0f), 0x8000);
  EXPECT_EQ(fp16_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_TRUE(std::isnan(round_fp16(std::nanf(""))));
  EXPECT_EQ(fp16_value(0x3555), 0.333251953125f);
  EXPECT_EQ(fp16_value(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_value(0xFBFF), -65504.0f);
}

TEST(FunctionalFloat16, EveryHalfRoundTripsAndMidpointsGoToEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // NaN
    const float v = fp16_value(static_cast<uint16_t>(h));
    ASSERT_EQ(fp16_bits(v), h) << std::hex << h;
    const uint32_t next = h + 1;  // the midpoint to the next magnitude rounds to the even one
    if ((h & 0x7FFF) < 0x7BFF) {
      const float mid = (v + fp16_value(static_cast<uint16_t>(next))) / 2;  // exact in float32
      ASSERT_EQ(fp16_bits(mid), (h & 1) ? next : h) << std::hex << h;
    }
  }
}

TEST(FunctionalBFloat16, RoundToNearestEven) {
  EXPECT_EQ(bf16_bits(3.14159f), 0x4049);  // 0x40490FD0: the dropped 0x0FD0 < half
  EXPECT_EQ(round_bf16(3.14159f), 3.140625f);
  EXPECT_EQ(bf16_bits(from_bits(0x3F808000)), 0x3F80);  // 1 + 2^-8: tie, even
  EXPECT_EQ(bf16_bits(from_bits(0x3F818000)), 0x3F82);  // 1 + 3*2^-8: tie, up to even
  EXPECT_EQ(bf16_bits(from_bits(0x3F808001)), 0x3F81);  // above the tie
  EXPECT_EQ(bf16_bits(from_bits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(bf16_bits(-1.0f), 0xBF80);
  EXPECT_EQ(bf16_bits(from_bits(0x7F7FFFFF)), 0x7F80);  // FLT_MAX rounds to inf
  EXPECT_TRUE(std::isnan(round_bf16(std::nanf(""))));
  EXPECT_EQ(bf16_value(0x4049), 3.140625f);
  EXPECT_EQ(round_to_float_dtype(3.14159f, Dtype::kInt8), 3.14159f);
}

// ---- accumulator model ------------------------------------------------------------------

TEST(FunctionalAccumulator, SixteenBitAccumulatorSaturatesPerTile) {
  // 1 x 8 times 8 x 1 with K tiles of 4: products 127*127 = 16129.
  // B = [127 x4, -127 x4]: exact sum 0. Tile 1: 64516 -> clamps to 32767.
  // Tile 2: 32767 - 64516 = -31749 (in range). The 32-bit accumulator gets 0.
  const std::vector<int16_t> a(8, 127);
  const std::vector<int16_t> b = {127, 127, 127, 127, -127, -127, -127, -127};
  int64_t acc = 0;
  uint8_t flags = 0;
  int_gemm(a.data(), b.data(), 1, 8, 1, {4, 16}, &acc, &flags);
  EXPECT_EQ(acc, -31749);
  EXPECT_EQ(flags, kAccSaturated);
  int_gemm(a.data(), b.data(), 1, 8, 1, {4, 32}, &acc, &flags);
  EXPECT_EQ(acc, 0);
  EXPECT_EQ(flags, 0);
  int_gemm(a.data(), b.data(), 1, 8, 1, {8, 16}, &acc, &flags);  // one tile: no intermediate overflow
  EXPECT_EQ(acc, 0);
  EXPECT_EQ(flags, 0);
  // B = [-127 x4, 100 x4]: tile 1 -64516 -> -32768; tile 2 + 4*12700 = 50800 -> 18032.
  const std::vector<int16_t> b2 = {-127, -127, -127, -127, 100, 100, 100, 100};
  int_gemm(a.data(), b2.data(), 1, 8, 1, {4, 16}, &acc, &flags);
  EXPECT_EQ(acc, 18032);
  EXPECT_EQ(flags, kAccSaturated);
  // The PE-level reference on a 4x4 array computes the same (each dataflow).
  for (auto df : {array::Dataflow::kWeightStationary, array::Dataflow::kOutputStationary,
                  array::Dataflow::kInputStationary}) {
    const array::PeArrayReference pe(df, {4, 4}, true);
    int64_t pacc = 0;
    uint8_t pflags = 0;
    pe_gemm(pe, a.data(), b2.data(), 1, 8, 1, {4, 16}, &pacc, &pflags);
    EXPECT_EQ(pacc, 18032) << array::dataflow_name(df);
    EXPECT_EQ(pflags, kAccSaturated);
    pe_gemm(pe, a.data(), b.data(), 1, 8, 1, {4, 16}, &pacc, &pflags);
    EXPECT_EQ(pacc, -31749);
  }
}

TEST(FunctionalAccumulator, TilePartialSumsAreExactAndTheAccumulatorSaturates) {
  // int16 x int16: one K tile of 4 * 32767^2 = 4294705156 (beyond int32). The array's
  // partial-sum path is exact; a 64-bit accumulator holds it, a 32-bit one clamps.
  const std::vector<int16_t> a(4, 32767), b(4, 32767);
  int64_t acc = 0;
  uint8_t flags = 0;
  int_gemm(a.data(), b.data(), 1, 4, 1, {4, 64}, &acc, &flags);
  EXPECT_EQ(acc, 4294705156LL);
  EXPECT_EQ(flags, 0);
  int_gemm(a.data(), b.data(), 1, 4, 1, {4, 32}, &acc, &flags);
  EXPECT_EQ(acc, INT32_MAX);
  EXPECT_EQ(flags, kAccSaturated);
  // Two tiles of 2 * 32767^2 = 2147352578 each (fits int32): the second add clamps.
  int_gemm(a.data(), b.data(), 1, 4, 1, {2, 32}, &acc, &flags);
  EXPECT_EQ(acc, INT32_MAX);
  EXPECT_EQ(flags, kAccSaturated);
  std::vector<int16_t> b_neg = {32767, 32767, -32767, -32767};  // tiles +2147352578, -2147352578
  int_gemm(a.data(), b_neg.data(), 1, 4, 1, {2, 32}, &acc, &flags);
  EXPECT_EQ(acc, 0);
  EXPECT_EQ(flags, 0);
  // The PE-level reference's 32-bit registers cannot hold the 4-row tile: it refuses.
  const array::PeArrayReference pe(array::Dataflow::kWeightStationary, {4, 4}, true);
  int64_t pacc = 0;
  uint8_t pflags = 0;
  EXPECT_THROW(pe_gemm(pe, a.data(), b.data(), 1, 4, 1, {4, 64}, &pacc, &pflags), InputError);
  pe_gemm(pe, a.data(), b.data(), 1, 4, 1, {2, 64}, &pacc, &pflags);  // 2-row tiles fit
  EXPECT_EQ(pacc, 4294705156LL);
  EXPECT_EQ(pflags, 0);
}

TEST(FunctionalAccumulator, FastGemmEqualsPeReferenceOnRandomMatrices) {
  std::mt19937_64 rng(99);
  for (auto dims : {array::ArrayDims{4, 4}, array::ArrayDims{8, 8}, array::ArrayDims{5, 3}}) {
    for (auto df : {array::Dataflow::kWeightStationary, array::Dataflow::kOutputStationary,
                    array::Dataflow::kInputStationary}) {
      for (bool db : {false, true}) {
        const array::PeArrayReference pe(df, dims, db);
        for (int width : {16, 32}) {
          const int64_t m = 1 + static_cast<int64_t>(rng() % 13), k = 1 + static_cast<int64_t>(rng() % 30),
                        n = 1 + static_cast<int64_t>(rng() % 11);
          std::uniform_int_distribution<int> d(-128, 127);
          std::vector<int16_t> a(m * k), b(k * n);
          for (auto& v : a) v = static_cast<int16_t>(d(rng));
          for (auto& v : b) v = static_cast<int16_t>(d(rng));
          std::vector<int64_t> acc1(m * n), acc2(m * n);
          std::vector<uint8_t> f1(m * n), f2(m * n);
          const AccumulatorModel model{dims.rows, width};
          int_gemm(a.data(), b.data(), m, k, n, model, acc1.data(), f1.data());
          pe_gemm(pe, a.data(), b.data(), m, k, n, model, acc2.data(), f2.data());
          EXPECT_EQ(acc1, acc2) << array::dataflow_name(df) << " " << dims.rows << "x" << dims.cols;
          EXPECT_EQ(f1, f2);
          if (width == 32) {  // no saturation possible: equals the plain product
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                int64_t s = 0;
                for (int64_t p = 0; p < k; ++p) s += int64_t{a[i * k + p]} * b[p * n + j];
                ASSERT_EQ(acc1[i * n + j], s);
              }
          }
        }
      }
    }
  }
}

TEST(FunctionalFloatGemm, SumsInKOrder) {
  // 1e8 + 1 - 1e8 in float32, summed in K order: 1e8 + 1 rounds to 1e8, so the result is 0.
  const std::vector<float> a = {1e8f, 1.0f, -1e8f};
  const std::vector<float> b = {1.0f, 1.0f, 1.0f};
  float c = -1;
  float_gemm(a.data(), b.data(), 1, 3, 1, &c, 1);
  EXPECT_EQ(c, 0.0f);
  const std::vector<float> a2 = {1e8f, -1e8f, 1.0f};
  float_gemm(a2.data(), b.data(), 1, 3, 1, &c, 1);
  EXPECT_EQ(c, 1.0f);
}

// ---- fp8 (OCP 8-bit Floating Point Formats v1.0), int4, and 16-bit floats' signed zero ---

TEST(FunctionalFloat8, E4m3RoundsToNearestEvenAndSaturates) {
  constexpr Dtype t = Dtype::kFp8E4m3;
  // 1.0 = 0.0111.000 (bias 7); the quantum in [1, 2) is 2^-3.
  EXPECT_EQ(fp8_bits(1.0f, t), 0x38);
  EXPECT_EQ(round_fp8(1.0625f, t), 1.0f);       // 1 + 2^-4: tie between 1.0 (mantissa 000, even) and 1.125
  EXPECT_EQ(round_fp8(1.1875f, t), 1.25f);      // 1 + 3*2^-4: tie between 1.125 (001) and 1.25 (010, even)
  EXPECT_EQ(round_fp8(1.07f, t), 1.125f);       // above the tie
  EXPECT_EQ(round_fp8(-3.3f, t), -3.25f);       // quantum 0.25 in [2, 4)
  // Largest finite 448 = 0.1111.110 (S.1111.111 is NaN); the quantum in [256, 512) is 32.
  EXPECT_EQ(fp8_bits(448.0f, t), 0x7E);
  EXPECT_EQ(round_fp8(449.0f, t), 448.0f);      // just above the max: saturates
  EXPECT_EQ(round_fp8(464.0f, t), 448.0f);      // max + half a quantum: saturates, no NaN
  EXPECT_EQ(round_fp8(1e6f, t), 448.0f);
  EXPECT_EQ(fp8_bits(-1e6f, t), 0xFE);
  EXPECT_EQ(round_fp8(std::numeric_limits<float>::infinity(), t), 448.0f);  // no infinity in E4M3
  EXPECT_EQ(round_fp8(432.0f, t), 448.0f);      // 416 + 16 + 16: tie between 416 (101) and 448 (110, even)
  // Subnormals: quantum 2^-9 below the smallest normal 2^-6 (0.0001.000).
  EXPECT_EQ(fp8_bits(std::ldexp(1.0f, -6), t), 0x08);
  EXPECT_EQ(fp8_bits(std::ldexp(1.0f, -9), t), 0x01);   // smallest subnormal
  EXPECT_EQ(fp8_bits(std::ldexp(7.0f, -9), t), 0x07);   // largest subnormal
  EXPECT_EQ(fp8_bits(std::ldexp(7.5f, -9), t), 0x08);   // tie: 8 x 2^-9 = 2^-6 is even
  EXPECT_EQ(fp8_bits(std::ldexp(1.0f, -10), t), 0x00);  // tie between 0 and 2^-9: 0
  EXPECT_EQ(fp8_bits(std::ldexp(3.0f, -10), t), 0x02);  // 1.5 quanta: tie to 2
  EXPECT_EQ(round_fp8(std::ldexp(5.0f, -11), t), std::ldexp(1.0f, -9));  // 1.25 quanta -> 1
  // Signed zero and NaN.
  EXPECT_EQ(fp8_bits(-0.0f, t), 0x80);
  EXPECT_TRUE(std::signbit(round_fp8(-0.0f, t)));
  EXPECT_EQ(fp8_bits(-std::ldexp(1.0f, -11), t), 0x80);  // a tiny negative rounds to -0
  EXPECT_EQ(fp8_bits(std::nanf(""), t), 0x7F);
  EXPECT_TRUE(std::isnan(fp8_value(0x7F, t)));
  EXPECT_TRUE(std::isnan(fp8_value(0xFF, t)));
  EXPECT_EQ(fp8_value(0x7E, t), 448.0f);
  EXPECT_EQ(fp8_value(0x01, t), std::ldexp(1.0f, -9));
  EXPECT_EQ(round_to_float_dtype(1.1875f, t), 1.25f);
}

TEST(FunctionalFloat8, E5m2RoundsToNearestEvenAndSaturates) {
  constexpr Dtype t = Dtype::kFp8E5m2;
  // 1.0 = 0.01111.00 (bias 15); the quantum in [1, 2) is 2^-2.
  EXPECT_EQ(fp8_bits(1.0f, t), 0x3C);
  EXPECT_EQ(round_fp8(1.125f, t), 1.0f);   // tie between 1.0 (00, even) and 1.25 (01)
  EXPECT_EQ(round_fp8(1.375f, t), 1.5f);   // tie between 1.25 (01) and 1.5 (10, even)
  // Largest finite 57344 = 0.11110.11; 61440 (max + half a quantum of 8192) would round to
  // inf in IEEE arithmetic: saturates instead.
  EXPECT_EQ(fp8_bits(57344.0f, t), 0x7B);
  EXPECT_EQ(round_fp8(57345.0f, t), 57344.0f);
  EXPECT_EQ(round_fp8(61440.0f, t), 57344.0f);
  EXPECT_EQ(fp8_bits(-1e9f, t), 0xFB);
  EXPECT_EQ(fp8_bits(std::numeric_limits<float>::infinity(), t), 0x7C);  // E5M2 has inf: kept
  EXPECT_EQ(fp8_value(0xFC, t), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp8_bits(std::nanf(""), t), 0x7E);
  EXPECT_TRUE(std::isnan(fp8_value(0x7D, t)));
  // Subnormals: smallest normal 2^-14, quantum 2^-16.
  EXPECT_EQ(fp8_bits(std::ldexp(1.0f, -14), t), 0x04);
  EXPECT_EQ(fp8_bits(std::ldexp(1.0f, -16), t), 0x01);
  EXPECT_EQ(fp8_bits(std::ldexp(1.0f, -17), t), 0x00);  // tie: 0
  EXPECT_EQ(fp8_bits(std::ldexp(3.0f, -17), t), 0x02);  // tie: 2 quanta
  EXPECT_EQ(fp8_bits(-0.0f, t), 0x80);
}

TEST(FunctionalFloat8, EveryCodeRoundTripsAndMidpointsGoToEven) {
  for (Dtype t : {Dtype::kFp8E4m3, Dtype::kFp8E5m2}) {
    for (uint32_t b = 0; b < 0x100; ++b) {
      const float v = fp8_value(static_cast<uint8_t>(b), t);
      if (std::isnan(v)) continue;
      ASSERT_EQ(fp8_bits(v, t), b) << dtype_name(t) << " " << std::hex << b;
      const float next = fp8_value(static_cast<uint8_t>(b + 1), t);
      if ((b & 0x7F) < 0x7F && std::isfinite(v) && std::isfinite(next) && !std::isnan(next)) {
        ASSERT_EQ(fp8_bits((v + next) / 2, t), (b & 1) ? b + 1 : b) << dtype_name(t) << " " << std::hex << b;
      }
    }
  }
}

TEST(FunctionalFloat8, ScaledRoundingMapsTheMaxOntoTheFormatsMax) {
  // max |x| = 3.5 onto 448: scale 1/128; 3.5 -> 448 exactly, 1.0 -> 128 exactly.
  const double s = fp8_scale(3.5, Dtype::kFp8E4m3);
  EXPECT_DOUBLE_EQ(s, 3.5 / 448.0);
  EXPECT_EQ(round_fp8_scaled(3.5f, Dtype::kFp8E4m3, s), 3.5f);
  EXPECT_EQ(round_fp8_scaled(1.0f, Dtype::kFp8E4m3, s), 1.0f);
  bool sat = false;
  EXPECT_EQ(round_fp8_scaled(4.0f, Dtype::kFp8E4m3, s, &sat), 3.5f);  // beyond the calibrated max: saturates
  EXPECT_TRUE(sat);
  EXPECT_EQ(fp8_scale(0.0, Dtype::kFp8E5m2), 1.0);
}

TEST(FunctionalFloat16, NegativeZeroStaysNegative) {
  EXPECT_EQ(fp16_bits(-0.0f), 0x8000);
  EXPECT_EQ(bf16_bits(-0.0f), 0x8000);
  EXPECT_TRUE(std::signbit(round_bf16(-std::ldexp(1.0f, -140))));  // a float32 subnormal keeps its sign
  EXPECT_EQ(bf16_bits(from_bits(0x00008000)), 0x0000);  // subnormal tie: even (0)
  EXPECT_EQ(bf16_bits(from_bits(0x00018000)), 0x0002);  // subnormal tie: up to even
}

TEST(FunctionalQuantize, Int4ClampsToMinus8To7) {
  EXPECT_EQ(int_bits(Dtype::kInt4), 4);
  EXPECT_EQ(symmetric_scale(3.5, 4), 0.5);  // max |x| onto the largest code 7
  bool sat = false;
  EXPECT_EQ(quantize(3.5, 0.5, 4, &sat), 7);
  EXPECT_FALSE(sat);
  EXPECT_EQ(quantize(-3.75, 0.5, 4, &sat), -8);  // -7.5 rounds away to -8: in range
  EXPECT_FALSE(sat);
  EXPECT_EQ(quantize(3.75, 0.5, 4, &sat), 7);    // 7.5 -> 8: clamps to 7
  EXPECT_TRUE(sat);
  sat = false;
  EXPECT_EQ(quantize(-5.0, 0.5, 4, &sat), -8);   // -10 clamps to -8
  EXPECT_TRUE(sat);
  EXPECT_EQ(quantize(1.26, 0.5, 4), 3);          // 2.52 -> 3
}
