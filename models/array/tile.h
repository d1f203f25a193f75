#pragma once
// The vocabulary of the array models: array size, one tile operation, its timing
// and its schedule. Shared by the dataflow models, the fast pipeline and the
// PE-level reference. Cycle convention: see systolic_timing.h.
#include <cstdint>
#include <limits>

namespace tessera::array {

struct ArrayDims {
  int64_t rows = 0;
  int64_t cols = 0;
};

// One tile operation C[m x n] (+)= A[m x k] * B[k x n].
//  ws: B (k x n) stationary: k <= rows, n <= cols, m >= 1 streams.
//  os: C (m x n) stationary: m <= rows, n <= cols, k >= 1 streams.
//  is: A^T (k x m) stationary: k <= rows, m <= cols, n >= 1 streams.
struct GemmTile {
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
};

// The extent of a streamed tile dimension: the array puts no bound on it.
inline constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

// Offset of stream step r (0 <= r < steps) inside a stream window of `len` >= steps
// cycles: the natural rate when len == steps, otherwise spread evenly with the last step
// at len - 1 (how the PE-level reference stretches a stream).
inline int64_t stream_step_offset(int64_t r, int64_t steps, int64_t len) {
  if (steps == 1) return len - 1;
  return r * (len - 1) / (steps - 1);
}

// Cycle components of one tile run in isolation on an idle array.
struct TileTiming {
  int64_t preload_cycles = 0;  // loading the stationary operand (ws: weights, is: inputs, os: 0)
  int64_t stream_cycles = 0;   // stream window: the next tile may stream this much later (skew excluded)
  int64_t drain_cycles = 0;    // after the last streamed cycle until the last result is written
  int64_t total() const { return preload_cycles + stream_cycles + drain_cycles; }
};

// When one tile's phases happen, in array cycles.
struct TileSchedule {
  int64_t preload_start = 0;
  int64_t preload_end = 0;
  int64_t stream_start = 0;
  int64_t stream_end = 0;  // the array can start streaming the next tile from here
                           // (os: the drain frontier may hold it back further)
  int64_t done = 0;        // last result written to the accumulators
};

}  // namespace tessera::array
