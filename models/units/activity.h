#pragma once
// What one instruction does to the hardware, counted in the units of the per-action
// energies (docs/energy.md): MACs per precision pair (useful, and idle-but-clocked PEs),
// array pipeline-register bits written, unified-buffer, accumulator and weight-FIFO
// traffic, vector-unit operations by function, weight-memory and PCIe bytes.
// The units add an instruction's activity to their counters when they run it (dma_engine,
// weight_fetcher, matrix_unit, vector_unit .cpp); the report sums it per layer. One definition for both, so they agree. What a matmul tile
// occupies and writes in the array is its dataflow's (DataflowModel::occupancy, register_bits).
// Plain C++: no SystemC.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/array/params.h"
#include "models/isa/program.h"

namespace tessera::models {

// Width of the partial sums the array passes between PEs and writes to the accumulators
// (DESIGN.md section 5: accumulation is 32-bit).
inline constexpr int64_t kPartialSumBits = 32;

struct VectorOps {
  std::string_view function;  // ISA vector function, activation function, or "requantize"
  int64_t count = 0;          // element operations
};

struct InstructionActivity {
  // matmul
  Dtype a_dtype = Dtype::kInt8;
  Dtype b_dtype = Dtype::kInt8;
  int64_t macs = 0;           // useful multiply-accumulates
  int64_t idle_macs = 0;      // PE-cycles-worth of MACs clocked while the tile streams, outside the tile
  int64_t register_bits = 0;  // array pipeline-register bits written: streamed operands, partial sums, the stationary load
  int64_t accumulator_reads = 0;   // 32-bit values (matmul with accumulate: read-modify-write; activate: drain)
  int64_t accumulator_writes = 0;
  // every unit
  uint64_t ub_read_bytes = 0;
  uint64_t ub_write_bytes = 0;
  uint64_t weight_fifo_bytes = 0;  // bytes written into the weight FIFO (and read out of it by the array)
  std::array<VectorOps, 2> vector{};
  uint64_t dram_bytes = 0;         // weight-memory bytes read
  uint64_t pcie_bytes_to_device = 0;
  uint64_t pcie_bytes_to_host = 0;
};

InstructionActivity activity_of(const isa::Instruction& in, const ArrayConfig& array);

// The vector-unit functions `program` uses, in first-use order ("requantize" for any activate).
std::vector<std::string_view> vector_functions(const isa::Program& program);

// The (a, b) precision pairs of `program`'s matmuls together with the array's modes, in
// the array's order then first use: one MAC counter each.
std::vector<std::pair<Dtype, Dtype>> mac_pairs(const isa::Program& program, const ArrayConfig& array);

}  // namespace tessera::models
