#pragma once
// Builds the SystemC accelerator from a config, runs a program on it and
// returns the statistics. SystemC allows one elaboration per process: call
// simulate() once per process (the sweep runs one process per design point).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/compiler/compiled.h"
#include "sim/config/arch_config.h"

namespace tessera::engine {

// Where the cycles went, from the array's point of view (DESIGN.md §6). Every
// cycle of the run falls in exactly one bucket, so the buckets sum to the total.
//  array_active  the array streams operands (incl. slower MAC modes), or drains its last
//                results with no matmul waiting behind them
//  (an exposed drain that the next matmul waits for is booked to what it waits for:
//   raw_stall for another unit's results, pcie for host input, weight_stall for weights)
//  weight_shift  the array waits for a stationary tile to shift in (not hidden by double buffering)
//  weight_stall  the array waits for a weight tile from weight memory (FIFO empty)
//  input_stall   unified-buffer bandwidth stretches the array's stream
//  raw_stall     the next matmul waits for results of another unit (read-after-write)
//  non_matrix    the array is idle while vector work, controller issue or other non-matrix work runs
//  pcie          the array is idle while host transfers run (or a matmul waits for host input)
// Two buckets are split further for the TPU paper's Table 3 (sim/report/tpu_paper_view.h); the
// parts are not buckets of their own, so total() does not count them:
//  array_drain   of array_active: the exposed result drain (the rest, array_stream(), is the
//                array streaming at its MAC rate: the paper's "array active cycles")
//  pcie_input    of pcie: host input (read_host transfers, and matmuls waiting for their
//                input); the rest, pcie_output(), is output written to the host (write_host)
struct CycleBreakdown {
  int64_t array_active = 0;
  int64_t weight_shift = 0;
  int64_t weight_stall = 0;
  int64_t input_stall = 0;
  int64_t raw_stall = 0;
  int64_t non_matrix = 0;
  int64_t pcie = 0;
  int64_t array_drain = 0;  // part of array_active
  int64_t pcie_input = 0;   // part of pcie
  int64_t array_stream() const { return array_active - array_drain; }
  int64_t pcie_output() const { return pcie - pcie_input; }
  int64_t total() const {
    return array_active + weight_shift + weight_stall + input_stall + raw_stall + non_matrix + pcie;
  }
  CycleBreakdown& operator+=(const CycleBreakdown& o);
};

struct LayerStats {
  int64_t first_dispatch_cycle = -1;  // first of its instructions leaves the controller
  int64_t last_finish_cycle = -1;     // last of its instructions finishes
  CycleBreakdown cycles;              // the run's cycles attributed to this layer
  int64_t instructions = 0;
};

// One unit's busy intervals for timeline traces (cycles of the core clock).
struct TraceEvent {
  int64_t begin_cycle = 0;
  int64_t end_cycle = 0;
  std::string name;      // what the unit did: "matmul", "weight_stall", "read_host", ...
  int32_t layer = -1;    // index into Program::layers, -1 for none
  int32_t instruction = -1;
};
struct UnitTrack {
  std::string unit;  // "pcie", "host_dma", "weight_memory", "weight_fifo", "array", "vector_unit", "controller"
  std::vector<TraceEvent> events;
};

// One module counter, as registered by the module that produces it (models/common/stats.h).
struct Counter {
  std::string path;  // "tessera.matrix_unit.macs"
  std::string unit;  // "cycles", "bytes", "MACs", ...
  std::string description;
  int64_t value = 0;
};

// The typed fields below are read from `counters` by path, so report keys stay stable;
// `counters` holds every module counter, a new one included, with no engine change.
struct RunStats {
  double clock_mhz = 0;
  int64_t total_cycles = 0;
  CycleBreakdown cycles;
  std::vector<LayerStats> layers;  // parallel to Program::layers
  CycleBreakdown host_io;          // cycles attributed to host transfers outside any layer
  int64_t macs = 0;
  uint64_t weight_memory_bytes = 0;
  uint64_t device_memory_bytes_written = 0;  // dma_write: outputs and spills to device memory
  uint64_t pcie_bytes_to_device = 0;
  uint64_t pcie_bytes_to_host = 0;
  int64_t array_busy_cycles = 0;      // cycles the array streamed (active + input stall)
  int64_t array_stream_cycles = 0;    // cycles the array streamed at its MAC rate (no input stall, no drain)
  int64_t weight_memory_busy_cycles = 0;
  int64_t pcie_busy_cycles = 0;
  int64_t vector_busy_cycles = 0;
  int64_t weight_fifo_full_cycles = 0;  // the fetcher waited for a free FIFO slot
  int64_t instructions = 0;
  std::vector<UnitTrack> tracks;  // per-unit timelines, for --trace (SimulateOptions::tracks; empty otherwise)
  std::vector<Counter> counters;  // every module's counters, depth first in construction order
  // The counter at `path`; throws std::logic_error if no module registered it.
  int64_t counter(std::string_view path) const;
  // The sum of counter `name` over every module of a kind ("matrix_unit": every matrix unit
  // of every core).
  int64_t counter_sum(std::string_view kind, std::string_view name) const;
  double total_seconds() const { return static_cast<double>(total_cycles) / (clock_mhz * 1e6); }
};

struct SimulateOptions {
  // Fill RunStats::tracks, every unit's busy intervals (for --trace). Without it only the
  // logs the cycle breakdown reads keep their intervals; the counters are running totals.
  bool tracks = false;
  // Without tracks, the cycle breakdown is classified as the run goes, each time the
  // controller has issued this many more instructions (the logs hold the intervals since).
  uint32_t breakdown_every_instructions = 64;
  // Attribute every cycle to a cause and a layer (RunStats::cycles, host_io, each layer's
  // cycles). Without it those stay zero and the logs the breakdown reads keep no intervals:
  // for a caller that reads none of them (a sweep point whose metrics read only such summary
  // keys as latency and TOPS, report::ReportParts::cycle_breakdown; issue 35, ~4 % of a point).
  // Ignored with tracks.
  bool cycle_breakdown = true;
};

RunStats simulate(const ArchConfig& arch, const compiler::Program& program, const SimulateOptions& options = {});

}  // namespace tessera::engine
