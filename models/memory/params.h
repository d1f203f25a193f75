#pragma once
// Parameters of the on-chip buffers and the weight memory: ArchConfig::unified_buffer,
// accumulators, weight_fifo and weight_memory.
// sim/config/arch_config.cpp fills them from YAML and validates every field.
#include <cstdint>
#include <string>

namespace tessera {

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

// How much one weight-FIFO tile fetches from weight memory.
enum class WeightFetch {
  kExact,  // the tile's real bytes (k x n): a design that packs partial tiles in weight memory
  kTile,   // a full array tile, rows x cols, padding included (TPU v1, paper Sec. 7); a held
           // (ws) padded tile also shifts all `rows` rows into the array
};

// Off-chip weight memory: a shared server; each request costs latency + bytes/bandwidth.
struct WeightMemoryConfig {
  std::string technology;  // picks the model: models/memory/technologies.h ("DDR3", "LPDDR4X", "HBM2", ...)
  uint64_t capacity_bytes = 0;
  double bandwidth_gb_per_s = 0;  // aggregate over channels, 1 GB = 1e9 bytes
  double latency_ns = 0;          // first-byte latency of a request
  int64_t channels = 1;           // a tile is interleaved over all channels
  WeightFetch fetch = WeightFetch::kExact;
};

}  // namespace tessera
