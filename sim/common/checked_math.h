#pragma once
// Checked 64-bit integer arithmetic for values that come from input files (shapes, sizes,
// folded constants, cycle counts). Signed overflow, INT64_MIN / -1 and a double outside
// the int64 range are undefined behaviour (or a SIGFPE trap) in C++: every helper here
// returns std::nullopt instead, so the caller can raise an InputError naming the input.
// Header-only, no dependencies: usable from models/ as well as sim/.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

namespace tessera {

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_neg(int64_t a) { return checked_sub(0, a); }

inline std::optional<int64_t> checked_abs(int64_t a) { return a < 0 ? checked_neg(a) : std::optional<int64_t>(a); }

// Truncating division (C++ semantics); nullopt for b == 0 and INT64_MIN / -1.
inline std::optional<int64_t> checked_div(int64_t a, int64_t b) {
  if (b == 0 || (b == -1 && a == std::numeric_limits<int64_t>::min())) return std::nullopt;
  return a / b;
}

// Remainder with the dividend's sign (C++ `%`, ONNX Mod fmod=1); nullopt for b == 0.
// INT64_MIN % -1 is 0 (the hardware instruction traps on it).
inline std::optional<int64_t> checked_rem(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;
  return a % b;
}

// Remainder with the divisor's sign (Python `%`, ONNX integer Mod fmod=0); nullopt for b == 0.
inline std::optional<int64_t> checked_floor_mod(int64_t a, int64_t b) {
  const auto r = checked_rem(a, b);
  if (!r) return std::nullopt;
  // r and b have opposite signs here, so r + b cannot overflow.
  return *r != 0 && ((*r < 0) != (b < 0)) ? *r + b : *r;
}

// base^exponent by square-and-multiply: O(log exponent) steps whatever the exponent, so
// a huge exponent cannot loop for ages; nullopt for a negative exponent or overflow.
inline std::optional<int64_t> checked_pow(int64_t base, int64_t exponent) {
  if (exponent < 0) return std::nullopt;
  // 0, 1 and -1 never overflow: answer them directly.
  if (base == 0) return exponent == 0 ? 1 : 0;
  if (base == 1) return 1;
  if (base == -1) return exponent % 2 == 0 ? 1 : -1;
  int64_t result = 1;
  int64_t b = base;
  for (int64_t e = exponent;;) {
    if (e & 1) {
      if (__builtin_mul_overflow(result, b, &result)) return std::nullopt;
    }
    e >>= 1;
    if (e == 0) return result;
    if (__builtin_mul_overflow(b, b, &b)) return std::nullopt;  // |base| >= 2: the next square is needed
  }
}

// Product of a range of int64 values; nullopt on overflow.
template <typename Range>
std::optional<int64_t> checked_product(const Range& values) {
  int64_t n = 1;
  for (auto v : values) {
    if (__builtin_mul_overflow(n, static_cast<int64_t>(v), &n)) return std::nullopt;
  }
  return n;
}

// A double converted to int64 (truncated toward zero, as static_cast does); nullopt for
// NaN, infinities and values outside the int64 range, whose cast is undefined behaviour.
inline std::optional<int64_t> checked_to_int64(double d) {
  // -2^63 and 2^63 are exact doubles: [-2^63, 2^63) is exactly the safe range (NaN fails both tests).
  if (!(d >= -0x1p63 && d < 0x1p63)) return std::nullopt;
  return static_cast<int64_t>(d);
}

// Saturating forms for running totals (cycles, bytes) where "very large" is the answer.
inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

}  // namespace tessera
