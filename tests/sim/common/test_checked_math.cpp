// sim/common/checked_math.h: every helper at the int64 edges (the values hostile inputs
// reach: INT64_MIN / -1, products past 2^63, huge exponents, out-of-range doubles).
#include "sim/common/checked_math.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

using namespace tessera;

namespace {
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
}  // namespace

TEST(CheckedMath, AddSubMulNegAbs) {
  EXPECT_EQ(checked_add(2, 3), 5);
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
  EXPECT_EQ(checked_add(kMin, -1), std::nullopt);
  EXPECT_EQ(checked_sub(kMin, 1), std::nullopt);
  EXPECT_EQ(checked_sub(0, kMin), std::nullopt);
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(int64_t{1} << 32, int64_t{1} << 31), std::nullopt);
  EXPECT_EQ(checked_mul(kMin, -1), std::nullopt);
  EXPECT_EQ(checked_neg(kMin), std::nullopt);
  EXPECT_EQ(checked_neg(kMax), -kMax);
  EXPECT_EQ(checked_abs(kMin), std::nullopt);
  EXPECT_EQ(checked_abs(-7), 7);
}

TEST(CheckedMath, DivisionNeverTraps) {
  EXPECT_EQ(checked_div(7, 2), 3);
  EXPECT_EQ(checked_div(-7, 2), -3);
  EXPECT_EQ(checked_div(kMin, -1), std::nullopt);  // the SIGFPE of the ONNX audit (D2)
  EXPECT_EQ(checked_div(1, 0), std::nullopt);
  EXPECT_EQ(checked_div(kMin, 1), kMin);
  EXPECT_EQ(checked_rem(kMin, -1), 0);
  EXPECT_EQ(checked_rem(-7, 3), -1);
  EXPECT_EQ(checked_rem(5, 0), std::nullopt);
  EXPECT_EQ(checked_floor_mod(-7, 3), 2);
  EXPECT_EQ(checked_floor_mod(7, -3), -2);
  EXPECT_EQ(checked_floor_mod(kMin, -1), 0);
  EXPECT_EQ(checked_floor_mod(-1, kMin), -1);  // ((a % b) + b) % b overflowed here
  EXPECT_EQ(checked_floor_mod(1, kMin), kMin + 1);
  EXPECT_EQ(checked_floor_mod(6, 3), 0);
}

TEST(CheckedMath, PowIsLogarithmicAndChecked) {
  EXPECT_EQ(checked_pow(2, 10), 1024);
  EXPECT_EQ(checked_pow(-3, 3), -27);
  EXPECT_EQ(checked_pow(2, 62), int64_t{1} << 62);
  EXPECT_EQ(checked_pow(2, 63), std::nullopt);
  EXPECT_EQ(checked_pow(-2, 63), kMin);
  EXPECT_EQ(checked_pow(7, 0), 1);
  EXPECT_EQ(checked_pow(0, 0), 1);
  EXPECT_EQ(checked_pow(2, -1), std::nullopt);
  // Exponents that made the old loop run for ages: answered at once.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(checked_pow(2, int64_t{1} << 62), std::nullopt);
  EXPECT_EQ(checked_pow(1, kMax), 1);
  EXPECT_EQ(checked_pow(-1, kMax), -1);
  EXPECT_EQ(checked_pow(0, kMax), 0);
  EXPECT_EQ(checked_pow(kMin, 1), kMin);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(CheckedMath, ProductAndDoubleConversion) {
  EXPECT_EQ(checked_product(std::vector<int64_t>{2, 3, 4}), 24);
  EXPECT_EQ(checked_product(std::vector<int64_t>{}), 1);
  EXPECT_EQ(checked_product(std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 30}), std::nullopt);
  EXPECT_EQ(checked_to_int64(3.9), 3);
  EXPECT_EQ(checked_to_int64(-3.9), -3);
  EXPECT_EQ(checked_to_int64(-0x1p63), kMin);
  EXPECT_EQ(checked_to_int64(0x1p63), std::nullopt);
  EXPECT_EQ(checked_to_int64(1e300), std::nullopt);
  EXPECT_EQ(checked_to_int64(std::nan("")), std::nullopt);
  EXPECT_EQ(checked_to_int64(-INFINITY), std::nullopt);
}

TEST(CheckedMath, Saturating) {
  EXPECT_EQ(saturating_add(kMax, 1), kMax);
  EXPECT_EQ(saturating_add(kMin, -1), kMin);
  EXPECT_EQ(saturating_add(2, 3), 5);
  EXPECT_EQ(saturating_mul(kMax, 2), kMax);
  EXPECT_EQ(saturating_mul(kMax, -2), kMin);
  EXPECT_EQ(saturating_mul(-4, 5), -20);
}
