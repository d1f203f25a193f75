#include "models/isa/program.h"

#include <sstream>

namespace tessera::isa {

std::string_view opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kReadHost: return "read_host";
    case Opcode::kReadWeights: return "read_weights";
    case Opcode::kMatmul: return "matmul";
    case Opcode::kActivate: return "activate";
    case Opcode::kVector: return "vector";
    case Opcode::kWriteHost: return "write_host";
    case Opcode::kSync: return "sync";
    case Opcode::kHalt: return "halt";
    case Opcode::kDmaRead: return "dma_read";
    case Opcode::kDmaWrite: return "dma_write";
  }
  return "?";
}

std::string_view activation_fn_name(ActivationFn f) {
  switch (f) {
    case ActivationFn::kNone: return "none";
    case ActivationFn::kRelu: return "relu";
    case ActivationFn::kSigmoid: return "sigmoid";
    case ActivationFn::kTanh: return "tanh";
    case ActivationFn::kRelu6: return "relu6";
  }
  return "?";
}

std::string_view weight_source_name(WeightSource s) {
  switch (s) {
    case WeightSource::kWeightMemory: return "weight_memory";
    case WeightSource::kUnifiedBuffer: return "unified_buffer";
    case WeightSource::kHost: return "host";
  }
  return "?";
}

std::string Instruction::text() const {
  std::ostringstream s;
  s << opcode_name(op);
  switch (op) {
    case Opcode::kReadHost:
    case Opcode::kWriteHost:
      s << " bytes=" << bytes << " ub=0x" << std::hex << ub_address << std::dec;
      if (spill) s << " spill";
      break;
    case Opcode::kReadWeights:
      if (weight_source == WeightSource::kUnifiedBuffer) {
        s << " from=ub ub_read=" << ub_read_bytes;
      } else if (weight_source == WeightSource::kHost) {
        s << " from=host bytes=" << bytes << " host=0x" << std::hex << weight_address << std::dec;
      } else {
        s << " bytes=" << bytes << " dram=0x" << std::hex << weight_address << std::dec;
      }
      break;
    case Opcode::kMatmul:
      s << " m=" << tile.m << " k=" << tile.k << " n=" << tile.n << " " << dtype_name(a_dtype) << "x"
        << dtype_name(b_dtype) << (accumulate ? " accumulate" : " overwrite") << " acc=" << writes.front().buffer
        << " ub_read=" << ub_read_bytes;
      break;
    case Opcode::kActivate:
      s << " " << activation_fn_name(function) << " rows=" << rows << " cols=" << cols
        << " acc=" << reads.front().buffer << " ub=0x" << std::hex << ub_address << std::dec;
      break;
    case Opcode::kVector:
      s << " " << vector_function << " elements=" << elements << " ub=0x" << std::hex << ub_address
        << std::dec;
      break;
    case Opcode::kDmaRead:
    case Opcode::kDmaWrite:
      s << " bytes=" << bytes << " ub=0x" << std::hex << ub_address << " device=0x" << weight_address << std::dec;
      if (spill) s << " spill";
      break;
    case Opcode::kSync:
    case Opcode::kHalt:
      break;
  }
  // Single-core, single-unit programs (TPU v1) name neither.
  if (core != 0) s << " core=" << static_cast<int>(core);
  if (unit != 0) s << " unit=" << static_cast<int>(unit);
  return s.str();
}

}  // namespace tessera::isa
