// Chrome/Perfetto traces of real (tiny) runs: well-formed JSON, one named thread per
// unit, complete events in microseconds, and array busy time that matches the cycle
// breakdown exactly. Each test simulates once (ctest runs each case in its own process).
//
// What the array track holds (models/units/matrix_unit.cpp MatrixUnit::run, engine.cpp
// collect_tracks): per matmul tile the intervals [requested, popped) "weight_stall",
// [popped, stream_start) "weight_shift", [stream_start, active_end) "matmul" and
// [active_end, stream_end) "input_stall"; the drain [stream_end, done) is not on it.
// engine.cpp sets array_busy_cycles = total(kActive) + total(kInputStall) and
// array_stream_cycles = total(kActive), and its
// classify() puts a cycle covered by an array interval in the bucket of that interval's
// kind, and a drain cycle not covered by any array interval in array_active. Hence:
//   sum(matmul)       == array_stream_cycles == array_busy_cycles - cycles.input_stall
//   sum(input_stall)  == cycles.input_stall,  sum(weight_shift) == cycles.weight_shift
//   cycles.array_active - sum(matmul) == the exposed drain (>= 0)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>

#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/engine/engine.h"
#include "sim/report/trace.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using nlohmann::json;

namespace {

struct TracedRun {
  ArchConfig arch;
  compiler::Program program;
  engine::RunStats stats;
  std::string text;
  json trace;
};

TracedRun run(const test_support::TinyArch& t, const std::string& graph_yaml) {
  TracedRun r;
  r.arch = t.build();
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(graph_yaml, "g.yaml"));
  r.program = compiler::compile(g, r.arch);
  r.stats = engine::simulate(r.arch, r.program, {.tracks = true});
  r.text = report::chrome_trace_json(r.stats, r.program, r.arch.clock_mhz);
  r.trace = json::parse(r.text);  // throws on malformed JSON
  return r;
}

struct Sums {
  std::map<std::string, std::map<std::string, int64_t>> cycles;  // unit -> event name -> cycles
  std::map<std::string, int> tids;                                // unit -> tid
};

// Checks every event's shape and sums the complete events per unit and name.
Sums check_and_sum(const TracedRun& r) {
  Sums out;
  EXPECT_TRUE(r.trace.is_object());
  EXPECT_EQ(r.trace["displayTimeUnit"], "ns");
  EXPECT_EQ(r.trace["otherData"]["total_cycles"], r.stats.total_cycles);
  const json& events = r.trace["traceEvents"];
  EXPECT_TRUE(events.is_array());
  std::map<int, std::string> unit_of;
  for (const json& e : events) {
    if (e["ph"] == "M" && e["name"] == "thread_name") unit_of[e["tid"].get<int>()] = e["args"]["name"];
  }
  for (const auto& [tid, unit] : unit_of) out.tids[unit] = tid;
  for (const json& e : events) {
    EXPECT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid") && e.contains("name")) << e.dump();
    if (e.value("ph", "") != "X") continue;
    EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
    const int64_t b = e["args"]["begin_cycle"], end = e["args"]["end_cycle"];
    EXPECT_GT(end, b) << e.dump();
    // ts and dur are microseconds: cycles / clock_mhz.
    EXPECT_NEAR(e["ts"].get<double>(), static_cast<double>(b) / r.arch.clock_mhz, 1e-9);
    EXPECT_NEAR(e["dur"].get<double>(), static_cast<double>(end - b) / r.arch.clock_mhz, 1e-9);
    EXPECT_TRUE(e["args"].contains("instruction"));
    EXPECT_TRUE(e["args"].contains("layer"));
    const std::string unit = unit_of.at(e["tid"].get<int>());
    EXPECT_EQ(e["cat"], unit);
    out.cycles[unit][e["name"].get<std::string>()] += end - b;
  }
  return out;
}

}  // namespace

TEST(Trace, SingleTileFcMatchesTheBreakdownExactly) {
  // The engine test's hand-derived case: x[3x4] * W[4x4] on a 4x4 ws array at 1 GHz.
  // Stream 3 cycles, drain R + n - 1 = 7 cycles (fully exposed: one tile), array_active 10.
  const TracedRun r = run(test_support::TinyArch{}, R"(
name: one
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 4, activation: relu}]
)");
  const Sums s = check_and_sum(r);
  for (const char* unit : {"controller", "host_dma", "pcie", "weight_memory", "weight_fifo", "array", "vector_unit", "layers"}) {
    EXPECT_TRUE(s.tids.count(unit)) << unit;
  }
  const auto& array = s.cycles.at("array");
  EXPECT_EQ(array.at("matmul"), 3);
  EXPECT_EQ(array.at("matmul"), r.stats.array_stream_cycles);
  EXPECT_EQ(array.at("matmul"), r.stats.array_busy_cycles - r.stats.cycles["input_stall"]);
  EXPECT_EQ(r.stats.cycles["array_active"] - array.at("matmul"), 4 + 4 - 1);  // the exposed drain
  EXPECT_EQ(array.at("weight_shift"), r.stats.cycles["weight_shift"]);
  EXPECT_FALSE(array.count("input_stall"));
  EXPECT_EQ(r.stats.cycles["input_stall"], 0);
  // Host transfers: read_host 3 cycles + write_host 3 cycles on the DMA track.
  EXPECT_EQ(s.cycles.at("host_dma").at("read_host"), 3);
  EXPECT_EQ(s.cycles.at("host_dma").at("write_host"), 3);
  EXPECT_EQ(s.cycles.at("vector_unit").at("activate"), 3);

  // The layer span: one async begin/end pair named after the layer.
  int begins = 0, ends = 0;
  for (const json& e : r.trace["traceEvents"]) {
    if (e["ph"] == "b") {
      ++begins;
      EXPECT_EQ(e["name"], "fc");
    }
    if (e["ph"] == "e") ++ends;
  }
  EXPECT_EQ(begins, 1);
  EXPECT_EQ(ends, 1);
  // Deterministic: the same stats give the same bytes.
  EXPECT_EQ(report::chrome_trace_json(r.stats, r.program, r.arch.clock_mhz), r.text);
}

TEST(Trace, MultiTileRunWithInputStalls) {
  // 4x4 array whose unified buffer feeds 1 byte per cycle: each 8 x 4 tile streams its 32 B
  // in 32 cycles instead of 8, so the array track has input_stall intervals; 2 K tiles x 2 N tiles.
  test_support::TinyArch t;
  t.ub_read_bytes_per_cycle = 1;
  const TracedRun r = run(t, R"(
name: stalls
batch: 8
inputs: [{name: x, shape: [8]}]
layers:
  - {name: fc1, op: fc, units: 8, activation: relu}
  - {name: act, op: tanh}
)");
  const Sums s = check_and_sum(r);
  const auto& array = s.cycles.at("array");
  ASSERT_TRUE(array.count("input_stall"));
  EXPECT_GT(array.at("input_stall"), 0);
  EXPECT_EQ(array.at("input_stall"), r.stats.cycles["input_stall"]);
  EXPECT_EQ(array.at("matmul"), r.stats.array_stream_cycles);
  EXPECT_EQ(array.at("matmul"), r.stats.array_busy_cycles - r.stats.cycles["input_stall"]);
  EXPECT_EQ(array.at("matmul") + array.at("input_stall"), r.stats.array_busy_cycles);
  EXPECT_EQ(array.count("weight_shift") ? array.at("weight_shift") : 0, r.stats.cycles["weight_shift"]);
  // Exposed drain: non-negative and at most one full drain (R + C - 1) per tile.
  const int64_t exposed = r.stats.cycles["array_active"] - array.at("matmul");
  EXPECT_GE(exposed, 0);
  EXPECT_LE(exposed, 4 * (4 + 4 - 1));
  // The pcie and weight-memory servers' busy time is on their tracks.
  int64_t pcie = 0;
  for (const auto& [name, c] : s.cycles.at("pcie")) pcie += c;
  EXPECT_EQ(pcie, r.stats.pcie_busy_cycles);
  int64_t wm = 0;
  for (const auto& [name, c] : s.cycles.at("weight_memory")) wm += c;
  EXPECT_EQ(wm, r.stats.weight_memory_busy_cycles);
  EXPECT_GT(s.cycles.at("vector_unit").at("vector"), 0);  // the tanh layer
}
