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
  if (dims.rows < 1 || dims.cols < 1) return false;
  if (tile.m < 1 || tile.k < 1 || tile.n < 1) return false;
  switch (dataflow) {
    case Dataflow::kWeightStationary: return tile.k <= dims.rows && tile.n <= dims.cols;
    case Dataflow::kOutputStationary: return tile.m <= dims.rows && tile.n <= dims.cols;
    case Dataflow::kInputStationary: return tile.k <= dims.rows && tile.m <= dims.cols;
  }
  return false;
}

TileTiming tile_timing(Dataflow dataflow, ArrayDims dims, GemmTile tile) {
  require_fit(dataflow, dims, tile);
  const int64_t R = dims.rows;
  TileTiming t;
  switch (dataflow) {
    case Dataflow::kWeightStationary:
      // B shifts in one row per cycle; the m rows of A enter one per cycle; the last
      // row's partial sum for column n-1 leaves the bottom row R-1 + n-1 cycles after it
      // entered and is added into the accumulators one cycle later.
      t.preload_cycles = tile.k;
      t.stream_cycles = tile.m;
      t.drain_cycles = R + tile.n - 1;
      break;
    case Dataflow::kInputStationary:
      // Same machine as ws with A^T stationary and the n columns of B streaming.
      t.preload_cycles = tile.k;
      t.stream_cycles = tile.n;
      t.drain_cycles = R + tile.m - 1;
      break;
    case Dataflow::kOutputStationary:
      // k skewed steps of A and B; PE(m-1, n-1) finishes m+n-2 cycles after the last
      // step entered; its column then shifts all R rows down into the accumulators.
      t.preload_cycles = 0;
      t.stream_cycles = tile.k;
      t.drain_cycles = R + tile.m + tile.n - 2;
      break;
  }
  return t;
}

ArrayPipeline::ArrayPipeline(Dataflow dataflow, ArrayDims dims, bool double_buffered)
    : dataflow_(dataflow), dims_(dims), double_buffered_(double_buffered) {
  if (dims.rows < 1 || dims.cols < 1) {
    throw std::invalid_argument("ArrayPipeline: array dimensions must be positive");
  }
}

TileSchedule ArrayPipeline::issue(GemmTile tile, int64_t stationary_ready, int64_t stream_ready,
                                  int64_t min_stream_cycles) {
  const TileTiming timing = tile_timing(dataflow_, dims_, tile);
  if (min_stream_cycles < 0) {
    throw std::invalid_argument("ArrayPipeline::issue: min_stream_cycles must be >= 0");
  }
  const int64_t stream_len = std::max(timing.stream_cycles, min_stream_cycles);
  const int64_t prev_stream_start = first_ ? 0 : prev_.stream_start;
  const int64_t prev_stream_end = first_ ? 0 : prev_.stream_end;

  TileSchedule s;
  if (dataflow_ == Dataflow::kOutputStationary) {
    int64_t start = std::max({int64_t{0}, stream_ready, stationary_ready, prev_stream_end});
    if (!first_) {
      // Double buffered: this tile's results (written from stream_end-1 on, diagonally)
      // must not land before the frontier's drain wave has left a row; single buffered:
      // its first partial sums must not land there.
      start = std::max(start, double_buffered_ ? os_frontier_ - stream_len : os_frontier_ - 1);
    }
    s.preload_start = s.preload_end = s.stream_start = start;
  } else {
    int64_t load_free = 0;
    if (!first_) {
      // Shadow buffer: the previous tile's switch token reaches PE(0,0) at its stream
      // start and the skewed load wave follows it. Single buffer: the load wave follows
      // the previous tile's last operand, which passes PE(0,0) at its stream_end - 1.
      load_free = double_buffered_ ? prev_stream_start : prev_stream_end - 1;
      load_free = std::max(load_free, prev_.preload_end);  // one loader port
    }
    s.preload_start = std::max({int64_t{0}, stationary_ready, load_free});
    s.preload_end = s.preload_start + timing.preload_cycles;
    s.stream_start = std::max({int64_t{0}, stream_ready, s.preload_end, prev_stream_end});
  }
  s.stream_end = s.stream_start + stream_len;
  s.done = s.stream_end + timing.drain_cycles;

  if (dataflow_ == Dataflow::kOutputStationary) {
    os_frontier_ = std::max(os_frontier_, s.stream_end + tile.m);
  }
  last_done_ = std::max(last_done_, s.done);
  prev_ = s;
  first_ = false;
  return s;
}

int64_t sequence_cycles(Dataflow dataflow, ArrayDims dims, bool double_buffered,
                        std::span<const GemmTile> tiles) {
  ArrayPipeline pipe(dataflow, dims, double_buffered);
  for (const GemmTile& t : tiles) pipe.issue(t, 0, 0, 0);
  return pipe.last_done();
}

}  // namespace tessera::array
