// The TPU paper's Table 3 from Tessera's counters (issue 16 item 2): the array's cycles split
// into streaming and exposed drain, PCIe into input and output, useful and unused PE-cycles
// of the streaming cycles, and report.json's `table3` rows 1-9, hand-derived on a 4x4 array.
// Each test simulates once (one process per test).
#include <gtest/gtest.h>

#include <string>

#include "models/units/activity.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/engine/engine.h"
#include "sim/report/report.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using nlohmann::ordered_json;
using tessera::test_support::TinyArch;

namespace {

// x[3 x 4] * W[4 x 2]: one partial tile (m=3, k=4, n=2) on the 4x4 tiny array (1 GHz).
const char* kFc = R"(
name: partial
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 2}]
)";

struct Sim {
  ArchConfig arch;
  graph::Graph graph;
  compiler::Program program;
  engine::RunStats stats;
};

Sim run(const TinyArch& t) {
  Sim r{t.build(), graph::parse_graph_yaml(YamlNode::load_string(kFc, "g.yaml")), {}, {}};
  r.program = compiler::compile(r.graph, r.arch);
  r.stats = engine::simulate(r.arch, r.program);
  return r;
}

}  // namespace

// ws, hand-derived (as tests/sim/engine/test_engine.cpp's single tile, with n = 2):
//  [0, 3)   read_host 12 B (36 wire B at 15.75 B/ns); the matmul waits for it: pcie, input
//  weights (8 B at 1000 B/ns) ready at 1, shift k = 4 cycles [1, 5): [3, 5) exposed
//  [5, 8)   stream m = 3 rows: array streaming
//  [8, 13)  drain R + n - 1 = 5 with nothing behind it: array_active, exposed drain
//  [13, 15) activate 6 values on 4 lanes: non_matrix
//  [15, 17) write_host 6 B (30 wire B): pcie, output
// The tile holds k x n = 8 of the 16 PEs for its 3 streaming cycles: 24 useful PE-cycles
// (its 24 MACs) and 24 unused.
TEST(Table3, WsPartialTileHandDerived) {
  const Sim r = run(TinyArch{});
  const engine::RunStats& s = r.stats;
  ASSERT_EQ(s.total_cycles, 17);
  EXPECT_EQ(s.cycles["array_active"], 8);
  EXPECT_EQ(s.cycles.array_stream(), 3);
  EXPECT_EQ(s.cycles["array_drain"], 5);
  EXPECT_EQ(s.cycles["weight_shift"], 2);
  EXPECT_EQ(s.cycles["weight_stall"], 0);
  EXPECT_EQ(s.cycles["non_matrix"], 2);
  EXPECT_EQ(s.cycles["pcie"], 5);
  EXPECT_EQ(s.cycles["pcie_input"], 3);
  EXPECT_EQ(s.cycles.pcie_output(), 2);
  EXPECT_EQ(s.cycles.total(), 17);  // the parts are not counted twice
  // The streaming part is the matrix unit's own matmul cycles.
  EXPECT_EQ(s.cycles.array_stream(), s.counter("tessera.matrix_unit.matmul_cycles"));
  EXPECT_EQ(s.counter("tessera.matrix_unit.useful_pe_cycles"), 24);
  EXPECT_EQ(s.counter("tessera.matrix_unit.unused_pe_cycles"), 24);
  // The link's busy cycles by direction: 3 in, 2 out.
  EXPECT_EQ(s.counter("tessera.pcie.busy_cycles_to_device"), 3);
  EXPECT_EQ(s.counter("tessera.pcie.busy_cycles_to_host"), 2);
  EXPECT_EQ(s.counter("tessera.pcie.busy_cycles"), 5);

  // Layers plus host I/O sum to the run, parts included: the input wait is the matmul's
  // (layer fc), the output transfer belongs to no layer.
  engine::CycleBreakdown sum = s.host_io;
  for (const auto& l : s.layers) sum += l.cycles;
  EXPECT_EQ(sum.total(), 17);
  EXPECT_EQ(sum["array_drain"], 5);
  EXPECT_EQ(sum["pcie_input"], 3);
  ASSERT_EQ(s.layers.size(), 1u);
  EXPECT_EQ(s.layers[0].cycles["pcie_input"], 3);
  EXPECT_EQ(s.host_io["pcie"], 2);
  EXPECT_EQ(s.host_io["pcie_input"], 0);

  const ordered_json rep = report::build_report({r.arch, r.graph, r.program, s});
  const auto& split = rep["summary"]["cycles_split"];
  EXPECT_EQ(split["array_stream"], 3);
  EXPECT_EQ(split["array_drain"], 5);
  EXPECT_EQ(split["pcie_input"], 3);
  EXPECT_EQ(split["pcie_output"], 2);

  const auto& t = rep["table3"];
  EXPECT_EQ(t["total_cycles"], 17);
  EXPECT_EQ(t["array_pes"], 16);
  const auto& rows = t["rows"];
  ASSERT_EQ(rows.size(), 9u);
  // row, paper's label, count, value in % (count / 17 cycles, or / (16 x 17) PE-cycles)
  const struct { int row; const char* label; int64_t count; double pct; } want[] = {
      {1, "Array active cycles", 3, 100.0 * 3 / 17},
      {2, "Useful MACs in 16 matrix (% peak)", 24, 100.0 * 24 / (16 * 17)},
      {3, "Unused MACs", 24, 100.0 * 24 / (16 * 17)},
      {4, "Weight stall cycles", 0, 0},
      {5, "Weight shift cycles", 2, 100.0 * 2 / 17},
      {6, "Non-matrix cycles", 12, 100.0 * 12 / 17},  // drain 5 + activate 2 + pcie 5
      {7, "RAW stalls", 0, 0},
      {8, "Input data stalls (PCIe)", 3, 100.0 * 3 / 17},
  };
  for (const auto& w : want) {
    SCOPED_TRACE(w.row);
    const auto& row = rows[static_cast<size_t>(w.row - 1)];
    EXPECT_EQ(row["row"], w.row);
    EXPECT_EQ(row["label"], w.label);
    EXPECT_EQ(row["count"], w.count);
    EXPECT_EQ(row["unit"], "%");
    EXPECT_DOUBLE_EQ(row["value"].get<double>(), w.pct);
  }
  // Rows 1 + 4 + 5 + 6 are all the cycles; rows 2 + 3 are row 1 in PE-cycles.
  EXPECT_EQ(rows[0]["count"].get<int64_t>() + rows[3]["count"].get<int64_t>() + rows[4]["count"].get<int64_t>() +
                rows[5]["count"].get<int64_t>(),
            17);
  EXPECT_EQ(rows[1]["count"].get<int64_t>() + rows[2]["count"].get<int64_t>(), 16 * rows[0]["count"].get<int64_t>());
  // Row 9: 24 MACs = 48 ops in 17 ns: 48 / 17e-9 / 1e12 TOPS, against a 0.032 TOPS peak.
  EXPECT_EQ(rows[8]["row"], 9);
  EXPECT_EQ(rows[8]["label"], "TeraOps/sec (0.032 peak)");
  EXPECT_EQ(rows[8]["unit"], "TOPS");
  EXPECT_DOUBLE_EQ(rows[8]["value"].get<double>(), 48.0 / 17e-9 / 1e12);
  EXPECT_FALSE(rows[8].contains("count"));

  // summary.md's Table 3 view shows the rows in the paper's words.
  const std::string md = report::summary_markdown(rep);
  EXPECT_NE(md.find("## Table 3 view"), std::string::npos);
  EXPECT_NE(md.find("| 1 | Array active cycles | 17.6% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 8 | Input data stalls (PCIe) | 17.6% |"), std::string::npos) << md;
}

// The useful and unused PE-cycles follow what each dataflow holds in the array: ws k x n
// (8 PEs for m = 3 streaming cycles), os m x n (6 PEs for k = 4), is k x m (12 PEs for n = 2).
// Useful PE-cycles are the tile's 24 MACs in each; unused are 16 PEs x the streaming cycles
// less them. The weights come from a memory far too fast to matter, and rows 2 + 3 = row 1.
class Table3PeCycles : public ::testing::TestWithParam<std::string> {};

TEST_P(Table3PeCycles, UsefulAndUnusedFollowTheHeldOperand) {
  TinyArch t;
  t.dataflow = GetParam();
  const Sim r = run(t);
  const engine::RunStats& s = r.stats;
  const struct { const char* df; int64_t pes, stream; } want[] = {{"ws", 8, 3}, {"os", 6, 4}, {"is", 12, 2}};
  for (const auto& w : want) {
    if (GetParam() != w.df) continue;
    EXPECT_EQ(s.counter("tessera.matrix_unit.matmul_cycles"), w.stream);
    EXPECT_EQ(s.cycles.array_stream(), w.stream);
    EXPECT_EQ(s.counter("tessera.matrix_unit.useful_pe_cycles"), w.pes * w.stream);
    EXPECT_EQ(s.counter("tessera.matrix_unit.useful_pe_cycles"), 24);  // = the MACs at one per PE per cycle
    EXPECT_EQ(s.counter("tessera.matrix_unit.unused_pe_cycles"), (16 - w.pes) * w.stream);
  }
  EXPECT_EQ(s.cycles.total(), s.total_cycles);
  EXPECT_EQ(s.cycles["pcie_input"] + s.cycles.pcie_output(), s.cycles["pcie"]);
}

INSTANTIATE_TEST_SUITE_P(Dataflows, Table3PeCycles, ::testing::Values("ws", "os", "is"));
