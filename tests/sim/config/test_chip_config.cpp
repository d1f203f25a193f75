// The chip template's keys (docs/configs.md): the shipped modern chips against their
// published peaks, and the bad inputs the template adds, each one located error.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"

using namespace tessera;

namespace {

const std::filesystem::path kConfigs = std::filesystem::path(TESSERA_SOURCE_DIR) / "configs";

// A valid chip-template config; `edit` replaces one line.
std::string chip(const std::string& from = "", const std::string& to = "") {
  std::string y = R"(name: chip
clock_mhz: 1000
cores: 2
matrix_units:
  count: 2
  rows: 8
  cols: 8
  dataflow: ws
  mac_modes:
    - {a: bf16, b: bf16, rate: 1.0}
    - {a: int8, b: int8, rate: 2.0}
scratchpad: {capacity: 1 MiB}
accumulators: {entries: 64}
weight_fifo: {depth_tiles: 2}
device_memory: {capacity: 1 GiB, bandwidth_gb_per_s: 100}
)";
  if (!from.empty()) {
    const size_t at = y.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    y.replace(at, from.size(), to);
  }
  return y;
}

ArchConfig parse(const std::string& text) { return parse_arch_config(YamlNode::load_string(text, "chip.yaml")); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ChipConfig, ShippedModernChipsMatchTheirPublishedPeaksAndBandwidth) {
  struct Published {
    const char* file;
    double bf16_tflops, int8_tops, hbm_gb_per_s;
  };
  // Google Cloud TPU v4 / v5e / v6e pages (modern-tpus.md §1).
  for (const Published& p : {Published{"tpu-v4.yaml", 275, 275, 1200}, Published{"tpu-v5e.yaml", 197, 393, 819},
                             Published{"tpu-v6e.yaml", 918, 1836, 1638}}) {
    SCOPED_TRACE(p.file);
    const ArchConfig c = load_arch_config(kConfigs / p.file);
    EXPECT_NEAR(c.peak_tops(Dtype::kBf16, Dtype::kBf16) / p.bf16_tflops, 1.0, 0.01);
    EXPECT_NEAR(c.peak_tops(Dtype::kInt8, Dtype::kInt8) / p.int8_tops, 1.0, 0.01);
    EXPECT_DOUBLE_EQ(c.weight_memory.bandwidth_gb_per_s, p.hbm_gb_per_s);
    EXPECT_EQ(c.residency.inputs, Residency::kDevice);
    EXPECT_EQ(c.residency.outputs, Residency::kDevice);
  }
  const ArchConfig v4 = load_arch_config(kConfigs / "tpu-v4.yaml");
  EXPECT_EQ(v4.active_matrix_units(), 8);  // 2 TensorCores x 4 MXUs, megacore
  // 2 x 4 x 128 x 128 x 2 x 1.05e9 = 275.25e12
  EXPECT_NEAR(v4.peak_tops(Dtype::kBf16, Dtype::kBf16), 275.2512, 1e-9);
}

TEST(ChipConfig, PeakCountsEveryActiveMatrixUnit) {
  ArchConfig c = parse(chip());
  // 2 cores x 2 units x 8 x 8 x rate 2 x 2 ops x 1 GHz = 1.024 TOPS at int8; bf16 at rate 1.
  EXPECT_NEAR(c.peak_tops(Dtype::kInt8, Dtype::kInt8), 1.024, 1e-12);
  EXPECT_NEAR(c.peak_tops(Dtype::kBf16, Dtype::kBf16), 0.512, 1e-12);
  EXPECT_NEAR(c.peak_tops(), 1.024, 1e-12);  // the reference mode is int8 x int8
  c.megacore = false;
  EXPECT_NEAR(c.peak_tops(), 0.512, 1e-12);  // one core runs a program
  EXPECT_TRUE(c.chip_template);
  EXPECT_FALSE(c.has_host_link);
}

TEST(ChipConfig, ZeroCoresOrMatrixUnitsIsALocatedError) {
  const std::string cores = error_of(chip("cores: 2", "cores: 0"));
  EXPECT_NE(cores.find("chip.yaml:3:"), std::string::npos) << cores;
  EXPECT_NE(cores.find("cores: must be in [1, 64], got 0"), std::string::npos) << cores;
  const std::string units = error_of(chip("count: 2", "count: 0"));
  EXPECT_NE(units.find("matrix_units.count: must be in [1, 64], got 0"), std::string::npos) << units;
}

TEST(ChipConfig, ScratchpadSmallerThanOneTileIsALocatedError) {
  const std::string e = error_of(chip("scratchpad: {capacity: 1 MiB}", "scratchpad: {capacity: 64}"));
  EXPECT_NE(e.find("scratchpad.capacity"), std::string::npos) << e;
  EXPECT_NE(e.find("smaller than one tile: must be >= 128 bytes"), std::string::npos) << e;
}

TEST(ChipConfig, FloatModeWithAnIntegerAccumulatorIsAnError) {
  const std::string e =
      error_of(chip("{a: bf16, b: bf16, rate: 1.0}", "{a: bf16, b: bf16, rate: 1.0, accumulator: int32}"));
  EXPECT_NE(e.find("matrix_units.mac_modes[0].accumulator"), std::string::npos) << e;
  EXPECT_NE(e.find("float products accumulate in fp32"), std::string::npos) << e;
  const std::string narrow =
      error_of(chip("{a: bf16, b: bf16, rate: 1.0}", "{a: bf16, b: bf16, rate: 1.0, accumulator: bf16}"));
  EXPECT_NE(narrow.find("allowed: fp32"), std::string::npos) << narrow;
  // fp32 written out is the default, accepted.
  EXPECT_NO_THROW(parse(chip("{a: bf16, b: bf16, rate: 1.0}", "{a: bf16, b: bf16, rate: 1.0, accumulator: fp32}")));
}

TEST(ChipConfig, AModeNoPrecisionUsesIsAllowedAndRunsAsMustMatchItsKind) {
  const ArchConfig c = parse(chip("    - {a: int8, b: int8, rate: 2.0}",
                                  "    - {a: int8, b: int8, rate: 2.0}\n    - {a: fp16, b: fp16, rate: 1.0, runs_as: bf16}"));
  const MacMode* fp16 = c.array.find_mode(Dtype::kFp16, Dtype::kFp16);
  ASSERT_NE(fp16, nullptr);
  ASSERT_TRUE(fp16->runs_as.has_value());
  EXPECT_EQ(*fp16->runs_as, Dtype::kBf16);
  EXPECT_EQ(fp16->accumulator, Dtype::kFp32);
  const std::string e = error_of(chip("{a: bf16, b: bf16, rate: 1.0}", "{a: bf16, b: bf16, rate: 1.0, runs_as: int8}"));
  EXPECT_NE(e.find("cannot run as int8"), std::string::npos) << e;
}

TEST(ChipConfig, HostResidencyNeedsAHostLink) {
  const std::string e = error_of(chip("cores: 2", "cores: 2\nresidency: {outputs: host}"));
  EXPECT_NE(e.find("residency.outputs"), std::string::npos) << e;
  EXPECT_NE(e.find("needs a host link"), std::string::npos) << e;
  // Weights too: in host memory they are fetched over the host link.
  const std::string w = error_of(chip("cores: 2", "cores: 2\nresidency: {weights: host}"));
  EXPECT_NE(w.find("residency.weights: 'host' needs a host link"), std::string::npos) << w;
}

TEST(ChipConfig, BothNamesOfASectionAreRefused) {
  const std::string e = error_of(chip("scratchpad: {capacity: 1 MiB}",
                                      "scratchpad: {capacity: 1 MiB}\nunified_buffer: {capacity: 1 MiB}"));
  EXPECT_NE(e.find("gives the same section"), std::string::npos) << e;
}

// ici: chip-to-chip links (docs/configs.md "Chip-to-chip links").
namespace {
std::string with_ici(const std::string& section) { return chip() + "ici: " + section + "\n"; }
}  // namespace

TEST(ChipConfig, ShippedTpusHaveChipLinksPerPortPerDirection) {
  // Per port per direction from the published per-chip bidirectional figure: v5e 400 GB/s / 4
  // ports / 2 directions = 50; v6e 800 / 4 / 2 = 100; v4 [book] 45 per link one way.
  struct Links {
    const char* file;
    double gb_per_s;
    int ports;
  };
  for (const Links& l : {Links{"tpu-v5e.yaml", 50, 4}, Links{"tpu-v6e.yaml", 100, 4}, Links{"tpu-v4.yaml", 45, 6}}) {
    const ArchConfig c = load_arch_config(kConfigs / l.file);
    EXPECT_TRUE(c.has_chip_links) << l.file;
    EXPECT_EQ(c.ici.bandwidth_gb_per_s, l.gb_per_s) << l.file;
    EXPECT_EQ(c.ici.ports, l.ports) << l.file;
    EXPECT_EQ(c.ici.topology, models::ChipLinkParams::Topology::kTorus2d) << l.file;
    EXPECT_FALSE(c.ici.wraparound) << l.file;
    EXPECT_EQ(c.ici.latency_ns, 1000) << l.file;
  }
  EXPECT_FALSE(load_arch_config(kConfigs / "tpu-v1.yaml").has_chip_links);  // no `ici:`: no chip links
  EXPECT_FALSE(parse(chip()).has_chip_links);
}

TEST(ChipConfig, IciSectionParsesEveryKey) {
  const ArchConfig c = parse(with_ici(
      "{bandwidth_gb_per_s: 12.5, latency_ns: 250, ports: 8, topology: torus_2d, torus_x: 2, torus_y: 4, wraparound: true}"));
  EXPECT_TRUE(c.has_chip_links);
  EXPECT_EQ(c.ici.bandwidth_gb_per_s, 12.5);
  EXPECT_EQ(c.ici.latency_ns, 250);
  EXPECT_EQ(c.ici.ports, 8);
  EXPECT_EQ(c.ici.topology, models::ChipLinkParams::Topology::kTorus2d);
  EXPECT_EQ(c.ici.torus_x, 2);
  EXPECT_EQ(c.ici.torus_y, 4);
  EXPECT_TRUE(c.ici.wraparound);
  const ArchConfig r = parse(with_ici("{bandwidth_gb_per_s: 50, latency_ns: 0, ports: 2, topology: ring}"));
  EXPECT_EQ(r.ici.topology, models::ChipLinkParams::Topology::kRing);
  EXPECT_EQ(r.ici.torus_x, 0);
  EXPECT_TRUE(r.ici.wraparound);  // the default: links close each ring
}

TEST(ChipConfig, BadIciValuesAreLocatedErrors) {
  struct Bad {
    const char* section;
    const char* key;    // the key path the message names
    const char* words;  // and what it says is allowed
  };
  for (const Bad& b : {
           Bad{"{bandwidth_gb_per_s: 0, latency_ns: 1000, ports: 4, topology: ring}", "ici.bandwidth_gb_per_s", "must be in (0"},
           Bad{"{bandwidth_gb_per_s: .nan, latency_ns: 1000, ports: 4, topology: ring}", "ici.bandwidth_gb_per_s", "expected a number"},
           Bad{"{bandwidth_gb_per_s: 50, latency_ns: -1, ports: 4, topology: ring}", "ici.latency_ns", "must be in [0, 1e+09]"},
           Bad{"{bandwidth_gb_per_s: 50, ports: 4, topology: ring}", "latency_ns", "missing"},
           Bad{"{bandwidth_gb_per_s: 50, latency_ns: 1000, ports: 3, topology: torus_2d}", "ici.ports", "must be >= 4 for torus_2d"},
           Bad{"{bandwidth_gb_per_s: 50, latency_ns: 1000, ports: 1, topology: ring}", "ici.ports", "must be >= 2 for ring"},
           Bad{"{bandwidth_gb_per_s: 50, latency_ns: 1000, ports: 4, topology: mesh}", "ici.topology", "ring, torus_2d"},
           Bad{"{bandwidth_gb_per_s: 50, latency_ns: 1000, ports: 4, topology: ring, torus_x: 2, torus_y: 2}", "ici.torus_x",
               "only for topology: torus_2d"},
           Bad{"{bandwidth_gb_per_s: 50, latency_ns: 1000, ports: 4, topology: torus_2d, torus_x: 2}", "ici.torus_x", "needs torus_y"},
           Bad{"{bandwidth_gb_per_s: 50, latency_ns: 1000, ports: 4, topology: torus_2d, torus_x: 0, torus_y: 2}", "ici.torus_x",
               "must be in [1, 1024]"},
           Bad{"{bandwidth: 50, latency_ns: 1000, ports: 4, topology: ring}", "bandwidth", "bandwidth_gb_per_s"},
       }) {
    const std::string e = error_of(with_ici(b.section));
    EXPECT_NE(e.find("chip.yaml:"), std::string::npos) << b.section << " -> " << e;
    EXPECT_NE(e.find(b.key), std::string::npos) << b.section << " -> " << e;
    EXPECT_NE(e.find(b.words), std::string::npos) << b.section << " -> " << e;
  }
}
