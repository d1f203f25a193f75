#pragma once
// Bounds on simulated time. SystemC keeps time as 64-bit picoseconds (about 213 days);
// Tessera stops well short of that so that cycle sums never overflow int64 and every
// duration converts to an sc_time exactly. Configs are checked against the per-step
// bound at load time (sim/config), runs against the total bound while they simulate
// (CoreClock); docs/reliability.md lists both.
#include <cstdint>
#include <limits>

namespace tessera::models {

// A run fails (exit 2) rather than let simulated time pass this: 2^62 ps, about 53 days.
inline constexpr double kMaxSimulatedPs = 4611686018427387904.0;  // 2^62
// One step of one unit (a weight-tile request, a vector instruction's pipeline fill, a
// tile on the array at the slowest MAC rate, a link latency) may take at most this,
// 2^50 ps (about 18.8 minutes), leaving 2^12 such steps of headroom below kMaxSimulatedPs.
inline constexpr double kMaxStepPs = 1125899906842624.0;  // 2^50
inline constexpr const char* kMaxStepText = "2^50 ps (18.8 minutes)";
inline constexpr const char* kMaxSimulatedText = "2^62 ps (53.4 days)";

// A cycle count standing for "beyond the bound": far past any clock's max_cycle(), yet a
// few of them still add without wrapping.
inline constexpr int64_t kSaturatedCycles = std::numeric_limits<int64_t>::max() / 4;

// Cycle arithmetic that cannot wrap: saturates at INT64_MAX (the clock then reports
// the run as beyond the simulated-time bound).
inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return r;
}

}  // namespace tessera::models
