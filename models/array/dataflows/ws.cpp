// Weight stationary ("ws"): B (k x n) is held in the PEs, the m rows of A stream,
// partial sums flow down the columns into the accumulators (the TPU v1 dataflow).
#include "models/array/dataflows/builtin.h"

namespace tessera::array {
namespace {

class WeightStationary final : public StationaryDataflow {
 public:
  Dataflow id() const override { return Dataflow::kWeightStationary; }
  std::string_view name() const override { return "ws"; }
  GemmTile tile_bounds(ArrayDims dims) const override { return {kUnbounded, dims.rows, dims.cols}; }
  int64_t weight_stream_step(ArrayDims) const override { return 0; }  // B is held
  TileTiming timing(ArrayDims dims, GemmTile tile) const override {
    // B shifts in one row per cycle; the m rows of A enter one per cycle; the last
    // row's partial sum for column n-1 leaves the bottom row R-1 + n-1 cycles after it
    // entered and is added into the accumulators one cycle later.
    return TileTiming{tile.k, tile.m, dims.rows + tile.n - 1};
  }
  // The weights are the stationary operand; the rows of A stream once dispatched.
  OperandReadiness readiness(int64_t weights_ready, int64_t dispatched) const override {
    return {weights_ready, dispatched};
  }
  ReferenceMachine reference_machine() const override { return ReferenceMachine::kStationaryB; }
  // B (k x n) is held while the m rows of A stream.
  TileOccupancy occupancy(GemmTile t) const override { return {t.k * t.n, t.m}; }
  // A streams through, B shifts in.
  int64_t register_bits(GemmTile t, int64_t a_bits, int64_t b_bits, int64_t psum_bits) const override {
    return t.m * t.k * t.n * (a_bits + psum_bits) + t.k * t.n * b_bits * (t.k + 1) / 2;
  }
};

}  // namespace

std::unique_ptr<const DataflowModel> make_weight_stationary() { return std::make_unique<WeightStationary>(); }

}  // namespace tessera::array
