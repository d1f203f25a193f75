#pragma once
// Builds the SystemC accelerator from a config, runs a program on it and
// returns the statistics. SystemC allows one elaboration per process: call
// simulate() once per process (the sweep runs one process per design point).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/compiler/compiled.h"
#include "sim/config/arch_config.h"

namespace tessera::engine {

// Where the cycles went, from the array's point of view (DESIGN.md §6). Every cycle of the
// run falls in exactly one bucket, so the buckets sum to the total. The buckets are the rows
// of kBuckets below: a new bucket is its row there plus, where no log tells its cycles apart
// yet, the kind of interval its unit logs for them (docs/architecture.md, "A breakdown bucket").

// The unit logs the breakdown reads, in the order it asks them about a cycle: the first
// source whose interval there has a bucket (for its kind) books the cycle, and its layer.
enum class BucketSource : uint8_t {
  kArray,           // a matrix unit's log, by kind (MatrixUnit::kKindNames); of several units, the busiest state
  kMatmulWait,      // the controller's log while the next matmul waits to issue, by kind (Controller::kKindNames)
  kDrain,           // a matrix unit's drain log: results leave the array with no matmul waiting behind them
  kPcie,            // the PCIe link's log, by direction (PcieLink::kKindNames; a transfer of no instruction: "to_device")
  kDeviceDma,       // a device DMA engine's log
  kVector,          // the vector unit's log
  kControllerHead,  // the controller's log, by the opcode of its head instruction (isa::opcode_name)
  kIdle,            // no log has an interval
  kNone,            // an unused producer slot
};

// One way a bucket gets cycles: a source and, for a source that tells kinds apart, the kind
// name ("" for any kind; a named kind wins over "").
struct BucketProducer {
  BucketSource source = BucketSource::kNone;
  const char* kind = "";
};

struct BucketDef {
  const char* name;         // the report key: cycles.<name>, layers.csv cycles_<name>
  const char* description;  // the layer column's description
  // "": a bucket (the buckets sum to the total). Else the bucket this is part of: a part for
  // the TPU paper's Table 3 (sim/report/tpu_paper_view.h), booked on top of its bucket.
  const char* part_of;
  std::array<BucketProducer, 4> producers;
};

// In report order. An exposed drain that the next matmul waits for is booked to what it
// waits for (the matmul-wait producers), not to array_active.
inline constexpr BucketDef kBuckets[] = {
    {"array_active", "the array computes", "",  // streams operands (incl. slower MAC modes), or drains its last results
     {{{BucketSource::kArray, "matmul"}, {BucketSource::kDrain}}}},
    {"weight_shift", "weights shift into the array", "",  // a stationary tile shifts in, not hidden by double buffering
     {{{BucketSource::kArray, "weight_shift"}}}},
    {"weight_stall", "waiting for weights from weight memory", "",  // FIFO empty; device-memory waits too
     {{{BucketSource::kArray, "weight_stall"}, {BucketSource::kMatmulWait, "wait_weights"},
       {BucketSource::kDeviceDma}, {BucketSource::kControllerHead, "read_weights"}}}},
    {"input_stall", "waiting for activations from the unified buffer", "",  // UB bandwidth stretches the stream
     {{{BucketSource::kArray, "input_stall"}}}},
    {"raw_stall", "waiting for an earlier instruction's result", "",  // the next matmul waits for another unit
     {{{BucketSource::kMatmulWait, "wait_raw"}}}},
    {"non_matrix", "the vector unit and other non-matrix work", "",  // vector work, controller issue, launch
     {{{BucketSource::kVector}, {BucketSource::kControllerHead}, {BucketSource::kIdle}}}},
    {"pcie", "host transfers and spills over PCIe", "",  // host transfers, a matmul waiting for host input or host weights
     {{{BucketSource::kArray, "host_weight_stall"}, {BucketSource::kMatmulWait, "wait_host"}, {BucketSource::kPcie}}}},
    // Of array_active: the exposed drain (the rest, array_stream(), is the array streaming at
    // its MAC rate: the paper's "array active cycles").
    {"array_drain", "of array_active: results drain with no matmul waiting", "array_active",
     {{{BucketSource::kDrain}}}},
    // Of pcie: host input (read_host, matmuls waiting for their input, and for weights in host
    // memory); the rest, pcie_output(), is output written to the host (write_host).
    {"pcie_input", "of pcie: host input", "pcie",
     {{{BucketSource::kArray, "host_weight_stall"}, {BucketSource::kMatmulWait, "wait_host"},
       {BucketSource::kPcie, "to_device"}}}},
};
inline constexpr size_t kBucketCount = std::size(kBuckets);

// A bucket named in code: `breakdown["weight_stall"]`; a name not in kBuckets does not compile.
struct BucketId {
  size_t index;
  consteval BucketId(const char* name) : index(find(name)) {}  // NOLINT: implicit, from the name
  static consteval size_t find(const char* name) {
    for (size_t i = 0; i < kBucketCount; ++i) {
      if (std::string_view(kBuckets[i].name) == name) return i;
    }
    throw "engine: no cycle-breakdown bucket of this name (kBuckets)";
  }
};

// The buckets proper (not parts), in report order: the causes that sum to the total.
inline constexpr auto kCycleCauses = [] {
  constexpr size_t n = [] {
    size_t k = 0;
    for (const BucketDef& b : kBuckets) k += std::string_view(b.part_of).empty() ? 1 : 0;
    return k;
  }();
  std::array<const char*, n> out{};
  size_t k = 0;
  for (const BucketDef& b : kBuckets) {
    if (std::string_view(b.part_of).empty()) out[k++] = b.name;
  }
  return out;
}();

// Cycles per bucket and part, by index into kBuckets.
struct CycleBreakdown {
  std::array<int64_t, kBucketCount> by_bucket{};
  int64_t& operator[](BucketId b) { return by_bucket[b.index]; }
  int64_t operator[](BucketId b) const { return by_bucket[b.index]; }
  int64_t array_stream() const { return (*this)["array_active"] - (*this)["array_drain"]; }
  int64_t pcie_output() const { return (*this)["pcie"] - (*this)["pcie_input"]; }
  int64_t total() const;  // the buckets, not the parts
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
  uint64_t device_memory_bytes_written = 0;  // dma_write: outputs, spills, and copies between cores of split layers
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
