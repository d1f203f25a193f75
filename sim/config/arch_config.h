#pragma once
// The accelerator description: YAML (configs/*.yaml) -> validated structs.
// Every field is checked at load time; an error names file, line and key path.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "models/array/dataflow.h"
#include "sim/common/dtype.h"

namespace tessera {

class YamlNode;

// MAC throughput for one operand-precision pair, as a fraction of the int8 x int8 peak.
struct MacMode {
  Dtype a = Dtype::kInt8;  // activation (streamed) operand
  Dtype b = Dtype::kInt8;  // weight operand
  double rate = 1.0;       // 1.0 = one MAC per PE per cycle; TPU v1 int16 x int16 = 0.25
};

struct ArrayConfig {
  int64_t rows = 0;  // PEs along the reduction (K) dimension for ws/is, along M for os
  int64_t cols = 0;
  array::Dataflow dataflow = array::Dataflow::kWeightStationary;
  // A shadow copy of the stationary operand lets the next tile load while the
  // current one computes (the TPU's double-buffered weight tile).
  bool double_buffered = true;
  std::vector<MacMode> mac_modes;  // always contains int8 x int8

  // The mode for (a, b) or nullptr if the array cannot run that pair.
  const MacMode* find_mode(Dtype a, Dtype b) const;
};

struct UnifiedBufferConfig {
  uint64_t capacity_bytes = 0;
  int64_t read_bytes_per_cycle = 0;   // port feeding the array and the vector unit
  int64_t write_bytes_per_cycle = 0;  // port written by the vector unit and host DMA
};

// Each accumulator entry holds one row of `array.cols` partial sums.
struct AccumulatorConfig {
  int64_t entries = 0;
  int64_t width_bits = 32;
};

// Bounded queue of weight tiles between weight memory and the array; a tile is
// rows x cols weights. Depth in tiles stalls the producer when full.
struct WeightFifoConfig {
  int64_t depth_tiles = 0;
};

// Off-chip weight memory: a shared server; each request costs latency + bytes/bandwidth.
struct WeightMemoryConfig {
  std::string technology;  // picks the model: models/memory/technologies.h ("DDR3", "LPDDR4X", "HBM2", ...)
  uint64_t capacity_bytes = 0;
  double bandwidth_gb_per_s = 0;  // aggregate over channels, 1 GB = 1e9 bytes
  double latency_ns = 0;          // first-byte latency of a request
  int64_t channels = 1;           // a tile is interleaved over all channels
};

struct PcieConfig {
  int64_t generation = 3;          // 1..6
  int64_t lanes = 16;              // 1, 2, 4, 8, 16, 32
  double transfer_rate_gt_per_s = 0;  // per lane, from the generation
  std::string encoding;            // "8b10b" | "128b130b" | "flit" (default from the generation)
  double encoding_efficiency = 0;  // 8b/10b = 0.8 (gen 1-2), 128b/130b (gen 3-5), FLIT 242/256 (gen 6)
  int64_t max_payload_bytes = 256; // data bytes per TLP
  int64_t tlp_overhead_bytes = 24; // header + sequence + LCRC + framing per TLP
  double latency_ns = 0;           // one-way latency of a DMA transfer

  // Usable link rate after line encoding, in bytes per second.
  double link_bytes_per_s() const;
};

struct VectorUnitConfig {
  int64_t lanes = 0;                    // elements per cycle for element-wise work
  int64_t pipeline_latency_cycles = 0;  // fill latency per instruction
};

struct ControllerConfig {
  int64_t issue_cycles = 1;   // cycles to decode and issue one instruction
  int64_t queue_depth = 8;    // per-unit instruction queue depth
};

struct ArchConfig {
  std::string name;
  std::string source;  // the file it came from
  double clock_mhz = 0;
  ArrayConfig array;
  UnifiedBufferConfig unified_buffer;
  AccumulatorConfig accumulators;
  WeightFifoConfig weight_fifo;
  WeightMemoryConfig weight_memory;
  PcieConfig pcie;
  VectorUnitConfig vector_unit;
  ControllerConfig controller;

  double clock_hz() const { return clock_mhz * 1e6; }
  // Peak tera-ops per second (2 ops per MAC) at a precision pair:
  // rows * cols * mode rate * 2 * clock_hz / 1e12. Throws InputError if the array has no such mode.
  double peak_tops(Dtype a = Dtype::kInt8, Dtype b = Dtype::kInt8) const;
};

// Loads and validates; throws InputError ("file:line:col: key.path: what is wrong").
ArchConfig load_arch_config(const std::filesystem::path& path);
ArchConfig parse_arch_config(const YamlNode& root);

}  // namespace tessera
