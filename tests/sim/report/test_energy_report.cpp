// Energy in the report, end to end on the 4x4 tiny array with every coefficient given
// (docs/energy.md): a one-tile fc by hand (MAC count x pJ/MAC + ...), the int16 x int16
// GEMM against int8 x int8, the layers' energy plus the host transfers' summing to the
// run's, and the per-layer activity from the instructions equal to the units' counters.
// One simulation per test (process).
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/report/energy_report.h"
#include "sim/report/layer_columns.h"
#include "sim/report/report.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using nlohmann::ordered_json;

namespace {

const char* const kEnergy =
    "energy:\n"
    "  technology_nm: 28\n"
    "  mac: {pj: {int8xint8: 0.2, int16xint16: 0.8}, idle_fraction: 0.25}\n"
    "  register: {pj_per_bit: 0.01, toggle_fraction: 0.5}\n"
    "  vector: {pj_per_op: {default: 1}}\n"
    "  sram:\n"
    "    unified_buffer: {read_pj_per_byte: 2, write_pj_per_byte: 3, leakage_w: 0, area_mm2: 1}\n"
    "    accumulators: {read_pj_per_byte: 0.5, write_pj_per_byte: 1, leakage_w: 0, area_mm2: 1}\n"
    "    weight_fifo: {read_pj_per_byte: 1, write_pj_per_byte: 1.5, leakage_w: 0, area_mm2: 1}\n"
    "  dram: {read_pj_per_bit: 10, activation_nj: 2, row_bytes: 1024, background_w: 0.5}\n"
    "  pcie: {pj_per_bit: 4}\n"
    "  static: {leakage_w: 3, on_w: 2}\n"
    "  host_power_w: 10\n";

ArchConfig tiny() {
  return parse_arch_config(YamlNode::load_string(test_support::TinyArch{}.yaml() + kEnergy, "tiny.yaml"));
}

struct EnergyRun {
  ArchConfig arch = tiny();
  graph::Graph graph;
  compiler::Program program;
  engine::RunStats stats;
  ordered_json report;
  explicit EnergyRun(const std::string& g) {
    graph = graph::parse_graph_yaml(YamlNode::load_string(g, "g.yaml"));
    program = compiler::compile(graph, arch);
    stats = engine::simulate(arch, program);
    report = report::build_report({arch, graph, program, stats});
  }
  double component(const char* c) const { return report["summary"]["energy_breakdown_j"][c].get<double>(); }
};

const char* const kFc = R"(
name: one
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 4, activation: relu}]
)";

}  // namespace

// x[3x4] * W[4x4] + relu, 21 cycles at 1 GHz (tests/sim/engine/test_engine.cpp derives them).
TEST(EnergyReport, OneTileFcByHand) {
  const EnergyRun r(kFc);
  ASSERT_EQ(r.stats.total_cycles, 21);
  const double t = 21e-9, pj = 1e-12;
  EXPECT_NEAR(r.component("mac"), 48 * 0.2 * pj, 1e-22);                           // 48 MACs, no idle PE
  EXPECT_NEAR(r.component("register"), (48 * 40 + 4 * 4 * 8 * 5 / 2) * 0.005 * pj, 1e-22);
  EXPECT_NEAR(r.component("unified_buffer"), ((12 + 12) * 2 + (12 + 12) * 3) * pj, 1e-22);  // matmul + write_host; activate + read_host
  EXPECT_NEAR(r.component("accumulators"), (12 * 0.5 + 12 * 1.0) * 4 * pj, 1e-22);  // 12 written, drained once
  EXPECT_NEAR(r.component("weight_fifo"), 16 * 2.5 * pj, 1e-22);
  EXPECT_NEAR(r.component("vector"), (12 + 12) * 1 * pj, 1e-22);                   // requantize + relu
  EXPECT_NEAR(r.component("dram"), 16 * 8 * 10 * pj + 16.0 / 1024 * 2e-9 + 0.5 * t, 1e-20);
  EXPECT_NEAR(r.component("pcie"), 24 * 8 * 4 * pj, 1e-22);
  EXPECT_NEAR(r.component("leakage"), 3 * t, 1e-20);
  EXPECT_NEAR(r.component("on"), 2 * t, 1e-20);
  const auto& s = r.report["summary"];
  double sum = 0;
  for (const auto& [k, v] : s["energy_breakdown_j"].items()) sum += v.get<double>();
  EXPECT_DOUBLE_EQ(s["energy_j"].get<double>(), sum);
  EXPECT_DOUBLE_EQ(s["energy_per_inference_j"].get<double>(), sum / 3);
  EXPECT_DOUBLE_EQ(s["power_w"].get<double>(), sum / t);
  EXPECT_DOUBLE_EQ(s["tops_per_w"].get<double>(), s["tops"].get<double>() / s["power_w"].get<double>());
  EXPECT_DOUBLE_EQ(s["perf_per_w"]["incremental"].get<double>(), s["inferences_per_s"].get<double>() / (sum / t));
  EXPECT_DOUBLE_EQ(s["perf_per_w"]["total"].get<double>(), s["inferences_per_s"].get<double>() / (sum / t + 10));
  // The one layer plus the batch's host transfers (outside any layer) are the whole run.
  EXPECT_NEAR(r.report["layers"][0]["energy_j"].get<double>() + s["host_io_energy_j"].get<double>(), sum, 1e-18);
  for (const auto& [k, v] : s["energy_breakdown_j"].items()) {
    EXPECT_TRUE(r.report["layers"][0]["energy_breakdown_j"].contains(k)) << k;
  }
  // What was given is not listed as defaulted; what was left out is.
  const auto& d = r.report["arch"]["energy"]["defaulted"];
  EXPECT_EQ(std::count(d.begin(), d.end(), "energy.static.on_w"), 0);
  EXPECT_EQ(std::count(d.begin(), d.end(), "energy.vdd_v"), 1);
  // layers.csv and summary.md show it.
  EXPECT_NE(report::layers_csv(r.report).find("energy_j,power_w,energy_mac_j"), std::string::npos);
  const std::string md = report::summary_markdown(r.report);
  EXPECT_NE(md.find("## Energy and area"), std::string::npos);
  EXPECT_NE(report::console_summary(r.report).find("energy: "), std::string::npos);
}

const char* const kGemm16 = R"(
name: gemm16
batch: 3
inputs: [{name: x, shape: [4], dtype: int16}]
layers: [{name: fc, op: fc, units: 4, weight_dtype: int16}]
)";
const char* const kGemm8 = R"(
name: gemm8
batch: 3
inputs: [{name: x, shape: [4], dtype: int8}]
layers: [{name: fc, op: fc, units: 4, weight_dtype: int8}]
)";

// The same 48 MACs at int16 x int16: 0.8 pJ each (four passes of the int8 MAC on the TPU),
// 16-bit operands in the registers and twice the weight bytes.
TEST(EnergyReport, Int16GemmByHand) {
  const EnergyRun r(kGemm16);
  EXPECT_NEAR(r.component("mac"), 48 * 0.8e-12, 1e-22);
  EXPECT_NEAR(r.component("register"), (48 * (16 + 32) + 4 * 4 * 16 * 5 / 2) * 0.005e-12, 1e-22);
  EXPECT_NEAR(r.component("weight_fifo"), 32 * 2.5e-12, 1e-22);
  EXPECT_EQ(r.stats.counter("tessera.matrix_unit.macs_int16xint16"), 48);
  EXPECT_EQ(r.stats.counter("tessera.matrix_unit.macs_int8xint8"), 0);
}

TEST(EnergyReport, Int8GemmByHand) {
  const EnergyRun r(kGemm8);
  EXPECT_NEAR(r.component("mac"), 48 * 0.2e-12, 1e-22);
  EXPECT_NEAR(r.component("register"), (48 * (8 + 32) + 4 * 4 * 8 * 5 / 2) * 0.005e-12, 1e-22);
  EXPECT_NEAR(r.component("weight_fifo"), 16 * 2.5e-12, 1e-22);
}

// Several layers with K and N tiling, a vector layer and a softmax: the layers' activity from
// their instructions plus the host transfers' equals what the units counted.
TEST(EnergyReport, LayerActivityMatchesTheCounters) {
  const EnergyRun r(R"(
name: mix
batch: 5
inputs: [{name: x, shape: [10]}]
layers:
  - {name: fc1, op: fc, units: 9, activation: relu}
  - {name: fc2, op: fc, units: 6, activation: sigmoid}
  - {name: sm, op: softmax}
)");
  const energy::Activity counted = report::activity_from_counters(r.stats);
  energy::Activity host;
  const auto layers = report::layer_activities(r.program, r.arch, host);
  energy::Activity sum = host;
  for (const auto& l : layers) {
    for (const auto& m : l.macs) sum.add_macs(m.a, m.b, m.useful, m.idle);
    sum.register_bits += l.register_bits;
    sum.ub_read_bytes += l.ub_read_bytes;
    sum.ub_write_bytes += l.ub_write_bytes;
    sum.accumulator_reads += l.accumulator_reads;
    sum.accumulator_writes += l.accumulator_writes;
    sum.weight_fifo_bytes += l.weight_fifo_bytes;
    for (const auto& [f, n] : l.vector_ops) sum.add_vector_ops(f, n);
    sum.dram_bytes += l.dram_bytes;
    sum.pcie_bytes += l.pcie_bytes;
  }
  auto sorted = [](energy::Activity a) {
    std::sort(a.macs.begin(), a.macs.end(), [](auto& x, auto& y) { return std::pair{x.a, x.b} < std::pair{y.a, y.b}; });
    std::sort(a.vector_ops.begin(), a.vector_ops.end());
    return a;
  };
  EXPECT_TRUE(sorted(sum) == sorted(counted));
  EXPECT_GT(counted.accumulator_reads, 0);  // K tiles accumulate
  EXPECT_GT(counted.register_bits, 0);
  // And the energies: layers plus host transfers make the run's total.
  double layer_sum = r.report["summary"]["host_io_energy_j"].get<double>();
  for (const auto& l : r.report["layers"]) layer_sum += l["energy_j"].get<double>();
  EXPECT_NEAR(layer_sum, r.report["summary"]["energy_j"].get<double>(), 1e-15);
}

// TPU v1's static terms are calibrated on the paper's idle (28 W) and busy (40 W on CNN0)
// points (configs/tpu-v1.yaml, docs/energy.md): both within 5%. The 10%-load point is a
// prediction: the paper measured 88% of busy (35.2 W); the model predicts 29.3 W (72%),
// because the sourced per-action energies already fill the whole 12 W idle-to-busy swing
// and leave the on term at 0 (docs/energy.md explains the gap). The loose bound below only
// catches drift.
TEST(EnergyReport, TpuV1CalibrationPoints) {
  const std::string src = TESSERA_SOURCE_DIR;
  const ArchConfig arch = load_arch_config(src + "/configs/tpu-v1.yaml");
  const graph::Graph graph = graph::load_graph_yaml(src + "/workloads/tpu/cnn0.yaml");
  const compiler::Program program = compiler::compile(graph, arch);
  const engine::RunStats stats = engine::simulate(arch, program);
  const ordered_json r = report::build_report({arch, graph, program, stats});
  const auto& pv = r["summary"]["power_vs_load"];
  const double idle = pv["idle_w"].get<double>(), busy = pv["busy_w"].get<double>(), p10 = pv["load_10pct_w"].get<double>();
  ::testing::Test::RecordProperty("idle_w", std::to_string(idle));
  ::testing::Test::RecordProperty("busy_w", std::to_string(busy));
  ::testing::Test::RecordProperty("load_10pct_w", std::to_string(p10));
  std::printf("TPU v1 on CNN0: idle %.2f W (paper 28), 10%% load %.2f W (paper 35.2), busy %.2f W (paper 40)\n", idle, p10,
              busy);
  EXPECT_NEAR(idle, 28.0, 0.05 * 28.0);
  EXPECT_NEAR(busy, 40.0, 0.05 * 40.0);
  EXPECT_DOUBLE_EQ(busy, r["summary"]["power_w"].get<double>());  // full load is the run's average power
  EXPECT_NEAR(p10, 35.2, 0.20 * 35.2);
  EXPECT_LT(p10 / busy, 0.88);  // reaching the paper's 88% would be a model change: update docs/energy.md
  // The floor plan: <= 331 mm^2, UB ~29%, matrix unit ~24%, accumulators ~6%.
  const double area = r["summary"]["area_mm2"].get<double>();
  const auto& ab = r["summary"]["area_breakdown_mm2"];
  EXPECT_LE(area, 331.0);
  EXPECT_NEAR(ab["unified_buffer"].get<double>() / area, 0.29, 0.01);
  EXPECT_NEAR(ab["matrix_unit"].get<double>() / area, 0.24, 0.01);
  EXPECT_NEAR(ab["accumulators"].get<double>() / area, 0.06, 0.01);
}
