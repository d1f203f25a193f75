#pragma once
// Helpers shared by the models/array tests.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "models/array/dataflow.h"
#include "models/array/pe_reference.h"
#include "models/array/systolic_timing.h"

namespace tessera::array::testing {

// Every registered dataflow: a new one joins every equivalence test here by registering.
inline std::vector<Dataflow> registered_dataflows() {
  std::vector<Dataflow> out;
  for (const auto& m : dataflows().all()) out.push_back(m->id());
  return out;
}
inline const std::vector<Dataflow> kAllDataflows = registered_dataflows();

// Upper end of each dimension for random or exhaustive shapes: the array's bound on a
// stationary dimension, `max_stream` on a streamed one.
inline GemmTile shape_limits(Dataflow df, ArrayDims dims, int64_t max_stream) {
  const GemmTile b = dataflow_model(df).tile_bounds(dims);
  auto cap = [&](int64_t bound) { return bound == kUnbounded ? max_stream : bound; };
  return {cap(b.m), cap(b.k), cap(b.n)};
}

inline std::vector<int32_t> random_matrix(std::mt19937_64& rng, int64_t rows, int64_t cols,
                                          int32_t lo = -128, int32_t hi = 127) {
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(static_cast<std::size_t>(rows * cols));
  for (auto& x : v) x = d(rng);
  return v;
}

// Plain triple loop with the same 32-bit wrapping accumulation as the array.
inline std::vector<int32_t> naive_matmul(const std::vector<int32_t>& a,
                                         const std::vector<int32_t>& b, int64_t m, int64_t k,
                                         int64_t n) {
  std::vector<int32_t> c(static_cast<std::size_t>(m * n), 0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      uint32_t acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        acc += static_cast<uint32_t>(static_cast<int64_t>(a[i * k + p]) * b[p * n + j]);
      }
      c[i * n + j] = static_cast<int32_t>(acc);
    }
  }
  return c;
}

inline ReferenceTile make_tile(std::mt19937_64& rng, GemmTile shape) {
  ReferenceTile t;
  t.shape = shape;
  t.a = random_matrix(rng, shape.m, shape.k);
  t.b = random_matrix(rng, shape.k, shape.n);
  return t;
}

// A random tile that fits: the stationary dimensions within the array, the streamed one
// in 1..max_stream.
inline GemmTile random_shape(std::mt19937_64& rng, Dataflow df, ArrayDims dims,
                             int64_t max_stream) {
  auto pick = [&](int64_t hi) { return std::uniform_int_distribution<int64_t>(1, hi)(rng); };
  const GemmTile hi = shape_limits(df, dims, max_stream);
  const int64_t m = pick(hi.m), k = pick(hi.k);
  return {m, k, pick(hi.n)};
}

// The fast model's schedule for tiles issued in order with their ready times.
inline std::vector<TileSchedule> fast_schedule(Dataflow df, ArrayDims dims, bool db,
                                               const std::vector<ReferenceTile>& tiles) {
  ArrayPipeline pipe(df, dims, db);
  std::vector<TileSchedule> out;
  for (const ReferenceTile& t : tiles) {
    out.push_back(pipe.issue(t.shape, t.stationary_ready, t.stream_ready, t.min_stream_cycles));
  }
  return out;
}

inline std::string label(Dataflow df, ArrayDims dims, bool db) {
  return std::string(dataflow_name(df)) + " " + std::to_string(dims.rows) + "x" +
         std::to_string(dims.cols) + (db ? " db" : " sb");
}

inline std::string shape_str(const GemmTile& t) {
  return "(m=" + std::to_string(t.m) + ",k=" + std::to_string(t.k) + ",n=" + std::to_string(t.n) +
         ")";
}

}  // namespace tessera::array::testing
