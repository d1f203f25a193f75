#pragma once
// What the compiler produces for one workload on one architecture: the ISA program the
// units execute, plus the report's static facts per layer and the program's totals.
#include <cstdint>
#include <string>
#include <vector>

#include "models/isa/program.h"
#include "sim/common/dtype.h"

namespace tessera::compiler {

// Static facts about one graph layer, for the report.
struct LayerInfo {
  std::string name;
  std::string op;
  int64_t macs = 0;            // for the whole batch
  int64_t weights = 0;         // weight count
  uint64_t weight_bytes = 0;   // read from weight memory, or host memory (weights: host) (incl. re-fetches)
  Dtype a_dtype = Dtype::kInt8;
  Dtype b_dtype = Dtype::kInt8;
  std::string output_shape;    // per sample
  // Matrix view for the batch (0 for vector layers), with gemm_m * gemm_k * gemm_n == macs:
  // for grouped convs and multi-head matmuls gemm_m counts the rows of every group
  // (k and n are per group); lstm/gru: m = batch x steps x directions, k = input +
  // hidden, n = gates x hidden.
  int64_t gemm_m = 0, gemm_k = 0, gemm_n = 0;
  int64_t groups = 1;          // independent products per sample (conv groups, attention heads)
  // Which unit runs the layer: "array" (weights from weight memory), "array_ub" (both
  // operands from the unified buffer), "vector" (the vector unit; for a grouped conv the
  // compiler picked it as faster than the array on this config), "alias" (no data moves).
  std::string mapping;
  // Spills charged to this layer (it needed the room, or streamed its tensors through
  // host memory): bytes written to and read back from host memory over PCIe.
  uint64_t spill_bytes_out = 0;
  uint64_t spill_bytes_in = 0;
  int64_t row_tiles = 0;  // > 0: the layer ran in this many row tiles (its working set does not fit at once)
};

// The ISA program (its `instructions`) with what the report needs about it. An
// instruction's `layer` indexes `layers`.
struct CompiledWorkload : isa::Program {
  std::string workload;
  std::string arch;
  int64_t batch = 1;
  int64_t sub_batch = 1;  // samples per pass through the graph (< batch when the batch does not fit on chip)
  std::vector<LayerInfo> layers;
  uint64_t ub_peak_bytes = 0;       // high-water mark of the unified-buffer allocation (of each core's scratchpad)
  // Scratchpads the program lays out: one per active core, each of its own capacity, all
  // with the same layout (docs/architecture.md "Work split").
  int64_t scratchpads = 1;
  uint64_t host_input_bytes = 0;
  uint64_t host_output_bytes = 0;
  // Graph inputs read from and outputs written to device memory (residency: device).
  uint64_t device_input_bytes = 0;
  uint64_t device_output_bytes = 0;
  uint64_t weight_bytes_read = 0;   // all read_weights together
  uint64_t host_weight_bytes = 0;   // of them, over the host link (residency.weights: host)
  uint64_t spill_bytes_out = 0;     // spill write_host bytes, all layers together
  uint64_t spill_bytes_in = 0;      // spill read_host bytes
  // Split layers on several cores: operand panels and results that cross device memory
  // between the cores' scratchpads (dma_write out of one, dma_read into another).
  uint64_t core_copy_bytes_out = 0;
  uint64_t core_copy_bytes_in = 0;
  // A program of more passes than its templates' period plus two (pass_templates.h): the
  // instruction templates stored at the end of its second-to-last pass, as projected from
  // its first passes and as measured; both 0 otherwise. For tests and docs/limits.md.
  uint64_t templates_projected = 0;
  uint64_t templates_measured = 0;

  std::string listing() const;          // every instruction, one per line (`tessera compile --expand`)
  std::string compact_listing() const;  // the compact form: repeats with counts and strides (`tessera compile`)
};

// The ISA's names as the compiler and its callers have always spelt them; to be
// replaced by isa:: at the call sites.
using Program = CompiledWorkload;
using isa::ActivationFn;
using isa::Instruction;
using isa::Opcode;
using isa::Region;
using isa::Space;
using isa::WeightSource;
using isa::activation_fn_name;
using isa::opcode_name;
using isa::weight_source_name;

}  // namespace tessera::compiler
