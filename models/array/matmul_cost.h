#pragma once
// The cost of one matmul instruction's stream, in one place: the matrix unit charges it
// (models/units) and the compiler estimates with it when it picks where a layer runs.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "models/array/dataflow.h"
#include "models/common/time_bounds.h"

namespace tessera::array {

struct MatmulStreamCost {
  int64_t mac_cycles = 0;      // the tile's natural stream at the pair's MAC rate
  int64_t ub_read_cycles = 0;  // the unified buffer's read port delivering the streamed operand
  int64_t cycles() const { return std::max(mac_cycles, ub_read_cycles); }  // whichever is slower paces the stream
};

// `natural_stream_cycles`: the tile's stream at one MAC per PE per cycle (TileTiming);
// `mac_rate`: the (activation, weight) pair's rate (TPU v1 int16 x int16: 0.25). Rounded
// up; the 1e-9 absorbs floating-point error, so 21 / 0.7 = 30.000000000000004 is 30 cycles.
inline MatmulStreamCost matmul_stream_cost(int64_t natural_stream_cycles, double mac_rate, int64_t ub_read_bytes,
                                           int64_t ub_read_bytes_per_cycle) {
  MatmulStreamCost c;
  // Bounded (audit D1): a rate so small that the cycles pass the simulated-time bound
  // saturates instead of casting an out-of-range double; the clock then fails the run.
  const double cycles = std::ceil(static_cast<double>(natural_stream_cycles) / mac_rate - 1e-9);
  c.mac_cycles = cycles < static_cast<double>(models::kSaturatedCycles) ? static_cast<int64_t>(cycles)
                                                                        : models::kSaturatedCycles;
  c.ub_read_cycles = (ub_read_bytes + ub_read_bytes_per_cycle - 1) / ub_read_bytes_per_cycle;
  return c;
}

inline int64_t matmul_stream_cycles(int64_t natural_stream_cycles, double mac_rate, int64_t ub_read_bytes,
                                    int64_t ub_read_bytes_per_cycle) {
  return matmul_stream_cost(natural_stream_cycles, mac_rate, ub_read_bytes, ub_read_bytes_per_cycle).cycles();
}

// Everything outside the array that shapes one matmul tile's schedule: its stream (the MAC
// rate and the unified-buffer port) and its stationary load. A weight tile fetched whole
// (weight_memory.fetch: tile, padding included) and held in the array (ws) shifts all of
// its `rows` rows in, not only the tile's k.
struct MatmulCost {
  MatmulStreamCost stream;
  int64_t min_preload_cycles = 0;  // 0: the tile's own preload (TileTiming)
  int64_t stream_cycles() const { return stream.cycles(); }
};

// `padded_weight_tile`: the tile's weights came from weight memory as a full rows x cols
// tile. `ideal_memory`: the unified buffer's port does not pace the stream (ideal_memory:
// true). ArrayPipeline::issue takes stream_cycles() and min_preload_cycles.
inline MatmulCost matmul_cost(const DataflowModel& dataflow, ArrayDims dims, const TileTiming& natural, double mac_rate,
                              int64_t ub_read_bytes, int64_t ub_read_bytes_per_cycle, bool padded_weight_tile,
                              bool ideal_memory = false) {
  MatmulCost c;
  c.stream = matmul_stream_cost(natural.stream_cycles, mac_rate, ideal_memory ? 0 : ub_read_bytes, ub_read_bytes_per_cycle);
  if (padded_weight_tile && dataflow.weight_stream_step(dims) == 0) c.min_preload_cycles = dims.rows;
  return c;
}

}  // namespace tessera::array
