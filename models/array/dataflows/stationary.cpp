// The issue rule of the stationary-operand machine, shared by ws and is.
#include <algorithm>

#include "models/array/dataflows/builtin.h"

namespace tessera::array {

TileSchedule StationaryDataflow::schedule(PipelineState& state, bool double_buffered, GemmTile,
                                          const TileTiming& timing, int64_t stream_cycles,
                                          OperandReadiness ready) const {
  int64_t load_free = 0;
  const int64_t prev_stream_end = state.first ? 0 : state.prev.stream_end;
  if (!state.first) {
    // Shadow buffer: the previous tile's switch token reaches PE(0,0) at its stream
    // start and the skewed load wave follows it. Single buffer: the load wave follows
    // the previous tile's last operand, which passes PE(0,0) at its stream_end - 1.
    load_free = double_buffered ? state.prev.stream_start : state.prev.stream_end - 1;
    load_free = std::max(load_free, state.prev.preload_end);  // one loader port
  }
  TileSchedule s;
  s.preload_start = std::max({int64_t{0}, ready.stationary_ready, load_free});
  s.preload_end = s.preload_start + timing.preload_cycles;
  s.stream_start = std::max({int64_t{0}, ready.stream_ready, s.preload_end, prev_stream_end});
  s.stream_end = s.stream_start + stream_cycles;
  s.done = s.stream_end + timing.drain_cycles;
  state.prev = s;
  state.first = false;
  return s;
}

}  // namespace tessera::array
