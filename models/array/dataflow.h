#pragma once
// A dataflow is a policy of the systolic array: which operand stays put in the PEs
// while the others stream through. Each dataflow is one DataflowModel, implemented in
// its own file under models/array/dataflows/ and registered once, explicitly, in
// dataflows/registry.cpp (static archives drop self-registering objects).
//
// Contract of a DataflowModel (everything the rest of Tessera asks about a dataflow):
//  - tile_bounds: how far each tile dimension may extend on an array. The stationary
//    dimensions are capped by the array, the streamed ones are kUnbounded. The
//    compiler's and functional mode's tile extents and tile_fits() derive from it.
//  - accumulator_bounds: which tile dimensions index the accumulator entries and which
//    their width, so the compiler caps a streamed dimension only where its results land.
//  - weight_stream_step: how the weight operand B arrives from the weight FIFO, whose
//    tiles hold at most rows x cols weights: held (ws: one FIFO tile, loaded before the
//    stream) or streamed in FIFO tiles, each needed when the stream reaches it.
//  - timing: the isolated cycle components of a tile that fits (systolic_timing.h).
//  - readiness: which of the matmul's two arrival times (weights in the FIFO, the
//    instruction dispatched) gates the stationary load and which the stream.
//  - schedule: the issue rule of back-to-back tiles on one pipeline (ArrayPipeline).
//  - reference_machine: which PE-level machine of pe_reference.cpp executes it.
//  - occupancy: the PEs a tile occupies while it streams and the MAC steps it streams for
//    (the energy model's idle MACs, the TPU paper's Table 3 rows 2 and 3).
//  - register_bits: the array pipeline-register bits a tile writes (the energy model's
//    register activity, models/units/activity.cpp).
// The fast model of every registered dataflow must equal the PE-level reference
// cycle for cycle; tests/models/array runs over all registered dataflows.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/array/tile.h"

namespace tessera::array {

// The identity of a registered dataflow (config value, report key, sweep parameter).
enum class Dataflow {
  kWeightStationary,  // "ws": B (weights) held, A streams, partial sums flow down
  kOutputStationary,  // "os": C (outputs) held, A and B stream, results drained at the end
  kInputStationary,   // "is": A (inputs) held, B streams, partial sums flow down
};

// When a matmul's stationary operand may start loading and its streamed operands
// may start streaming, in array cycles.
struct OperandReadiness {
  int64_t stationary_ready = 0;
  int64_t stream_ready = 0;
};

// What one pipeline remembers between tiles (ArrayPipeline owns it).
struct PipelineState {
  bool first = true;          // no tile issued yet
  TileSchedule prev{};        // the previous tile's schedule
  int64_t drain_frontier = 0; // latest point a drain wave occupies the array (os: max stream_end + m)
};

// The PEs a tile occupies while it streams, and the MAC steps it streams for: the rest of
// the array's PEs are idle for those steps (the TPU paper's "unused MACs").
struct TileOccupancy {
  int64_t pes = 0;
  int64_t steps = 0;
};

// The PE-level machines of the cycle-exact reference (pe_reference.cpp).
enum class ReferenceMachine {
  kStationaryB,   // B (k x n) held, rows of A stream
  kStationaryAT,  // A^T (k x m) held, columns of B stream (the same machine, transposed)
  kOutputStationary,
};

class DataflowModel {
 public:
  virtual ~DataflowModel() = default;

  virtual Dataflow id() const = 0;
  virtual std::string_view name() const = 0;  // "ws"
  virtual GemmTile tile_bounds(ArrayDims dims) const = 0;
  // The tile extents that one half of the accumulators (`entries` rows of `width` partial
  // sums) can receive: ws and os write m rows of n sums, is writes n rows of m sums.
  virtual GemmTile accumulator_bounds(int64_t entries, int64_t width) const { return {entries, kUnbounded, width}; }
  // 0 when B is held in the array (it must be complete before the stream starts);
  // otherwise the natural stream cycles one FIFO tile of B feeds: B's FIFO tile i is first
  // needed at stream step i x weight_stream_step (os: rows of B, is: columns of B).
  virtual int64_t weight_stream_step(ArrayDims dims) const = 0;
  // Requires fits(dims, tile).
  virtual TileTiming timing(ArrayDims dims, GemmTile tile) const = 0;
  // weights_ready: the tile is in the weight FIFO; dispatched: the matmul left the controller.
  virtual OperandReadiness readiness(int64_t weights_ready, int64_t dispatched) const = 0;
  // Schedules `tile` after the tiles recorded in `state` and updates `state`.
  // stream_cycles: the stream window (natural stream stretched by min_stream_cycles).
  virtual TileSchedule schedule(PipelineState& state, bool double_buffered, GemmTile tile,
                                const TileTiming& timing, int64_t stream_cycles,
                                OperandReadiness ready) const = 0;
  virtual ReferenceMachine reference_machine() const = 0;
  virtual TileOccupancy occupancy(GemmTile tile) const = 0;
  // Pipeline-register bits `tile` writes: per useful MAC a PE latches what streams through
  // it and its partial sum; before the tile the stationary operand shifts in from the
  // array's edge, an element at depth d passing d registers ((k + 1) / 2 on average), or,
  // output-stationary, the results drain out the same way. Widths in bits: the operands
  // a (A) and b (B), and the partial sums.
  virtual int64_t register_bits(GemmTile tile, int64_t a_bits, int64_t b_bits, int64_t psum_bits) const = 0;

  // When the weights of a tile let its stream start, given the cycle each of its FIFO
  // tiles (in stream order) is ready: B held, the last of them; B streamed, the latest
  // ready_i - (the stream offset of step i x weight_stream_step), so that every FIFO tile
  // is there when the stream reaches it. natural_stream: the tile's stream at one step per
  // cycle; stream_cycles: the stream window after stretching (>= natural_stream).
  int64_t weights_ready(ArrayDims dims, std::span<const int64_t> tile_ready, int64_t natural_stream,
                        int64_t stream_cycles) const;

  // All of m, k, n >= 1, dims positive, and every extent within tile_bounds(dims).
  bool fits(ArrayDims dims, GemmTile tile) const;
  // `limits` (caps from outside the array: accumulator entries, a K step) tightened by
  // tile_bounds: the largest tile the compiler may emit under those limits.
  GemmTile max_tile(ArrayDims dims, GemmTile limits) const;
};

// The registered dataflows, in registration order.
class DataflowRegistry {
 public:
  void add(std::unique_ptr<const DataflowModel> model);  // throws on a duplicate id or name
  const DataflowModel* find(std::string_view name) const;
  const DataflowModel& get(Dataflow id) const;  // throws std::logic_error if not registered
  std::span<const std::unique_ptr<const DataflowModel>> all() const { return models_; }
  std::vector<std::string_view> names() const;

 private:
  std::vector<std::unique_ptr<const DataflowModel>> models_;
};

// Registers ws, os and is (dataflows/registry.cpp: one line per dataflow).
void add_builtin_dataflows(DataflowRegistry& registry);
// The process-wide registry of the built-in dataflows, built on first use.
const DataflowRegistry& dataflows();
const DataflowModel& dataflow_model(Dataflow dataflow);

std::string_view dataflow_name(Dataflow d);
std::optional<Dataflow> parse_dataflow(std::string_view s);

}  // namespace tessera::array
