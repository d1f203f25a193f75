// The energy model in closed form (docs/energy.md): the breakdown sums to the total, energy
// is linear in the counts, no activity leaves leakage + on (+ the weight memory's
// standby) x time, the power-vs-load line, and the area of a floor plan by hand.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/energy/energy.h"
#include "sim/graph/ops/registry.h"

namespace tessera {
namespace {

// Every coefficient given, at the config's own node: the numbers are used as they stand.
const char* const kArch =
    "name: e\n"
    "clock_mhz: 1000\n"
    "array: {rows: 4, cols: 4, dataflow: ws, mac_modes: [{a: int8, b: int8, rate: 1.0}, {a: int16, b: int16, rate: 0.25}]}\n"
    "unified_buffer: {capacity: 64 KiB}\n"
    "accumulators: {entries: 64}\n"
    "weight_fifo: {depth_tiles: 2}\n"
    "weight_memory: {technology: DDR3, capacity: 1 MiB, bandwidth_gb_per_s: 10}\n"
    "pcie: {generation: 3, lanes: 4}\n"
    "energy:\n"
    "  technology_nm: 28\n"
    "  mac: {pj: {int8xint8: 0.2, int16xint16: 0.8}, idle_fraction: 0.25}\n"
    "  register: {pj_per_bit: 0.01, toggle_fraction: 0.5}\n"
    "  vector: {pj_per_op: {default: 1, exp: 3}}\n"
    "  sram:\n"
    "    unified_buffer: {read_pj_per_byte: 2, write_pj_per_byte: 3, leakage_w: 0.5, area_mm2: 1}\n"
    "    accumulators: {read_pj_per_byte: 0.5, write_pj_per_byte: 1, leakage_w: 0.25, area_mm2: 0.5}\n"
    "    weight_fifo: {read_pj_per_byte: 1, write_pj_per_byte: 1.5, leakage_w: 0.125, area_mm2: 0.25}\n"
    "  dram: {read_pj_per_bit: 10, activation_nj: 2, row_bytes: 1024, background_w: 0.5}\n"
    "  pcie: {pj_per_bit: 4}\n"
    "  static: {leakage_w: 3, on_w: 2}\n"
    "  host_power_w: 10\n"
    "  area: {mac_um2: {int8xint8: 1000}, pe_overhead: 2, sram_overhead: 2, other_fraction: 0.5}\n";

ArchConfig arch() { return parse_arch_config(YamlNode::load_string(kArch, "e.yaml")); }

energy::Activity sample() {
  energy::Activity a;
  a.add_macs(Dtype::kInt8, Dtype::kInt8, 1000, 200);
  a.add_macs(Dtype::kInt16, Dtype::kInt16, 100, 0);
  a.register_bits = 40000;
  a.ub_read_bytes = 500;
  a.ub_write_bytes = 300;
  a.accumulator_reads = 50;
  a.accumulator_writes = 70;
  a.weight_fifo_bytes = 256;
  a.add_vector_ops("relu", 60);
  a.add_vector_ops("exp", 10);
  a.dram_bytes = 4096;
  a.pcie_bytes = 1000;
  return a;
}

TEST(Energy, HandDerivedComponents) {
  const ArchConfig c = arch();
  const double t = 1e-6;
  const energy::Breakdown b = energy::energy_of(c, sample(), t);
  // pJ: MACs 1000 x 0.2 + 200 idle x 0.05 + 100 x 0.8; registers 40000 x 0.01 x 0.5.
  EXPECT_NEAR(b["mac"], (1000 * 0.2 + 200 * 0.05 + 100 * 0.8) * 1e-12, 1e-24);
  EXPECT_NEAR(b["register"], 40000 * 0.005 * 1e-12, 1e-24);
  EXPECT_NEAR(b["unified_buffer"], (500 * 2 + 300 * 3) * 1e-12, 1e-24);
  EXPECT_NEAR(b["accumulators"], (50 * 0.5 + 70 * 1.0) * 4 * 1e-12, 1e-24);  // 32-bit values
  EXPECT_NEAR(b["weight_fifo"], 256 * (1 + 1.5) * 1e-12, 1e-24);
  EXPECT_NEAR(b["vector"], (60 * 1 + 10 * 3) * 1e-12, 1e-24);
  // DRAM: 4096 B x 8 x 10 pJ + 4 row activations x 2 nJ + 0.5 W x 1 us.
  EXPECT_NEAR(b["dram"], 4096 * 8 * 10e-12 + 4 * 2e-9 + 0.5e-6, 1e-18);
  EXPECT_NEAR(b["pcie"], 1000 * 8 * 4e-12, 1e-24);
  EXPECT_NEAR(b["leakage"], 3e-6, 1e-18);
  EXPECT_NEAR(b["on"], 2e-6, 1e-18);
}

TEST(Energy, BreakdownSumsToTheTotal) {
  const energy::Breakdown b = energy::energy_of(arch(), sample(), 3e-6);
  double sum = 0;
  for (std::string_view c : energy::kComponents) sum += b[c];
  EXPECT_DOUBLE_EQ(b.total(), sum);
  EXPECT_DOUBLE_EQ(b.chip(), sum - b["dram"] - b["pcie"]);
  EXPECT_DOUBLE_EQ(b.dynamic(), sum - b["leakage"] - b["on"]);
}

TEST(Energy, LinearInTheCounts) {
  const ArchConfig c = arch();
  energy::Activity twice = sample();
  twice.add_macs(Dtype::kInt8, Dtype::kInt8, 1000, 200);
  twice.add_macs(Dtype::kInt16, Dtype::kInt16, 100, 0);
  twice.register_bits *= 2;
  twice.ub_read_bytes *= 2;
  twice.ub_write_bytes *= 2;
  twice.accumulator_reads *= 2;
  twice.accumulator_writes *= 2;
  twice.weight_fifo_bytes *= 2;
  twice.add_vector_ops("relu", 60);
  twice.add_vector_ops("exp", 10);
  twice.dram_bytes *= 2;
  twice.pcie_bytes *= 2;
  const energy::Breakdown zero = energy::energy_of(c, energy::Activity{}, 5e-6);
  const energy::Breakdown one = energy::energy_of(c, sample(), 5e-6);
  const energy::Breakdown two = energy::energy_of(c, twice, 5e-6);
  for (std::string_view k : energy::kComponents) {
    EXPECT_NEAR(two[k] - zero[k], 2 * (one[k] - zero[k]), 1e-20) << k;
  }
}

TEST(Energy, NoActivityIsStaticPowerTimesTime) {
  const ArchConfig c = arch();
  const double t = 2e-3;
  const energy::Breakdown b = energy::energy_of(c, energy::Activity{}, t);
  EXPECT_NEAR(b.total(), (3 + 2 + 0.5) * t, 1e-15);  // leakage + on + the DRAM's standby
  EXPECT_NEAR(b["leakage"] + b["on"], (3 + 2) * t, 1e-15);
  for (std::string_view k : {"mac", "register", "unified_buffer", "accumulators", "weight_fifo", "vector", "pcie"}) {
    EXPECT_EQ(b[k], 0.0) << k;
  }
}

TEST(Energy, PowerAgainstLoad) {
  const ArchConfig c = arch();
  const double t = 1e-6;
  const energy::Breakdown b = energy::energy_of(c, sample(), t);
  const energy::PowerModel p = energy::power_model(c.energy, b, t);
  EXPECT_DOUBLE_EQ(p.idle_w, 3 + 0.5);           // not serving: leakage + DRAM standby
  EXPECT_DOUBLE_EQ(p.static_w, 3 + 0.5 + 2);     // serving, no work: + on
  EXPECT_NEAR(p.at_load(1.0), b.total() / t, 1e-9);  // full load: the run's average power
  EXPECT_NEAR(p.at_load(0.1) - p.static_w, 0.1 * (p.at_load(1.0) - p.static_w), 1e-9);
}

TEST(Energy, AreaOfTheFloorPlan) {
  const energy::Area a = energy::area_of(arch());
  EXPECT_DOUBLE_EQ(a.matrix_unit, 16 * 1000 * 2 / 1e6);  // 16 PEs x 1000 um^2 x overhead 2
  EXPECT_DOUBLE_EQ(a.unified_buffer, 2.0);
  EXPECT_DOUBLE_EQ(a.accumulators, 1.0);
  EXPECT_DOUBLE_EQ(a.weight_fifo, 0.5);
  EXPECT_DOUBLE_EQ(a.other, a.matrix_unit + 3.5);  // other_fraction 0.5: half the die
  EXPECT_DOUBLE_EQ(a.total(), 2 * (a.matrix_unit + 3.5));
}

// The TPU's 16-bit modes are passes of its 8-bit MAC: an int16 x int16 MAC costs four.
TEST(Energy, Int16MacsCostTheirPasses) {
  const ArchConfig tpu = load_arch_config(std::filesystem::path(TESSERA_SOURCE_DIR) / "configs" / "tpu-v1.yaml");
  energy::Activity a8, a16;
  a8.add_macs(Dtype::kInt8, Dtype::kInt8, 1 << 20, 0);
  a16.add_macs(Dtype::kInt16, Dtype::kInt16, 1 << 20, 0);
  EXPECT_NEAR(energy::energy_of(tpu, a16, 0)["mac"], 4 * energy::energy_of(tpu, a8, 0)["mac"], 1e-18);
}

// Without per-function values, a vector function is priced by its OpDef's energy class
// (Horowitz 45 nm, scaled to the config's node): softsign is div's class, fp32 multiply-add;
// requantize and gru_reset, steps of a lowering, a 32-bit multiply-add; relu6 a 32-bit add.
TEST(Energy, VectorFunctionsArePricedByTheirOpsEnergyClass) {
  std::string text = kArch;
  const std::string given = "  vector: {pj_per_op: {default: 1, exp: 3}}\n";
  text.erase(text.find(given), given.size());
  const ArchConfig c = parse_arch_config(YamlNode::load_string(text, "e.yaml"));
  const double s = c.energy.vector_builtin_scale;
  auto vector_pj = [&](std::string_view function) {
    energy::Activity a;
    a.add_vector_ops(function, 1000);
    return energy::energy_of(c, a, 0)["vector"] / 1e-12 / 1000;
  };
  EXPECT_NEAR(vector_pj("softsign"), (3.7 + 0.9) * s, 1e-9);
  EXPECT_NEAR(vector_pj("div"), (3.7 + 0.9) * s, 1e-9);
  EXPECT_NEAR(vector_pj("lstm_cell"), (3.7 + 0.9) * s, 1e-9);  // lstm's row, by its listing name
  EXPECT_NEAR(vector_pj("requantize"), (3.1 + 0.1) * s, 1e-9);
  EXPECT_NEAR(vector_pj("gru_reset"), (3.1 + 0.1) * s, 1e-9);
  EXPECT_NEAR(vector_pj("relu6"), 0.1 * s, 1e-9);
  EXPECT_NEAR(vector_pj("relu"), 0.1 * s, 1e-9);
  // No silent default: a function no OpDef row names is a bug, and so is an op without vector work.
  EXPECT_THROW(vector_pj("bogus"), std::logic_error);
  EXPECT_THROW(vector_pj("fc"), std::logic_error);
}

// Every function the activation pipeline can apply has a class.
TEST(Energy, EveryActivationFunctionHasAnEnergyClass) {
  for (auto f : {isa::ActivationFn::kRelu, isa::ActivationFn::kSigmoid, isa::ActivationFn::kTanh,
                 isa::ActivationFn::kRelu6}) {
    EXPECT_TRUE(graph::vector_function_energy_class(isa::activation_fn_name(f))) << isa::activation_fn_name(f);
  }
  EXPECT_EQ(graph::vector_function_energy_class("requantize"), EnergyClass::kMultiplyAdd32);
}

}  // namespace
}  // namespace tessera
