#include "models/array/systolic_timing.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tessera::array {
namespace {

std::string describe(Dataflow dataflow, ArrayDims dims, GemmTile tile) {
  return std::string(dataflow_name(dataflow)) + " tile m=" + std::to_string(tile.m) +
         " k=" + std::to_string(tile.k) + " n=" + std::to_string(tile.n) + " on a " +
         std::to_string(dims.rows) + "x" + std::to_string(dims.cols) + " array";
}

void require_fit(Dataflow dataflow, ArrayDims dims, GemmTile tile) {
  if (!tile_fits(dataflow, dims, tile)) {
    throw std::invalid_argument("tile does not fit: " + describe(dataflow, dims, tile));
  }
}

}  // namespace

bool tile_fits(Dataflow dataflow, ArrayDims dims, GemmTile tile) {
  return dataflow_model(dataflow).fits(dims, tile);
}

TileTiming tile_timing(Dataflow dataflow, ArrayDims dims, GemmTile tile) {
  require_fit(dataflow, dims, tile);
  return dataflow_model(dataflow).timing(dims, tile);
}

ArrayPipeline::ArrayPipeline(Dataflow dataflow, ArrayDims dims, bool double_buffered)
    : model_(dataflow_model(dataflow)), dims_(dims), double_buffered_(double_buffered) {
  if (dims.rows < 1 || dims.cols < 1) {
    throw std::invalid_argument("ArrayPipeline: array dimensions must be positive");
  }
}

TileSchedule ArrayPipeline::issue(GemmTile tile, int64_t stationary_ready, int64_t stream_ready,
                                  int64_t min_stream_cycles, int64_t min_preload_cycles) {
  TileTiming timing = tile_timing(model_.id(), dims_, tile);
  if (min_stream_cycles < 0 || min_preload_cycles < 0) {
    throw std::invalid_argument("ArrayPipeline::issue: min_stream_cycles and min_preload_cycles must be >= 0");
  }
  if (timing.preload_cycles > 0) timing.preload_cycles = std::max(timing.preload_cycles, min_preload_cycles);
  const int64_t stream_len = std::max(timing.stream_cycles, min_stream_cycles);
  const TileSchedule s = model_.schedule(state_, double_buffered_, tile, timing, stream_len,
                                         OperandReadiness{stationary_ready, stream_ready});
  last_done_ = std::max(last_done_, s.done);
  return s;
}

int64_t sequence_cycles(Dataflow dataflow, ArrayDims dims, bool double_buffered,
                        std::span<const GemmTile> tiles) {
  ArrayPipeline pipe(dataflow, dims, double_buffered);
  for (const GemmTile& t : tiles) pipe.issue(t, 0, 0, 0);
  return pipe.last_done();
}

}  // namespace tessera::array
