// The report's roofline: one roof per MAC mode of the array and every layer placed on
// both operational-intensity flavours of DESIGN.md section 6, against hand-derived values.
#include <gtest/gtest.h>

#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/report/report.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using nlohmann::ordered_json;

namespace {

// Tiny array: 4x4 PEs at 1 GHz -> int8 peak 16 MACs/cycle = 0.032 TOPS; weight memory
// 1000 GB/s; PCIe gen3 x16 = 16 lanes * 8 GT/s * 128/130 / 8 = 15.753846 GB/s.
constexpr double kPeakInt8 = 0.032;
constexpr double kWeightGbps = 1000.0;
constexpr double kPcieGbps = 16 * 8.0 * 128.0 / 130.0 / 8.0;

// x[8] -> fc1 (16) -> fc2 (4), batch 4: fc1 512 MACs on 128 weight bytes, fc2 256 on 64.
struct ReportRoofline : ::testing::Test {
  ArchConfig arch = test_support::TinyArch{}.build();
  graph::Graph graph = graph::parse_graph_yaml(YamlNode::load_string(R"(
name: two
batch: 4
inputs: [{name: x, shape: [8]}]
layers:
  - {name: fc1, op: fc, units: 16, activation: relu}
  - {name: fc2, op: fc, units: 4}
)", "two.yaml"));
  compiler::Program program = compiler::compile(graph, arch);
  engine::RunStats stats;

  void SetUp() override {
    // The roofline reads only byte and MAC counts and the latency: hand-made stats suffice.
    stats.clock_mhz = 1000;
    stats.total_cycles = 1000;
    stats.cycles["array_active"] = 1000;
    stats.macs = 768;
    stats.weight_memory_bytes = 192;
    stats.pcie_bytes_to_device = 32 * 1;  // 4 x 8 int8 inputs
    stats.pcie_bytes_to_host = 16;        // 4 x 4 int8 outputs
    stats.layers.resize(program.layers.size());
    stats.layers[0].cycles["array_active"] = 600;
    stats.layers[1].cycles["array_active"] = 400;
  }
};

TEST_F(ReportRoofline, OneRoofPerMacModeWithHandDerivedPeaksAndRidges) {
  ASSERT_EQ(program.layers.size(), 2u);
  const ordered_json r = report::build_report({arch, graph, program, stats});
  const auto& modes = r["roofline"]["by_precision"];
  ASSERT_EQ(modes.size(), 4u);
  const struct { const char* mode; double rate; } want[] = {
      {"int8xint8", 1.0}, {"int8xint16", 0.5}, {"int16xint8", 0.5}, {"int16xint16", 0.25}};
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(want[i].mode);
    const auto& m = modes[i];
    EXPECT_EQ(m["mode"], want[i].mode);
    EXPECT_DOUBLE_EQ(m["mac_rate"].get<double>(), want[i].rate);
    const double peak = kPeakInt8 * want[i].rate;
    EXPECT_NEAR(m["peak_tops"].get<double>(), peak, 1e-12);
    // ridge = peak / bandwidth: 0.032e12 / 1000e9 = 0.032 ops per weight byte at int8.
    EXPECT_NEAR(m["ridge_ops_per_weight_byte"].get<double>(), peak * 1e12 / (kWeightGbps * 1e9), 1e-12);
    EXPECT_NEAR(m["ridge_macs_per_weight_byte"].get<double>(), peak * 1e12 / (kWeightGbps * 1e9) / 2, 1e-12);
    EXPECT_NEAR(m["ridge_ops_per_dram_byte"].get<double>(), peak * 1e12 / ((kWeightGbps + kPcieGbps) * 1e9), 1e-12);
  }
  EXPECT_NEAR(modes[0]["ridge_ops_per_weight_byte"].get<double>(), 0.032, 1e-12);
}

TEST_F(ReportRoofline, LayersPlacedOnBothFlavours) {
  const ordered_json r = report::build_report({arch, graph, program, stats});
  const auto& layers = r["roofline"]["layers"];
  ASSERT_EQ(layers.size(), 2u);
  // fc1: 512 MACs = 1024 ops on 128 weight bytes, no spills: 8 ops per byte either way.
  EXPECT_EQ(layers[0]["name"], "fc1");
  EXPECT_EQ(layers[0]["mode"], "int8xint8");
  EXPECT_DOUBLE_EQ(layers[0]["oi_ops_per_weight_byte"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(layers[0]["oi_macs_per_weight_byte"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(layers[0]["oi_ops_per_dram_byte"].get<double>(), 8.0);
  // Far right of the 0.032 ridge: compute-bound, ceiling the int8 peak on both roofs.
  EXPECT_EQ(layers[0]["bound"], "compute");
  EXPECT_NEAR(layers[0]["attainable_tops"].get<double>(), kPeakInt8, 1e-12);
  EXPECT_NEAR(layers[0]["attainable_tops_dram"].get<double>(), kPeakInt8, 1e-12);
  // Achieved: 1024 ops in 600 ns.
  EXPECT_NEAR(layers[0]["achieved_tops"].get<double>(), 1024.0 / 600e-9 / 1e12, 1e-12);
  // fc2: 256 MACs on 64 bytes.
  EXPECT_DOUBLE_EQ(layers[1]["oi_ops_per_weight_byte"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(r["layers"][1]["oi_ops_per_dram_byte"].get<double>(), 8.0);

  // The workload point: 1536 ops over 192 weight bytes = 8; over 192 + 48 DRAM bytes = 6.4.
  EXPECT_DOUBLE_EQ(r["roofline"]["weight_memory"]["oi_ops_per_byte"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(r["roofline"]["dram"]["oi_ops_per_byte"].get<double>(), 6.4);
}

TEST_F(ReportRoofline, SixteenBitLayerRunsAgainstItsOwnPeak) {
  for (auto& l : program.layers) l.a_dtype = l.b_dtype = Dtype::kInt16;
  const ordered_json r = report::build_report({arch, graph, program, stats});
  const auto& l0 = r["roofline"]["layers"][0];
  EXPECT_EQ(l0["mode"], "int16xint16");
  EXPECT_NEAR(l0["peak_tops"].get<double>(), kPeakInt8 / 4, 1e-12);
  EXPECT_NEAR(l0["attainable_tops"].get<double>(), kPeakInt8 / 4, 1e-12);
  EXPECT_NEAR(r["summary"]["peak_tops"].get<double>(), kPeakInt8 / 4, 1e-12);
}

TEST_F(ReportRoofline, SummaryMarkdownListsEveryMode) {
  const std::string md = report::summary_markdown(report::build_report({arch, graph, program, stats}));
  EXPECT_NE(md.find("## Roofline"), std::string::npos);
  EXPECT_NE(md.find("| int8xint8 | 0.03 | 0.0 | 0.0 | 0.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| int16xint16 | 0.01 |"), std::string::npos) << md;
  EXPECT_NE(md.find("Workload: 8.0 ops per weight byte"), std::string::npos) << md;
  EXPECT_NE(md.find("6.4 ops per DRAM byte"), std::string::npos) << md;
}

// A sweep point whose metrics read no key of the cycle breakdown runs without it (issue 35):
// the summary it builds then holds every other key, with the values of the whole summary of
// the same run, and none that reads the breakdown.
TEST_F(ReportRoofline, SummaryWithoutCycleBreakdownKeepsEveryKeyThatDoesNotReadIt) {
  stats.host_io["pcie"] = 200;
  stats.host_io["pcie_input"] = 120;
  stats.cycles["pcie"] = 200;
  stats.cycles["pcie_input"] = 120;
  const ordered_json whole = report::build_report({arch, graph, program, stats});
  engine::RunStats without = stats;  // as simulated without the breakdown: its cycles all zero
  without.cycles = {};
  without.host_io = {};
  for (auto& l : without.layers) l.cycles = {};
  report::ReportParts parts{false, false, true, false, false, false, false};
  EXPECT_FALSE(parts.reads_cycle_breakdown());
  const ordered_json lean = report::build_report({arch, graph, program, without}, parts);
  ASSERT_TRUE(lean.contains("summary"));
  EXPECT_FALSE(lean.contains("layers"));
  const ordered_json& s = lean["summary"];
  for (const auto& [key, value] : whole["summary"].items()) {
    if (report::summary_key_reads_cycle_breakdown(key)) {
      EXPECT_FALSE(s.contains(key)) << key;
    } else {
      EXPECT_EQ(s.at(key), value) << key;
    }
  }
  EXPECT_EQ(s.size() + 4, whole["summary"].size());
  for (const char* key : {"cycles", "host_io_cycles", "cycles_split", "host_io_energy_j"}) {
    EXPECT_TRUE(report::summary_key_reads_cycle_breakdown(key)) << key;
  }
  // 1,000 cycles at 1 GHz; 768 MACs = 1,536 ops in 1 us = 0.001536 TOPS of a 0.032 TOPS peak.
  EXPECT_DOUBLE_EQ(s["latency_s"].get<double>(), 1e-6);
  EXPECT_NEAR(s["tops"].get<double>(), 0.001536, 1e-15);
  EXPECT_NEAR(s["utilization"].get<double>(), 0.001536 / kPeakInt8, 1e-12);
  EXPECT_TRUE(report::ReportParts{}.reads_cycle_breakdown());
}

}  // namespace
