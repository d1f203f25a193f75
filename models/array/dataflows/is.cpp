// Input stationary ("is"): A^T (k x m) is held in the PEs, the n columns of B stream,
// partial sums flow down: the ws machine with the roles of A and B exchanged.
#include "models/array/dataflows/builtin.h"

namespace tessera::array {
namespace {

class InputStationary final : public StationaryDataflow {
 public:
  Dataflow id() const override { return Dataflow::kInputStationary; }
  std::string_view name() const override { return "is"; }
  GemmTile tile_bounds(ArrayDims dims) const override { return {dims.cols, dims.rows, kUnbounded}; }
  // The bottom row delivers the m sums of one streamed column of B per cycle: an
  // accumulator entry per column (n entries), m sums wide.
  GemmTile accumulator_bounds(int64_t entries, int64_t width) const override { return {width, kUnbounded, entries}; }
  // B's n columns stream, one per step: a FIFO tile of `cols` columns feeds `cols` steps.
  int64_t weight_stream_step(ArrayDims dims) const override { return dims.cols; }
  TileTiming timing(ArrayDims dims, GemmTile tile) const override {
    return TileTiming{tile.k, tile.n, dims.rows + tile.m - 1};
  }
  // The inputs are stationary (loadable once dispatched); the weights stream, so their
  // arrival in the FIFO gates the stream.
  OperandReadiness readiness(int64_t weights_ready, int64_t dispatched) const override {
    return {dispatched, weights_ready};
  }
  ReferenceMachine reference_machine() const override { return ReferenceMachine::kStationaryAT; }
  // A^T (k x m) is held while the n columns of B stream.
  TileOccupancy occupancy(GemmTile t) const override { return {t.k * t.m, t.n}; }
  // B streams through, A^T shifts in.
  int64_t register_bits(GemmTile t, int64_t a_bits, int64_t b_bits, int64_t psum_bits) const override {
    return t.m * t.k * t.n * (b_bits + psum_bits) + t.k * t.m * a_bits * (t.k + 1) / 2;
  }
};

}  // namespace

std::unique_ptr<const DataflowModel> make_input_stationary() { return std::make_unique<InputStationary>(); }

}  // namespace tessera::array
