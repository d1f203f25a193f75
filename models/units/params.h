#pragma once
// Parameters of the execution units: ArchConfig::vector_unit and controller.
// sim/config/arch_config.cpp fills them from YAML and validates every field.
#include <cstdint>

namespace tessera {

struct VectorUnitConfig {
  int64_t lanes = 0;                    // elements per cycle for element-wise work
  int64_t pipeline_latency_cycles = 0;  // fill latency per instruction
};

struct ControllerConfig {
  int64_t issue_cycles = 1;   // cycles to decode and issue one instruction
  int64_t queue_depth = 8;    // per-unit instruction queue depth
};

}  // namespace tessera
