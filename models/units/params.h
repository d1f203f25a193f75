#pragma once
// Parameters of the execution units: ArchConfig::vector_unit and controller.
// sim/config/arch_config.cpp fills them from YAML and validates every field.
#include <cstdint>

namespace tessera {

struct VectorUnitConfig {
  int64_t lanes = 0;                    // elements per cycle for element-wise work
  int64_t sublanes = 1;                 // rows of lanes working in parallel (TPU v2+: 8 sublanes of 128 lanes)
  int64_t lane_bytes = 1;               // bytes one lane handles per cycle (TPU v1: 8-bit lanes; TPU v2+: 32-bit)
  int64_t pipeline_latency_cycles = 0;  // fill latency per instruction
  // Bytes of element-wise data per cycle, and accumulator values drained per cycle.
  int64_t bytes_per_cycle() const { return lanes * sublanes * lane_bytes; }
  int64_t values_per_cycle() const { return lanes * sublanes; }
};

struct ControllerConfig {
  int64_t issue_cycles = 1;   // cycles to decode and issue one instruction
  int64_t queue_depth = 8;    // per-unit instruction queue depth
  // Fixed time of one program (kernel launch, descriptor setup) before its first
  // instruction issues; 0 on TPU v1, whose host streams instructions into a running chip.
  double launch_overhead_ns = 0;
};

// Each core's DMA engines between device memory and its scratchpad (dma_read / dma_write).
struct DmaConfig {
  int64_t engines = 1;     // engines per core; the compiler spreads transfers over them
  double latency_ns = 0;   // per transfer: descriptor processing and first-byte latency
  // Bytes one engine moves per second, 1 GB = 1e9 B; 0: as fast as device memory serves it.
  double bandwidth_gb_per_s = 0;
};

}  // namespace tessera
