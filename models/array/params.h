#pragma once
// Parameters of the systolic array: what ArchConfig::array holds.
// sim/config/arch_config.cpp fills them from YAML and validates every field.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/array/dataflow.h"
#include "sim/common/dtype.h"

namespace tessera {

// MAC throughput for one operand-precision pair, as a fraction of the int8 x int8 peak.
struct MacMode {
  Dtype a = Dtype::kInt8;  // activation (streamed) operand
  Dtype b = Dtype::kInt8;  // weight operand
  double rate = 1.0;       // 1.0 = one MAC per PE per cycle; TPU v1 int16 x int16 = 0.25; TPU v5e int8 = 2 x bf16
  // The type the products accumulate in: int32 for integer modes, fp32 for float modes
  // (DESIGN.md §5: TPU v2+ accumulate bf16 products in fp32).
  Dtype accumulator = Dtype::kInt32;
  // The pair runs as another type the hardware has (fp16 on bf16-only MXUs converts its
  // operands to bf16): the functional mode rounds operands to it. Unset: the pair itself.
  std::optional<Dtype> runs_as;
};

struct ArrayConfig {
  // Matrix units per core (TPU v4: 4 MXUs per TensorCore, v6e: 2): each its own SystemC
  // process with its own weight FIFO and accumulators, sharing the core's scratchpad ports.
  int64_t count = 1;
  int64_t rows = 0;  // PEs along the reduction (K) dimension for ws/is, along M for os
  int64_t cols = 0;
  array::Dataflow dataflow = array::Dataflow::kWeightStationary;
  // A shadow copy of the stationary operand lets the next tile load while the
  // current one computes (the TPU's double-buffered weight tile).
  bool double_buffered = true;
  std::vector<MacMode> mac_modes;  // at least one

  // The mode for (a, b) or nullptr if the array cannot run that pair.
  // uint8 operands use the int8 mode (8-bit MACs take signed or unsigned operands, as TPU v1's do).
  const MacMode* find_mode(Dtype a, Dtype b) const {
    auto mode_type = [](Dtype t) { return t == Dtype::kUint8 ? Dtype::kInt8 : t; };
    for (const MacMode& m : mac_modes) {
      if (m.a == mode_type(a) && m.b == mode_type(b)) return &m;
    }
    return nullptr;
  }
  // The pairs the array has, for errors that refuse one: "bf16 x bf16, int8 x int8".
  std::string mode_names() const {
    std::string names;
    for (const MacMode& m : mac_modes) {
      names += (names.empty() ? "" : ", ") + std::string(dtype_name(m.a)) + " x " + std::string(dtype_name(m.b));
    }
    return names;
  }
  // The mode peaks are quoted at: int8 x int8 where the array has it, else its first mode.
  const MacMode& reference_mode() const {
    const MacMode* m = find_mode(Dtype::kInt8, Dtype::kInt8);
    return m ? *m : mac_modes.front();
  }
};

}  // namespace tessera
