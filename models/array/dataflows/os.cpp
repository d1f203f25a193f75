// Output stationary ("os"): C (m x n) accumulates in the PEs while A and B stream in
// k skewed steps; the results are then shifted down each column into the accumulators.
#include <algorithm>

#include "models/array/dataflows/builtin.h"

namespace tessera::array {
namespace {

class OutputStationary final : public DataflowModel {
 public:
  Dataflow id() const override { return Dataflow::kOutputStationary; }
  std::string_view name() const override { return "os"; }
  GemmTile tile_bounds(ArrayDims dims) const override { return {dims.rows, kUnbounded, dims.cols}; }
  // B's k rows stream, one per step: a FIFO tile of `rows` rows feeds `rows` steps.
  int64_t weight_stream_step(ArrayDims dims) const override { return dims.rows; }
  TileTiming timing(ArrayDims dims, GemmTile tile) const override {
    // k skewed steps of A and B; PE(m-1, n-1) finishes m+n-2 cycles after the last
    // step entered; its column then shifts all R rows down into the accumulators.
    return TileTiming{0, tile.k, dims.rows + tile.m + tile.n - 2};
  }
  // Nothing is preloaded: both operands stream, so the later of the two gates both.
  OperandReadiness readiness(int64_t weights_ready, int64_t dispatched) const override {
    const int64_t ready = std::max(weights_ready, dispatched);
    return {ready, ready};
  }
  // F = the drain frontier (max over earlier tiles of E_q + m_q):
  //   stream_start S = max(stream_ready, stationary_ready, E_p, double_buffered ? F - Ls : F - 1)
  TileSchedule schedule(PipelineState& state, bool double_buffered, GemmTile tile, const TileTiming& timing,
                        int64_t stream_cycles, OperandReadiness ready) const override {
    const int64_t prev_stream_end = state.first ? 0 : state.prev.stream_end;
    int64_t start = std::max({int64_t{0}, ready.stream_ready, ready.stationary_ready, prev_stream_end});
    if (!state.first) {
      // Double buffered: this tile's results (written from stream_end-1 on, diagonally)
      // must not land before the frontier's drain wave has left a row; single buffered:
      // its first partial sums must not land there.
      start = std::max(start, double_buffered ? state.drain_frontier - stream_cycles : state.drain_frontier - 1);
    }
    TileSchedule s;
    s.preload_start = s.preload_end = s.stream_start = start;
    s.stream_end = s.stream_start + stream_cycles;
    s.done = s.stream_end + timing.drain_cycles;
    state.drain_frontier = std::max(state.drain_frontier, s.stream_end + tile.m);
    state.prev = s;
    state.first = false;
    return s;
  }
  ReferenceMachine reference_machine() const override { return ReferenceMachine::kOutputStationary; }
  // C (m x n) is held while the k steps stream.
  TileOccupancy occupancy(GemmTile t) const override { return {t.m * t.n, t.k}; }
  // A and B stream through; the results drain out.
  int64_t register_bits(GemmTile t, int64_t a_bits, int64_t b_bits, int64_t psum_bits) const override {
    return t.m * t.k * t.n * (a_bits + b_bits + psum_bits) + t.m * t.n * psum_bits * (t.m + 1) / 2;
  }
};

}  // namespace

std::unique_ptr<const DataflowModel> make_output_stationary() { return std::make_unique<OutputStationary>(); }

}  // namespace tessera::array
