#pragma once
// The architecture-config keys the compiler reads (YAML dotted names, configs/*.yaml): a
// program depends on the workload, the batch, the precision policy and these keys only, so
// design points that differ in other keys (clock_mhz, bandwidths, latencies, energy) run
// the same program. `tessera sweep` compiles once per distinct value of these keys
// (sim/sweep/runner.h, issue 35 item 3).
//
// An entry names a key or a whole section ("array" covers array.rows, array.mac_modes.0.rate).
// Missing a key here would let points share a program that is wrong for some of them, so
// tests/sim/compiler/test_config_keys.cpp compiles with every key that is not listed changed
// and requires the identical program: a new key the compiler reads fails there, by name,
// until it is listed. Listing a key the compiler does not read only costs sharing.
#include <array>
#include <string_view>

namespace tessera::compiler {

inline constexpr std::array<std::string_view, 26> kCompilerConfigKeys = {
    "name",                                // the program names its architecture (and so do its errors)
    "array",                               // shape, dataflow, double buffering, MAC modes, unit count: the tiling
    "matrix_units",                        // the same section under its chip-template name
    "cores",                               // the work split over cores and the syncs between them
    "megacore",                            // how many cores a program runs on
    "unified_buffer.capacity",             // memory plan, spills, row tiling
    "unified_buffer.read_bytes_per_cycle", // vector-op cost estimates (grouped convs on the vector unit)
    "unified_buffer.write_bytes_per_cycle",
    "scratchpad.capacity",                 // the same keys under the chip-template name
    "scratchpad.read_bytes_per_cycle",
    "scratchpad.write_bytes_per_cycle",
    "accumulators.entries",                // the tile's rows per pass
    "weight_fifo.depth_tiles",             // prefetch distance
    "weight_memory.capacity",              // a workload's weights must fit
    "weight_memory.fetch",                 // tile or exact: the bytes a read_weights fetches
    "device_memory.capacity",              // the same keys under the chip-template name
    "device_memory.fetch",
    "residency",                           // read_host/write_host or dma_read/dma_write; read_weights from host
    "dma.engines",                         // transfers dealt to the engines
    "vector_unit.lanes",                   // vector-op cost estimates
    "vector_unit.sublanes",
    "vector_unit.lane_bytes",
    "vector_unit.pipeline_latency_cycles",
    "vector_unit.cycles_per_op",
    "vector_unit.packs_narrow_types",
    "ideal_memory",                        // free transfers change the vector-vs-array choice
};

// True when the compiler reads `key` or something inside it: `key` is a listed entry, lies
// inside one ("array.rows" in "array"), or contains one ("unified_buffer" holds
// "unified_buffer.capacity").
constexpr bool compiler_reads_config_key(std::string_view key) {
  for (std::string_view entry : kCompilerConfigKeys) {
    const std::string_view shorter = key.size() < entry.size() ? key : entry;
    const std::string_view longer = key.size() < entry.size() ? entry : key;
    if (longer.substr(0, shorter.size()) == shorter &&
        (longer.size() == shorter.size() || longer[shorter.size()] == '.')) {
      return true;
    }
  }
  return false;
}

}  // namespace tessera::compiler
