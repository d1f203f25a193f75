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
  }
  return "?";
}

std::string_view vector_op_name(VectorOp op) {
  switch (op) {
    case VectorOp::kMaxPool: return "maxpool";
    case VectorOp::kAvgPool: return "avgpool";
    case VectorOp::kGlobalAvgPool: return "global_avgpool";
    case VectorOp::kConcat: return "concat";
    case VectorOp::kAdd: return "add";
    case VectorOp::kMul: return "mul";
    case VectorOp::kSigmoid: return "sigmoid";
    case VectorOp::kTanh: return "tanh";
    case VectorOp::kRelu: return "relu";
    case VectorOp::kSub: return "sub";
    case VectorOp::kDiv: return "div";
    case VectorOp::kPow: return "pow";
    case VectorOp::kMax: return "max";
    case VectorOp::kMin: return "min";
    case VectorOp::kWhere: return "where";
    case VectorOp::kSqrt: return "sqrt";
    case VectorOp::kErf: return "erf";
    case VectorOp::kExp: return "exp";
    case VectorOp::kGelu: return "gelu";
    case VectorOp::kClip: return "clip";
    case VectorOp::kLeakyRelu: return "leaky_relu";
    case VectorOp::kHardSigmoid: return "hard_sigmoid";
    case VectorOp::kHardSwish: return "hard_swish";
    case VectorOp::kBatchNorm: return "batch_norm";
    case VectorOp::kLayerNorm: return "layer_norm";
    case VectorOp::kSoftmax: return "softmax";
    case VectorOp::kReduceMean: return "reduce_mean";
    case VectorOp::kReduceSum: return "reduce_sum";
    case VectorOp::kReduceMax: return "reduce_max";
    case VectorOp::kGlobalMaxPool: return "global_maxpool";
    case VectorOp::kResize: return "resize";
    case VectorOp::kPad: return "pad";
    case VectorOp::kTranspose: return "transpose";
    case VectorOp::kSlice: return "slice";
    case VectorOp::kExpand: return "expand";
    case VectorOp::kGroupedConv: return "grouped_conv";
    case VectorOp::kLstmCell: return "lstm_cell";
    case VectorOp::kGruCell: return "gru_cell";
    case VectorOp::kGruReset: return "gru_reset";
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
      s << " " << vector_op_name(vector_op) << " elements=" << elements << " ub=0x" << std::hex << ub_address
        << std::dec;
      break;
    case Opcode::kSync:
    case Opcode::kHalt:
      break;
  }
  return s.str();
}

}  // namespace tessera::isa
