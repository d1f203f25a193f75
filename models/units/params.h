#pragma once
// Parameters of the execution units: ArchConfig::vector_unit and controller.
// sim/config/arch_config.cpp fills them from YAML and validates every field.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "sim/common/vector_class.h"

namespace tessera {

struct VectorUnitConfig {
  int64_t lanes = 0;                    // elements per cycle for element-wise work
  int64_t sublanes = 1;                 // rows of lanes working in parallel (TPU v2+: 8 sublanes of 128 lanes)
  int64_t lane_bytes = 1;               // bytes one lane handles per cycle (TPU v1: 8-bit lanes; TPU v2+: 32-bit)
  int64_t pipeline_latency_cycles = 0;  // fill latency per instruction
  // Cycles one element operation of each VectorClass takes on a lane, relative to lane_bytes
  // of data per cycle (1: an arithmetic op's rate; 4: a quarter of it).
  std::array<double, kAllVectorClasses.size()> cycles_per_op{1.0, 1.0, 1.0};
  // Narrower elements than a lane share it (four int8 in a 32-bit lane); false: every
  // element takes a whole lane, as on a vector unit without packed narrow types.
  bool packs_narrow_types = true;
  // Bytes of element-wise data per cycle, and accumulator values drained per cycle.
  int64_t bytes_per_cycle() const { return lanes * sublanes * lane_bytes; }
  int64_t values_per_cycle() const { return lanes * sublanes; }
  // Cycles for `elements` element operations of class `c` on `element_bytes`-wide data,
  // before the pipeline fill.
  int64_t element_cycles(int64_t elements, int64_t element_bytes, VectorClass c) const {
    const int64_t lane_share = packs_narrow_types ? element_bytes : std::max(element_bytes, lane_bytes);
    const int64_t bytes = elements * lane_share;
    const double cost = cycles_per_op[static_cast<size_t>(c)];
    if (cost == 1.0) return (bytes + bytes_per_cycle() - 1) / bytes_per_cycle();  // exact integers
    return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * cost / static_cast<double>(bytes_per_cycle())));
  }
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
