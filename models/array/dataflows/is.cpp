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
  TileTiming timing(ArrayDims dims, GemmTile tile) const override {
    return TileTiming{tile.k, tile.n, dims.rows + tile.m - 1};
  }
  // The inputs are stationary (loadable once dispatched); the weights stream, so their
  // arrival in the FIFO gates the stream.
  OperandReadiness readiness(int64_t weights_ready, int64_t dispatched) const override {
    return {dispatched, weights_ready};
  }
  ReferenceMachine reference_machine() const override { return ReferenceMachine::kStationaryAT; }
};

}  // namespace

std::unique_ptr<const DataflowModel> make_input_stationary() { return std::make_unique<InputStationary>(); }

}  // namespace tessera::array
