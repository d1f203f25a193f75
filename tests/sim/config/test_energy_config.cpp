// The energy: section and its tables: node scaling against the published factors, the
// SRAM table's interpolation, technology defaults and which keys were defaulted, and
// located errors (docs/energy.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/config/energy_tables.h"

namespace tessera {
namespace {

namespace et = energy_tables;
const std::filesystem::path kConfigs = std::filesystem::path(TESSERA_SOURCE_DIR) / "configs";

const char* const kBase =
    "name: test\n"
    "clock_mhz: 1000\n"
    "array: {rows: 4, cols: 4, dataflow: ws, mac_modes: [{a: int8, b: int8, rate: 1.0}, {a: int16, b: int16, rate: 0.25}]}\n"
    "unified_buffer: {capacity: 64 KiB}\n"
    "accumulators: {entries: 64}\n"
    "weight_fifo: {depth_tiles: 2}\n"
    "weight_memory: {technology: DDR3, capacity: 1 MiB, bandwidth_gb_per_s: 10}\n"
    "pcie: {generation: 3, lanes: 4}\n";

ArchConfig parse(const std::string& text) { return parse_arch_config(YamlNode::load_string(text, "e.yaml")); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for:\n" << text;
  return "";
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// ---------------------------------------------------------------- scaling

// energy-serving.md Sec. 1.4: factors from Stillmaker & Baas's tabulated coefficients at
// equal Vdd; the code must reproduce them to 1%.
TEST(EnergyScaling, ReproducesThePublishedFactors) {
  struct Row {
    double from, to, v, factor;
  };
  const Row rows[] = {
      {45, 28, 0.8, 0.513}, {45, 28, 0.9, 0.507}, {45, 28, 1.0, 0.506}, {45, 22, 0.8, 0.294}, {45, 22, 0.9, 0.305},
      {45, 22, 1.0, 0.315}, {45, 16, 0.8, 0.174}, {45, 16, 0.9, 0.187}, {45, 16, 1.0, 0.198}, {45, 7, 0.8, 0.094},
      {45, 7, 0.9, 0.102},  {45, 7, 1.0, 0.109},  {40, 28, 0.8, 0.591}, {65, 28, 0.8, 0.414},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::to_string(r.from) + " -> " + std::to_string(r.to) + " at " + std::to_string(r.v));
    EXPECT_NEAR(et::logic_energy_scale(r.from, r.to, r.v), r.factor, 0.01 * r.factor);
  }
  const Row area[] = {{45, 28, 0, 0.377}, {45, 22, 0, 0.252}, {45, 16, 0, 0.190}, {45, 7, 0, 0.059}};
  for (const Row& r : area) EXPECT_NEAR(et::logic_area_scale(r.from, r.to), r.factor, 0.01 * r.factor) << r.to;
  // Identity, and the way back is the inverse.
  EXPECT_DOUBLE_EQ(et::logic_energy_scale(28, 28, 0.9), 1.0);
  EXPECT_NEAR(et::logic_energy_scale(45, 7, 0.9) * et::logic_energy_scale(7, 45, 0.9), 1.0, 1e-12);
  // Supply: C V^2.
  EXPECT_DOUBLE_EQ(et::vdd_energy_scale(0.9, 0.45), 0.25);
}

TEST(EnergyScaling, SramFollowsLogicTo22nmAndSqrtBelow) {
  EXPECT_DOUBLE_EQ(et::sram_energy_scale(32, 28, 0.9), et::logic_energy_scale(32, 28, 0.9));
  // 32 -> 7 nm: logic to 22 nm, then sqrt(7/22).
  EXPECT_NEAR(et::sram_energy_scale(32, 7, 0.9), et::logic_energy_scale(32, 22, 0.9) * std::sqrt(7.0 / 22), 1e-12);
  EXPECT_NEAR(et::sram_area_scale(32, 7), et::logic_area_scale(32, 22) * 7.0 / 22, 1e-12);
  EXPECT_NEAR(et::sram_leakage_scale(32, 7, 0.9), et::sram_energy_scale(32, 7, 0.9) * 0.79, 1e-12);
  // SRAM scales worse than logic below 22 nm.
  EXPECT_GT(et::sram_energy_scale(32, 7, 0.9), et::logic_energy_scale(32, 7, 0.9));
}

// ---------------------------------------------------------------- SRAM table

TEST(SramTable, HitsTheCactiRuns) {
  const auto ub = et::sram_at_table_node(24u << 20, 256, et::SramCell::kHp);
  EXPECT_NEAR(ub.read_pj_per_byte, 17.92, 1e-9);
  EXPECT_NEAR(ub.write_pj_per_byte, 20.72, 1e-9);
  EXPECT_NEAR(ub.leakage_w, 0.707 * 32, 1e-9);
  EXPECT_NEAR(ub.area_mm2, 57.50, 1e-9);
  const auto lop = et::sram_at_table_node(24u << 20, 256, et::SramCell::kLop);
  EXPECT_NEAR(lop.read_pj_per_byte * 256, 2347.0, 0.1);  // CACTI: 2,347.0 pJ per 256-B read
  EXPECT_NEAR(lop.leakage_w, 0.144 * 32, 1e-9);
  const auto small = et::sram_at_table_node(32u << 10, 64, et::SramCell::kHp);
  EXPECT_NEAR(small.read_pj_per_byte, 0.32, 1e-12);
  const auto narrow = et::sram_at_table_node(32u << 10, 8, et::SramCell::kHp);
  EXPECT_NEAR(narrow.write_pj_per_byte, 2.52, 1e-12);
  const auto lstp = et::sram_at_table_node(4u << 20, 64, et::SramCell::kLstp);
  EXPECT_NEAR(lstp.read_pj_per_byte, 4.46, 0.01);
  EXPECT_NEAR(lstp.leakage_w, 0.0015, 1e-9);
}

TEST(SramTable, MonotonicInSize) {
  for (const int64_t width : {1, 4, 8, 16, 32, 64, 128, 256, 512, 4096}) {
    for (const auto cell : {et::SramCell::kHp, et::SramCell::kLop, et::SramCell::kLstp}) {
      SCOPED_TRACE("width " + std::to_string(width) + " cell " + std::string(et::sram_cell_name(cell)));
      et::SramFigures prev{};
      for (uint64_t c = 256; c <= (uint64_t{1} << 32); c += c / 4 + 1) {
        const auto f = et::sram_at_table_node(c, width, cell);
        ASSERT_GT(f.read_pj_per_byte, 0) << c;
        EXPECT_GE(f.read_pj_per_byte, prev.read_pj_per_byte) << c;
        EXPECT_GE(f.write_pj_per_byte, prev.write_pj_per_byte) << c;
        EXPECT_GT(f.leakage_w, prev.leakage_w) << c;
        EXPECT_GT(f.area_mm2, prev.area_mm2) << c;
        prev = f;
      }
    }
  }
}

// ---------------------------------------------------------------- the section

TEST(EnergyConfig, AbsentSectionIsEveryDefaultAt28nm) {
  const ArchConfig c = parse(kBase);
  const EnergyConfig& e = c.energy;
  EXPECT_DOUBLE_EQ(e.technology_nm, 28);
  EXPECT_DOUBLE_EQ(e.vdd_v, 0.9);
  EXPECT_TRUE(has(e.defaulted, "energy.technology_nm"));
  EXPECT_TRUE(has(e.defaulted, "energy.mac.pj.int8xint8"));
  EXPECT_TRUE(has(e.defaulted, "energy.pcie.pj_per_bit"));
  // Horowitz 0.3 pJ at 45 nm x 0.507 (45 -> 28 nm at 0.9 V).
  EXPECT_NEAR(e.mac_pj(Dtype::kInt8, Dtype::kInt8), 0.3 * et::logic_energy_scale(45, 28, 0.9), 1e-12);
  // The quarter-rate int16 x int16 mode: four int8 passes.
  EXPECT_NEAR(e.mac_pj(Dtype::kInt16, Dtype::kInt16), 4 * e.mac_pj(Dtype::kInt8, Dtype::kInt8), 1e-12);
  EXPECT_NEAR(e.idle_mac_pj(Dtype::kInt8, Dtype::kInt8), 0.1 * e.mac_pj(Dtype::kInt8, Dtype::kInt8), 1e-12);
  EXPECT_DOUBLE_EQ(e.pcie_pj_per_bit, 0.0);  // no sourced figure: no claimed default
  // DDR3 core figures; background at 10 GB/s.
  EXPECT_DOUBLE_EQ(e.dram_read_pj_per_bit, 11.1);
  EXPECT_NEAR(e.dram_background_w, 5.3e-12 * 80e9, 1e-12);
  EXPECT_GT(e.unified_buffer.read_pj_per_byte, 0);
  // Leakage: the SRAMs' plus TPU v1's calibrated logic density (0.10463 W/mm^2 at 28 nm) over the logic area.
  EXPECT_DOUBLE_EQ(e.logic_leakage_w_per_mm2, 0.10463);
  const AreaBreakdown area = area_breakdown(e, 4, 4);
  EXPECT_NEAR(e.leakage_w,
              e.unified_buffer.leakage_w + e.accumulators.leakage_w + e.weight_fifo.leakage_w + 0.10463 * area.logic(),
              1e-12);
  // On: 4x4 PEs x (8-bit weight twice + 8-bit input + 32-bit partial sum) flop bits x register pJ/bit x 1 GHz.
  EXPECT_NEAR(e.on_w, 16 * 56 * (e.register_pj_per_bit / 0.5) * 1e-12 * 1e9, 1e-15);
  EXPECT_GT(e.pe_area_um2, 0);
  EXPECT_FALSE(e.sources.empty());
}

TEST(EnergyConfig, FloatAndInt4ModesHaveDerivedDefaultsListedAsDefaulted) {
  // Horowitz 45 nm: fp16 multiply 1.1 pJ (11 x 11-bit significands), fp32 add 0.9 pJ.
  // E4M3 significands are 4 bits, E5M2 3: 1.1 x 16/121 + 0.9, 1.1 x 9/121 + 0.9, 1.1 x 12/121 + 0.9.
  EXPECT_DOUBLE_EQ(*et::native_mac_pj("fp8_e4m3xfp8_e4m3"), 1.1 * 16 / 121 + 0.9);
  EXPECT_DOUBLE_EQ(*et::native_mac_pj("fp8_e5m2xfp8_e5m2"), 1.1 * 9 / 121 + 0.9);
  EXPECT_DOUBLE_EQ(*et::native_mac_pj("fp8_e4m3xfp8_e5m2"), 1.1 * 12 / 121 + 0.9);
  EXPECT_DOUBLE_EQ(*et::native_mac_pj("int8xint4"), 0.2);  // 8x4-bit multiply 0.1 + 32-bit add 0.1
  EXPECT_DOUBLE_EQ(*et::native_mac_pj("bf16xint4"), 2.0);  // converted to bf16: its MAC
  // Unchanged existing figures.
  EXPECT_DOUBLE_EQ(*et::native_mac_pj("int8xint8"), 0.3);
  EXPECT_DOUBLE_EQ(*et::native_mac_pj("fp16xfp16"), 2.0);
  EXPECT_DOUBLE_EQ(*et::native_mac_pj("bf16xbf16"), 2.0);
  EXPECT_FALSE(et::native_mac_pj("int4xint8"));
  EXPECT_DOUBLE_EQ(*et::mac_area_um2("fp8_e4m3xfp8_e4m3"), 1640.0 * 16 / 121 + 4184.0);
  EXPECT_DOUBLE_EQ(*et::mac_area_um2("int8xint4"), 141.0 + 137.0);
  // An array with those modes: each resolves to its default, scaled to 28 nm, and is listed.
  ArchConfig arch = parse(kBase);
  arch.array.mac_modes.push_back(MacMode{Dtype::kFp8E4m3, Dtype::kFp8E4m3, 2.0});
  arch.array.mac_modes.push_back(MacMode{Dtype::kBf16, Dtype::kBf16, 1.0});
  arch.array.mac_modes.push_back(MacMode{Dtype::kInt8, Dtype::kInt4, 2.0});
  const EnergyConfig e = parse_energy_config(YamlNode::load_string(kBase, "e.yaml"), arch);
  const double s = et::logic_energy_scale(45, 28, 0.9);
  EXPECT_NEAR(e.mac_pj(Dtype::kFp8E4m3, Dtype::kFp8E4m3), (1.1 * 16 / 121 + 0.9) * s, 1e-12);
  EXPECT_NEAR(e.mac_pj(Dtype::kInt8, Dtype::kInt4), 0.2 * s, 1e-12);
  EXPECT_TRUE(has(e.defaulted, "energy.mac.pj.fp8_e4m3xfp8_e4m3"));
  EXPECT_TRUE(has(e.defaulted, "energy.mac.pj.bf16xbf16"));
  EXPECT_TRUE(has(e.defaulted, "energy.mac.pj.int8xint4"));
  // The PE is the widest full-rate mode's MAC: bf16's 1640 + 4184 um^2 at 45 nm.
  EXPECT_NEAR(e.pe_area_um2, (1640.0 + 4184.0) * et::logic_area_scale(45, 28), 1e-9);
  // A pair key in the config names the new types; int4 is a weight (the B of AxB) only.
  const EnergyConfig given = parse_energy_config(
      YamlNode::load_string(std::string(kBase) + "energy: {technology_nm: 28, mac: {node_nm: 28, pj: {int8xint4: 0.05}}}\n", "e.yaml"),
      arch);
  EXPECT_NEAR(given.mac_pj(Dtype::kInt8, Dtype::kInt4), 0.05, 1e-12);
  EXPECT_FALSE(has(given.defaulted, "energy.mac.pj.int8xint4"));
  expect_has(error_of(std::string(kBase) + "energy: {technology_nm: 28, mac: {pj: {int4xint8: 1}}}\n"),
             "energy.mac.pj.int4xint8: 'int4xint8': int4 is for weights only");
  expect_has(error_of(std::string(kBase) + "energy: {technology_nm: 28, mac: {pj: {fp8xfp8: 1}}}\n"),
             "A and B in int4, int8, uint8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16");
}

TEST(EnergyConfig, OnlyTheNodeGivesSensibleValues) {
  const ArchConfig c = parse(std::string(kBase) + "energy: {technology_nm: 7}\n");
  const EnergyConfig& e = c.energy;
  EXPECT_FALSE(has(e.defaulted, "energy.technology_nm"));
  EXPECT_TRUE(has(e.defaulted, "energy.vdd_v"));
  EXPECT_NEAR(e.mac_pj(Dtype::kInt8, Dtype::kInt8), 0.3 * 0.102, 0.3 * 0.102 * 0.01);
  // Every coefficient is smaller than at 28 nm.
  const ArchConfig c28 = parse(kBase);
  EXPECT_LT(e.register_pj_per_bit, c28.energy.register_pj_per_bit);
  EXPECT_LT(e.unified_buffer.read_pj_per_byte, c28.energy.unified_buffer.read_pj_per_byte);
  EXPECT_LT(e.vector_op_pj("exp", EnergyClass::kFp32MultiplyAdd),
            c28.energy.vector_op_pj("exp", EnergyClass::kFp32MultiplyAdd));
  // Energy classes (Horowitz, 45 nm): 32-bit add 0.1 pJ, 32-bit multiply-add 3.1 + 0.1,
  // fp32 multiply-add 3.7 + 0.9; the config names no function, so the class decides.
  const double s28 = et::logic_energy_scale(45, 28, 0.9);
  EXPECT_NEAR(c28.energy.vector_op_pj("relu", EnergyClass::kAdd32), 0.1 * s28, 1e-12);
  EXPECT_NEAR(c28.energy.vector_op_pj("requantize", EnergyClass::kMultiplyAdd32), 3.2 * s28, 1e-12);
  EXPECT_NEAR(c28.energy.vector_op_pj("log", EnergyClass::kFp32MultiplyAdd), 4.6 * s28, 1e-12);
  EXPECT_DOUBLE_EQ(et::vector_op_pj(EnergyClass::kAdd32), 0.1);
  EXPECT_DOUBLE_EQ(et::vector_op_pj(EnergyClass::kMultiplyAdd32), 3.1 + 0.1);
  EXPECT_DOUBLE_EQ(et::vector_op_pj(EnergyClass::kFp32MultiplyAdd), 3.7 + 0.9);
  EXPECT_THROW(et::vector_op_pj(EnergyClass::kNoVectorWork), std::logic_error);
  EXPECT_LT(e.pe_area_um2, c28.energy.pe_area_um2);
}

TEST(EnergyConfig, GivenValuesScaleFromTheirNodeAndNothingElseChanges) {
  const ArchConfig c = parse(std::string(kBase) +
                             "energy:\n"
                             "  technology_nm: 28\n"
                             "  vdd_v: 0.9\n"
                             "  mac: {node_nm: 45, vdd_v: 0.9, pj: {int8xint8: 0.6, int16xint16: 2.0}, idle_fraction: 0}\n"
                             "  register: {pj_per_bit: 0.01, toggle_fraction: 1}\n"
                             "  vector: {pj_per_op: {default: 0.5, exp: 2}}\n"
                             "  sram: {cell: lop, unified_buffer: {read_pj_per_byte: 3, write_pj_per_byte: 4}}\n"
                             "  dram: {read_pj_per_bit: 20, activation_nj: 0, row_bytes: 4096, background_w: 1}\n"
                             "  pcie: {pj_per_bit: 5}\n"
                             "  static: {leakage_w: 2, on_w: 3}\n"
                             "  host_power_w: 50\n"
                             "  area: {node_nm: 28, mac_um2: {int8xint8: 100}, pe_overhead: 2, sram_overhead: 1, other_fraction: 0.5}\n");
  const EnergyConfig& e = c.energy;
  const double s = et::logic_energy_scale(45, 28, 0.9);
  EXPECT_NEAR(e.mac_pj(Dtype::kInt8, Dtype::kInt8), 0.6 * s, 1e-12);
  EXPECT_NEAR(e.mac_pj(Dtype::kInt16, Dtype::kInt16), 2.0 * s, 1e-12);
  EXPECT_DOUBLE_EQ(e.idle_mac_pj(Dtype::kInt8, Dtype::kInt8), 0);
  EXPECT_DOUBLE_EQ(e.register_pj_per_bit, 0.01);  // at the config's node: as given
  // A function the config names takes its value, any other the config's default, whatever the class.
  EXPECT_DOUBLE_EQ(e.vector_op_pj("exp", EnergyClass::kFp32MultiplyAdd), 2);
  EXPECT_DOUBLE_EQ(e.vector_op_pj("relu", EnergyClass::kAdd32), 0.5);
  EXPECT_DOUBLE_EQ(e.vector_op_pj("log", EnergyClass::kFp32MultiplyAdd), 0.5);
  EXPECT_DOUBLE_EQ(e.unified_buffer.read_pj_per_byte, 3);
  EXPECT_DOUBLE_EQ(e.unified_buffer.write_pj_per_byte, 4);
  EXPECT_DOUBLE_EQ(e.dram_read_pj_per_bit, 20);
  EXPECT_EQ(e.dram_row_bytes, 4096);
  EXPECT_DOUBLE_EQ(e.pcie_pj_per_bit, 5);
  EXPECT_DOUBLE_EQ(e.leakage_w, 2);
  EXPECT_DOUBLE_EQ(e.on_w, 3);
  EXPECT_DOUBLE_EQ(e.host_power_w, 50);
  EXPECT_DOUBLE_EQ(e.pe_area_um2, 100);
  EXPECT_DOUBLE_EQ(e.pe_overhead, 2);
  // Only what was left out is reported as defaulted.
  EXPECT_FALSE(has(e.defaulted, "energy.mac.pj.int8xint8"));
  EXPECT_FALSE(has(e.defaulted, "energy.static.on_w"));
  EXPECT_FALSE(has(e.defaulted, "energy.sram.cell"));
  EXPECT_TRUE(has(e.defaulted, "energy.sram.unified_buffer.leakage_w"));
  EXPECT_TRUE(has(e.defaulted, "energy.sram.accumulators.read_pj_per_byte"));
}

TEST(EnergyConfig, ShippedConfigsCarryTheSection) {
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const ArchConfig c = load_arch_config(entry.path());
    EXPECT_FALSE(has(c.energy.defaulted, "energy.technology_nm")) << "every shipped config names its node";
    EXPECT_GT(c.energy.mac_pj(Dtype::kInt8, Dtype::kInt8), 0);
  }
}

TEST(EnergyConfigErrors, LocatedAndNamed) {
  expect_has(error_of(std::string(kBase) + "energy: {technology_nm: 28, tecnology: 1}\n"), "energy.tecnology: unknown key");
  expect_has(error_of(std::string(kBase) + "energy: {vdd_v: 0.9}\n"), "energy: missing required key 'technology_nm'");
  const std::string node = error_of(std::string(kBase) + "energy:\n  technology_nm: 3\n");
  expect_has(node, "e.yaml:10:");
  expect_has(node, "energy.technology_nm");
  expect_has(error_of(std::string(kBase) + "energy: {technology_nm: 28, mac: {pj: {int8xint32: 1}}}\n"),
             "energy.mac.pj.int8xint32: 'int8xint32' is not a precision pair");
  expect_has(error_of(std::string(kBase) + "energy: {technology_nm: 28, mac: {pj: {int8xint8: -1}}}\n"),
             "energy.mac.pj.int8xint8");
  expect_has(error_of(std::string(kBase) + "energy: {technology_nm: 28, sram: {cell: fast}}\n"), "energy.sram.cell");
  expect_has(error_of(std::string(kBase) + "energy: {technology_nm: 28, sram: {unified_buffer: {reed_pj_per_byte: 1}}}\n"),
             "energy.sram.unified_buffer.reed_pj_per_byte: unknown key");
  expect_has(error_of(std::string(kBase) + "energy: {technology_nm: 28, area: {other_fraction: 1.5}}\n"),
             "energy.area.other_fraction");
  // A mode with no published energy must be given.
  std::string fp = kBase;
  fp.replace(fp.find("{a: int16, b: int16, rate: 0.25}"), 32, "{a: int8, b: fp16, rate: 1.0}");
  const std::string mode = error_of(fp);
  expect_has(mode, "array.mac_modes");
  expect_has(mode, "energy.mac.pj.int8xfp16");
}

}  // namespace
}  // namespace tessera
