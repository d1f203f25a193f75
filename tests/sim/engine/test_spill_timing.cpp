// Timing of spills and row tiles with hand-derived cycle counts (one simulation per
// test: ctest runs each case in its own process). Tiny arch: 1 GHz (1 cycle = 1 ns),
// PCIe Gen3 x16 at 15.75 B/ns with 24 B per TLP and no latency: a 32 B transfer is
// (32 + 24) / 15.75 = 3.6 ns -> 4 cycles. Vector unit: 4 lanes; UB ports 4 B/cycle.
#include <gtest/gtest.h>

#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/engine/engine.h"
#include "sim/report/report.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using tessera::test_support::TinyArch;

namespace {

// The workload of tests/sim/compiler/test_spills.cpp: a (32 B) is evicted for c and read back for e.
const char* kSpill = R"(
name: spill
inputs: [{name: x, shape: [32]}]
layers:
  - {name: a, op: relu}
  - {name: b, op: concat, inputs: [a, a]}
  - {name: c, op: slice, axis: 0, begin: 0, end: 48}
  - {name: d, op: slice, axis: 0, begin: 0, end: 32}
  - {name: e, op: add, inputs: [a, d]}
)";

struct SpillRun {
  compiler::Program program;
  engine::RunStats stats;
};

SpillRun run(const TinyArch& t, const std::string& graph_yaml) {
  const ArchConfig arch = t.build();
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(graph_yaml, "g.yaml"));
  SpillRun r{compiler::compile(g, arch), {}};
  r.stats = engine::simulate(arch, r.program);
  return r;
}

void expect_breakdown_sums(const engine::RunStats& s) {
  EXPECT_EQ(s.cycles.total(), s.total_cycles);
  engine::CycleBreakdown sum = s.host_io;
  for (const auto& l : s.layers) sum += l.cycles;
  EXPECT_EQ(sum.total(), s.total_cycles);
}

}  // namespace

// Without spills (256 B): read x [0, 4); a 32 elements [4, 12); b 64 [12, 28); c reads
// 64 B at 4 B/cycle [28, 44); d reads 48 B [44, 56); e reads 64 B [56, 72); write e [72, 76).
TEST(SpillTiming, WorkloadThatFitsHandDerived) {
  TinyArch t;
  t.ub_capacity = "256";
  const SpillRun r = run(t, kSpill);
  EXPECT_EQ(r.program.spill_bytes_out + r.program.spill_bytes_in, 0u);
  EXPECT_EQ(r.stats.total_cycles, 76);
  EXPECT_EQ(r.stats.pcie_busy_cycles, 8);
  EXPECT_EQ(r.stats.cycles["pcie"], 8);
  expect_breakdown_sums(r.stats);
}

// With spills (128 B): the same, plus a's write-back [12, 16), which runs under b (it
// waits only for a's producer) but which c waits for (c reuses a's bytes); and a's
// read-back, which reuses c's bytes and so waits for d to finish reading c: [56, 60),
// exposed; e [60, 76); write e [76, 80). The link carries 2 x 4 more cycles; the run is
// 4 cycles longer; both spill transfers are charged to the layer that needed them.
TEST(SpillTiming, SpilledWorkloadHandDerived) {
  TinyArch t;
  t.ub_capacity = "128";
  const SpillRun r = run(t, kSpill);
  EXPECT_EQ(r.program.spill_bytes_out, 32u);
  EXPECT_EQ(r.program.spill_bytes_in, 32u);
  EXPECT_EQ(r.stats.total_cycles, 76 + 4);
  EXPECT_EQ(r.stats.pcie_busy_cycles, 8 + 2 * 4);
  EXPECT_EQ(r.stats.pcie_bytes_to_device, 32u + 32u);  // x, then a read back
  EXPECT_EQ(r.stats.pcie_bytes_to_host, 32u + 32u);    // a written back, then e
  EXPECT_EQ(r.stats.cycles["pcie"], 16);
  EXPECT_EQ(r.stats.layers[2].cycles["pcie"], 4);  // c: a's write-back (the link outranks the vector unit)
  EXPECT_EQ(r.stats.layers[4].cycles["pcie"], 4);  // e: a's read-back
  EXPECT_EQ(r.stats.host_io["pcie"], 8);           // x and e
  expect_breakdown_sums(r.stats);
}

// A row-tiled fc (tests/sim/compiler/test_spills.cpp): x and y stream in tiles of 6, 6
// and 4 rows. Every byte crosses the link once, and the run cannot be shorter than the
// link's busy time.
TEST(SpillTiming, RowTiledLayerRuns) {
  TinyArch t;
  t.ub_capacity = "192";
  const SpillRun r = run(t, R"(
name: tall
inputs: [{name: x, shape: [16, 8]}]
layers: [{name: f, op: fc, units: 8}]
)");
  EXPECT_EQ(r.program.layers[0].row_tiles, 3);
  EXPECT_EQ(r.stats.pcie_bytes_to_device, 128u);
  EXPECT_EQ(r.stats.pcie_bytes_to_host, 128u);
  EXPECT_EQ(r.stats.macs, 16 * 8 * 8);
  // 48 B and 32 B transfers: (48 + 24) / 15.75 -> 5 cycles, (32 + 24) / 15.75 -> 4; 2 x (5 + 5 + 4).
  EXPECT_EQ(r.stats.pcie_busy_cycles, 28);
  EXPECT_GE(r.stats.total_cycles, 28);
  expect_breakdown_sums(r.stats);
}

// summary.macs counts every layer's MACs: the depthwise conv that the compiler maps to
// the vector unit (faster than the 4x4 array here) as well as the array's.
TEST(SpillTiming, SummaryMacsIncludeVectorUnitLayers) {
  TinyArch t;
  t.ub_capacity = "64 KiB";
  const ArchConfig arch = t.build();
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(R"(
name: dw
inputs: [{name: x, shape: [8, 8, 16]}]
layers:
  - {name: dw, op: conv2d, filters: 16, kernel: 3, padding: same, groups: 16}
  - {name: pw, op: conv2d, filters: 8, kernel: 1}
)",
                                                                        "g.yaml"));
  const compiler::Program p = compiler::compile(g, arch);
  ASSERT_EQ(p.layers[0].mapping, "vector");
  const engine::RunStats s = engine::simulate(arch, p);
  const auto rep = report::build_report(report::RunRecord{arch, g, p, s});
  EXPECT_EQ(s.macs, 8 * 8 * 16 * 8);  // the array's: pw only
  EXPECT_EQ(rep["summary"]["macs"].get<int64_t>(), 8 * 8 * 16 * 9 + 8 * 8 * 16 * 8);
  EXPECT_EQ(rep["summary"]["array_macs"].get<int64_t>(), 8 * 8 * 16 * 8);
  EXPECT_EQ(rep["workload"]["macs"].get<int64_t>(), rep["summary"]["macs"].get<int64_t>());
  EXPECT_DOUBLE_EQ(rep["summary"]["ops"].get<double>(), 2.0 * rep["summary"]["macs"].get<double>());
  EXPECT_EQ(rep["summary"]["spill_bytes"].get<uint64_t>(), 0u);
}
