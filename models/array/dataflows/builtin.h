#pragma once
// Factories of the built-in dataflows, one per file in this folder; registry.cpp
// registers them. Private to models/array.
#include <memory>

#include "models/array/dataflow.h"

namespace tessera::array {

std::unique_ptr<const DataflowModel> make_weight_stationary();  // ws.cpp
std::unique_ptr<const DataflowModel> make_output_stationary();  // os.cpp
std::unique_ptr<const DataflowModel> make_input_stationary();   // is.cpp

// The two stationary-operand dataflows (ws, is) run the same PE machine, with A^T in
// place of B for is, so they share its issue rule (stationary.cpp):
//    preload_start L = max(stationary_ready, double_buffered ? S_p : E_p - 1, P_p)
//    preload_end   P = L + preload
//    stream_start  S = max(stream_ready, P, E_p)
class StationaryDataflow : public DataflowModel {
 public:
  TileSchedule schedule(PipelineState& state, bool double_buffered, GemmTile tile, const TileTiming& timing,
                        int64_t stream_cycles, OperandReadiness ready) const final;
};

}  // namespace tessera::array
