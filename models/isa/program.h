#pragma once
// The accelerator's instruction set: TPU-like CISC instructions the compiler emits and
// the SystemC units execute (DESIGN.md §4). Regions name the on-chip data each
// instruction reads and writes; the controller stalls on overlapping regions.
// A leaf of the model tree: it knows tiles and dtypes, nothing of graphs or reports.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/array/systolic_timing.h"
#include "sim/common/dtype.h"

namespace tessera::isa {

enum class Opcode { kReadHost, kReadWeights, kMatmul, kActivate, kVector, kWriteHost, kSync, kHalt };
std::string_view opcode_name(Opcode op);

enum class Space { kUnifiedBuffer, kAccumulators };

// A rectangle of a 2-D buffer: a tensor in the unified buffer (rows = batch x
// spatial positions, cols = features/channels) or one half of the accumulators.
struct Region {
  Space space = Space::kUnifiedBuffer;
  int32_t buffer = 0;  // tensor id (UB) or accumulator half (0/1)
  int64_t row_begin = 0, row_end = 0;
  int64_t col_begin = 0, col_end = 0;
  bool overlaps(const Region& o) const {
    return space == o.space && buffer == o.buffer && row_begin < o.row_end && o.row_begin < row_end &&
           col_begin < o.col_end && o.col_begin < col_end;
  }
};

// The function an `activate` applies while draining accumulators to the unified buffer.
enum class ActivationFn { kNone, kRelu, kSigmoid, kTanh, kRelu6 };
std::string_view activation_fn_name(ActivationFn f);

// Where a read_weights tile comes from. Weights of fc/conv/lstm layers live in weight
// memory (DRAM). The second operand of an activation x activation matmul (attention's
// K^T and V) is already in the unified buffer: its read_weights moves no weight-memory
// bytes (bytes = 0), names the UB region it loads in `reads` (so the controller waits
// for the producer), and carries the tile size in ub_read_bytes; the consuming matmul
// adds those bytes to its own ub_read_bytes, so the UB read port pays for the load.
enum class WeightSource { kWeightMemory, kUnifiedBuffer };
std::string_view weight_source_name(WeightSource s);

struct Instruction {
  Opcode op = Opcode::kSync;
  int32_t layer = -1;  // the compiled workload's layer index (stats and listings), -1 for none
  std::vector<Region> reads;
  std::vector<Region> writes;

  uint64_t bytes = 0;       // read_host / write_host / read_weights: bytes moved
  uint64_t ub_address = 0;  // read_host / write_host / activate / vector: destination or source offset (display)
  uint64_t weight_address = 0;  // read_weights: weight-memory offset (display)
  WeightSource weight_source = WeightSource::kWeightMemory;  // read_weights
  // read_host / write_host: a spill (an activation evicted to host memory, read back, or
  // streamed through host memory by a row-tiled layer) rather than a graph input/output.
  bool spill = false;

  // matmul
  array::GemmTile tile{};
  Dtype a_dtype = Dtype::kInt8;
  Dtype b_dtype = Dtype::kInt8;
  bool accumulate = false;
  int32_t weight_tiles = 0;   // FIFO tiles consumed by this matmul
  uint64_t ub_read_bytes = 0;  // matmul / vector: bytes read from the unified buffer
  uint64_t ub_write_bytes = 0; // activate / vector: bytes written to the unified buffer

  // activate: rows x cols accumulator values through the vector unit
  int64_t rows = 0;
  int64_t cols = 0;
  ActivationFn function = ActivationFn::kNone;

  // vector
  // The vector function, as listings and traces name it: the op's OpDef listing name
  // (sim/graph/ops/), or a step of a lowered layer ("lstm_cell", "gru_reset"). The cost is
  // `elements` element operations on the vector unit's lanes plus the unified-buffer
  // bytes the instruction reads and writes. Points to static storage.
  std::string_view vector_function = "add";
  int64_t elements = 0;  // element operations performed
  int64_t element_bytes = 1;  // widest operand: the vector datapath does lanes bytes per cycle

  std::string text() const;  // one line of `tessera compile` output
};

// What the units execute. The compiler's result (sim/compiler/compiled.h) extends it
// with the report's per-layer facts and totals.
struct Program {
  std::vector<Instruction> instructions;
};

}  // namespace tessera::isa
