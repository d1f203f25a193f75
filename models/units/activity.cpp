#include "models/units/activity.h"

#include <algorithm>

#include "models/array/dataflow.h"

namespace tessera::models {

using isa::Opcode;

InstructionActivity activity_of(const isa::Instruction& in, const ArrayConfig& array) {
  InstructionActivity a;
  switch (in.op) {
    case Opcode::kReadHost:  // host memory -> unified buffer
      a.pcie_bytes_to_device = in.bytes;
      a.ub_write_bytes = in.bytes;
      break;
    case Opcode::kWriteHost:  // unified buffer -> host memory
      a.pcie_bytes_to_host = in.bytes;
      a.ub_read_bytes = in.bytes;
      break;
    case Opcode::kReadWeights:  // weight memory -> weight FIFO (a UB-sourced tile moves no weight-memory bytes: bytes = 0)
      // Host-resident weights cross the host link instead of leaving weight memory.
      (in.weight_source == isa::WeightSource::kHost ? a.pcie_bytes_to_device : a.dram_bytes) = in.bytes;
      a.weight_fifo_bytes = in.bytes;
      break;
    case Opcode::kMatmul: {
      const array::GemmTile& t = in.tile;
      a.a_dtype = in.a_dtype;
      a.b_dtype = in.b_dtype;
      a.macs = t.m * t.k * t.n;
      // What the tile occupies and writes depends on the dataflow (its DataflowModel).
      const array::DataflowModel& df = array::dataflow_model(array.dataflow);
      const array::TileOccupancy occ = df.occupancy(t);
      a.idle_macs = std::max<int64_t>(0, array.rows * array.cols - occ.pes) * occ.steps;
      a.register_bits = df.register_bits(t, dtype_bits(in.a_dtype), dtype_bits(in.b_dtype), kPartialSumBits);
      a.ub_read_bytes = in.ub_read_bytes;
      a.accumulator_writes = t.m * t.n;
      a.accumulator_reads = in.accumulate ? t.m * t.n : 0;
      break;
    }
    case Opcode::kActivate:  // accumulators -> requantize and function -> unified buffer
      a.accumulator_reads = in.rows * in.cols;
      a.ub_write_bytes = in.ub_write_bytes;
      a.vector[0] = {"requantize", in.rows * in.cols};
      if (in.function != isa::ActivationFn::kNone) a.vector[1] = {isa::activation_fn_name(in.function), in.rows * in.cols};
      break;
    case Opcode::kVector:
      a.ub_read_bytes = in.ub_read_bytes;
      a.ub_write_bytes = in.ub_write_bytes;
      a.vector[0] = {in.vector_function, in.elements};
      break;
    case Opcode::kDmaRead:  // device memory -> scratchpad
      a.dram_bytes = in.bytes;
      a.ub_write_bytes = in.bytes;
      break;
    case Opcode::kDmaWrite:  // scratchpad -> device memory
      a.dram_bytes = in.bytes;
      a.ub_read_bytes = in.bytes;
      break;
    case Opcode::kSync:
    case Opcode::kHalt: break;
  }
  return a;
}

std::vector<std::string_view> vector_functions(const isa::Program& program) {
  std::vector<std::string_view> out;
  auto add = [&](std::string_view f) {
    if (!f.empty() && std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  };
  for (const isa::Instruction& in : program.instructions) {
    if (in.op != Opcode::kActivate && in.op != Opcode::kVector) continue;
    // The function names do not depend on the array.
    for (const VectorOps& v : activity_of(in, ArrayConfig{}).vector) add(v.function);
  }
  return out;
}

std::vector<std::pair<Dtype, Dtype>> mac_pairs(const isa::Program& program, const ArrayConfig& array) {
  std::vector<std::pair<Dtype, Dtype>> out;
  auto add = [&](Dtype a, Dtype b) {
    if (std::find(out.begin(), out.end(), std::pair{a, b}) == out.end()) out.emplace_back(a, b);
  };
  for (const MacMode& m : array.mac_modes) add(m.a, m.b);
  for (const isa::Instruction& in : program.instructions) {
    if (in.op == Opcode::kMatmul) add(in.a_dtype, in.b_dtype);
  }
  return out;
}

}  // namespace tessera::models
