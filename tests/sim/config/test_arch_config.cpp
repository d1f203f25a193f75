#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"

namespace tessera {
namespace {

const std::filesystem::path kConfigs = std::filesystem::path(TESSERA_SOURCE_DIR) / "configs";

// A complete, valid config; tests replace one line to make it wrong. Line numbers
// are fixed: keep this text in sync with the line numbers the tests assert.
const char* const kBase =
    "name: test\n"                                   // 1
    "clock_mhz: 700\n"                               // 2
    "array:\n"                                       // 3
    "  rows: 16\n"                                   // 4
    "  cols: 8\n"                                    // 5
    "  dataflow: ws\n"                               // 6
    "unified_buffer:\n"                              // 7
    "  capacity: 64 KiB\n"                           // 8
    "accumulators:\n"                                // 9
    "  entries: 64\n"                                // 10
    "weight_fifo:\n"                                 // 11
    "  depth_tiles: 2\n"                             // 12
    "weight_memory:\n"                               // 13
    "  capacity: 1 MiB\n"                            // 14
    "  bandwidth_gb_per_s: 10\n"                     // 15
    "pcie:\n"                                        // 16
    "  generation: 3\n"                              // 17
    "  lanes: 4\n";                                  // 18

// kBase with the line starting `from` (after indentation) replaced by `to` ("" deletes it).
std::string edit(const std::string& from, const std::string& to) {
  std::string text = kBase;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  const size_t end = text.find('\n', at);
  if (to.empty()) {
    const size_t start = text.rfind('\n', at);
    text.erase(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
  } else {
    text.replace(at, end - at, to);
  }
  return text;
}

ArchConfig parse(const std::string& text, const std::string& origin = "inline.yaml") {
  return parse_arch_config(YamlNode::load_string(text, origin));
}

// Parses `text` expecting an InputError; returns its message.
std::string error_of(const std::string& text, const std::string& origin = "inline.yaml") {
  try {
    parse(text, origin);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for:\n" << text;
  return "";
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
}

TEST(ArchConfig, TpuV1LoadsWithPaperValues) {
  const ArchConfig c = load_arch_config(kConfigs / "tpu-v1.yaml");
  EXPECT_EQ(c.name, "tpu-v1");
  EXPECT_EQ(c.source, (kConfigs / "tpu-v1.yaml").string());
  EXPECT_DOUBLE_EQ(c.clock_mhz, 700.0);
  EXPECT_DOUBLE_EQ(c.clock_hz(), 700e6);

  EXPECT_EQ(c.array.rows, 256);
  EXPECT_EQ(c.array.cols, 256);
  EXPECT_EQ(c.array.dataflow, array::Dataflow::kWeightStationary);
  EXPECT_TRUE(c.array.double_buffered);
  ASSERT_EQ(c.array.mac_modes.size(), 4u);
  const std::map<std::pair<Dtype, Dtype>, double> want = {
      {{Dtype::kInt8, Dtype::kInt8}, 1.0},
      {{Dtype::kInt8, Dtype::kInt16}, 0.5},
      {{Dtype::kInt16, Dtype::kInt8}, 0.5},
      {{Dtype::kInt16, Dtype::kInt16}, 0.25}};
  for (const auto& [pair, rate] : want) {
    const MacMode* m = c.array.find_mode(pair.first, pair.second);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->a, pair.first);
    EXPECT_EQ(m->b, pair.second);
    EXPECT_DOUBLE_EQ(m->rate, rate);
  }
  EXPECT_EQ(c.array.find_mode(Dtype::kInt32, Dtype::kInt8), nullptr);

  EXPECT_EQ(c.unified_buffer.capacity_bytes, 24ULL * 1024 * 1024);
  EXPECT_EQ(c.unified_buffer.read_bytes_per_cycle, 256);
  EXPECT_EQ(c.unified_buffer.write_bytes_per_cycle, 256);

  EXPECT_EQ(c.accumulators.entries, 4096);
  EXPECT_EQ(c.accumulators.width_bits, 32);
  // 4096 entries x 256 cols x 32 bit = 4 MiB.
  EXPECT_EQ(c.accumulators.entries * c.array.cols * c.accumulators.width_bits / 8, 4 * 1024 * 1024);

  EXPECT_EQ(c.weight_fifo.depth_tiles, 4);
  EXPECT_EQ(c.array.rows * c.array.cols, 64 * 1024);  // one tile = 64 KiB of int8 weights

  EXPECT_EQ(c.weight_memory.technology, "DDR3");
  EXPECT_EQ(c.weight_memory.capacity_bytes, 8ULL * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.weight_memory.bandwidth_gb_per_s, 34.0);
  EXPECT_DOUBLE_EQ(c.weight_memory.latency_ns, 100.0);
  EXPECT_EQ(c.weight_memory.channels, 2);

  EXPECT_EQ(c.pcie.generation, 3);
  EXPECT_EQ(c.pcie.lanes, 16);
  EXPECT_EQ(c.pcie.encoding, "128b130b");
  EXPECT_DOUBLE_EQ(c.pcie.transfer_rate_gt_per_s, 8.0);
  EXPECT_DOUBLE_EQ(c.pcie.encoding_efficiency, 128.0 / 130.0);
  EXPECT_EQ(c.pcie.max_payload_bytes, 256);
  EXPECT_EQ(c.pcie.tlp_overhead_bytes, 24);
  EXPECT_DOUBLE_EQ(c.pcie.latency_ns, 1000.0);

  EXPECT_EQ(c.vector_unit.lanes, 256);
  EXPECT_EQ(c.vector_unit.pipeline_latency_cycles, 8);
  EXPECT_EQ(c.controller.issue_cycles, 1);
  EXPECT_EQ(c.controller.queue_depth, 8);
}

TEST(ArchConfig, TpuV1PeakAndLinkRate) {
  const ArchConfig c = load_arch_config(kConfigs / "tpu-v1.yaml");
  // 256 * 256 MACs * 2 ops * 700e6 Hz = 91.7504e12 ops/s: the paper's "92 TOPS" (Table 2).
  EXPECT_NEAR(c.peak_tops(), 91.7504, 1e-9);
  EXPECT_NEAR(c.peak_tops(Dtype::kInt8, Dtype::kInt8), 91.7504, 1e-9);
  EXPECT_NEAR(c.peak_tops(Dtype::kInt8, Dtype::kInt16), 45.8752, 1e-9);
  EXPECT_NEAR(c.peak_tops(Dtype::kInt16, Dtype::kInt8), 45.8752, 1e-9);
  EXPECT_NEAR(c.peak_tops(Dtype::kInt16, Dtype::kInt16), 22.9376, 1e-9);
  EXPECT_THROW(c.peak_tops(Dtype::kInt32, Dtype::kInt32), InputError);
  EXPECT_DOUBLE_EQ(c.pcie.link_bytes_per_s(), 16 * 8e9 * 128.0 / 130.0 / 8);
  EXPECT_NEAR(c.pcie.link_bytes_per_s(), 15.754e9, 1e6);
}

TEST(ArchConfig, ShippedConfigsLoad) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const ArchConfig c = load_arch_config(entry.path());
    EXPECT_EQ(c.name + ".yaml", entry.path().filename().string()) << "name should match the file name";
    EXPECT_GT(c.peak_tops(), 0.0);
    ++count;
  }
  EXPECT_GE(count, 3);

  const ArchConfig edge = load_arch_config(kConfigs / "edge-npu-32.yaml");
  EXPECT_EQ(edge.array.rows, 32);
  EXPECT_EQ(edge.array.cols, 32);
  EXPECT_EQ(edge.array.dataflow, array::Dataflow::kWeightStationary);
  EXPECT_EQ(edge.unified_buffer.capacity_bytes, 512u * 1024);
  EXPECT_DOUBLE_EQ(edge.weight_memory.bandwidth_gb_per_s, 12.8);
  EXPECT_EQ(edge.pcie.generation, 4);
  EXPECT_EQ(edge.pcie.lanes, 4);
  EXPECT_NEAR(edge.peak_tops(), 2.048, 1e-9);
  EXPECT_DOUBLE_EQ(edge.pcie.link_bytes_per_s(), 4 * 16e9 * 128.0 / 130.0 / 8);

  const ArchConfig os = load_arch_config(kConfigs / "os-128.yaml");
  EXPECT_EQ(os.array.rows, 128);
  EXPECT_EQ(os.array.dataflow, array::Dataflow::kOutputStationary);
  EXPECT_EQ(os.unified_buffer.capacity_bytes, 8u * 1024 * 1024);
  EXPECT_DOUBLE_EQ(os.weight_memory.bandwidth_gb_per_s, 460.0);
  EXPECT_NEAR(os.peak_tops(), 128.0 * 128 * 2 * 940e6 / 1e12, 1e-9);

  const ArchConfig is = load_arch_config(kConfigs / "is-64.yaml");
  EXPECT_EQ(is.array.dataflow, array::Dataflow::kInputStationary);
  EXPECT_EQ(is.array.find_mode(Dtype::kInt8, Dtype::kInt16), nullptr);
}

TEST(ArchConfig, DefaultsFromOtherFields) {
  const ArchConfig c = parse(kBase);
  EXPECT_EQ(c.source, "inline.yaml");
  EXPECT_TRUE(c.array.double_buffered);
  ASSERT_EQ(c.array.mac_modes.size(), 1u);
  EXPECT_EQ(c.array.mac_modes[0].a, Dtype::kInt8);
  EXPECT_EQ(c.array.mac_modes[0].b, Dtype::kInt8);
  EXPECT_DOUBLE_EQ(c.array.mac_modes[0].rate, 1.0);
  EXPECT_EQ(c.unified_buffer.read_bytes_per_cycle, 16);   // = rows
  EXPECT_EQ(c.unified_buffer.write_bytes_per_cycle, 8);   // = cols
  EXPECT_EQ(c.accumulators.width_bits, 32);
  EXPECT_EQ(c.weight_memory.technology, "DRAM");
  EXPECT_DOUBLE_EQ(c.weight_memory.latency_ns, 100.0);
  EXPECT_EQ(c.weight_memory.channels, 1);
  EXPECT_EQ(c.pcie.encoding, "128b130b");
  EXPECT_EQ(c.pcie.max_payload_bytes, 256);
  EXPECT_EQ(c.pcie.tlp_overhead_bytes, 24);
  EXPECT_DOUBLE_EQ(c.pcie.latency_ns, 1000.0);
  EXPECT_EQ(c.vector_unit.lanes, 8);                      // = cols
  EXPECT_EQ(c.vector_unit.pipeline_latency_cycles, 8);
  EXPECT_EQ(c.controller.issue_cycles, 1);
  EXPECT_EQ(c.controller.queue_depth, 8);
  EXPECT_NEAR(c.peak_tops(), 16.0 * 8 * 2 * 700e6 / 1e12, 1e-12);
}

TEST(ArchConfig, MinimalExampleFromDocs) {
  // The example at the end of docs/configs.md.
  const ArchConfig c = parse(
      "name: tiny\n"
      "clock_mhz: 500\n"
      "array: {rows: 16, cols: 16, dataflow: ws}\n"
      "unified_buffer: {capacity: 64 KiB}\n"
      "accumulators: {entries: 256}\n"
      "weight_fifo: {depth_tiles: 2}\n"
      "weight_memory: {capacity: 256 MiB, bandwidth_gb_per_s: 8}\n"
      "pcie: {generation: 3, lanes: 4}\n");
  EXPECT_EQ(c.name, "tiny");
  EXPECT_EQ(c.unified_buffer.capacity_bytes, 65536u);
  EXPECT_EQ(c.weight_memory.capacity_bytes, 256u << 20);
  EXPECT_NEAR(c.peak_tops(), 16.0 * 16 * 2 * 500e6 / 1e12, 1e-12);
}

TEST(ArchConfig, ByteSizeSpellings) {
  EXPECT_EQ(parse(edit("capacity: 64 KiB", "capacity: 24MiB")).unified_buffer.capacity_bytes, 24u << 20);
  EXPECT_EQ(parse(edit("capacity: 64 KiB", "capacity: 25165824")).unified_buffer.capacity_bytes, 25165824u);
  EXPECT_EQ(parse(edit("capacity: 64 KiB", "capacity: 2 MB")).unified_buffer.capacity_bytes, 2000000u);
  EXPECT_EQ(parse(edit("capacity: 64 KiB", "capacity: 0.5 KiB")).unified_buffer.capacity_bytes, 512u);
}

TEST(ArchConfig, PcieGenerationsAndEncodings) {
  struct Case { int gen; double gt; const char* enc; double eff; };
  const Case cases[] = {{1, 2.5, "8b10b", 0.8},          {2, 5.0, "8b10b", 0.8},
                        {3, 8.0, "128b130b", 128.0 / 130}, {4, 16.0, "128b130b", 128.0 / 130},
                        {5, 32.0, "128b130b", 128.0 / 130}, {6, 64.0, "flit", 242.0 / 256}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.gen);
    const ArchConfig c = parse(edit("generation: 3", "generation: " + std::to_string(k.gen)));
    EXPECT_DOUBLE_EQ(c.pcie.transfer_rate_gt_per_s, k.gt);
    EXPECT_EQ(c.pcie.encoding, k.enc);
    EXPECT_DOUBLE_EQ(c.pcie.encoding_efficiency, k.eff);
    EXPECT_DOUBLE_EQ(c.pcie.link_bytes_per_s(), 4 * k.gt * 1e9 * k.eff / 8);
  }
  // An explicit encoding overrides the generation's.
  const ArchConfig c = parse(std::string(kBase) + "  encoding: 8b10b\n");
  EXPECT_EQ(c.pcie.encoding, "8b10b");
  EXPECT_DOUBLE_EQ(c.pcie.link_bytes_per_s(), 4 * 8e9 * 0.8 / 8);
}

TEST(ArchConfigErrors, UnknownKey) {
  const std::string msg = error_of(edit("rows: 16", "rowz: 16"), "typo.yaml");
  expect_has(msg, "typo.yaml:4:3: ");
  expect_has(msg, "array.rowz");
  expect_has(msg, "unknown key");
  expect_has(msg, "rows");  // the allowed keys are listed

  const std::string top = error_of(std::string(kBase) + "clok_mhz: 5\n", "typo.yaml");
  expect_has(top, "typo.yaml:19:1: clok_mhz: unknown key");

  const std::string mode = error_of(edit("dataflow: ws", "dataflow: ws\n  mac_modes: [{a: int8, b: int8, rat: 1}]"));
  expect_has(mode, "inline.yaml:7:");
  expect_has(mode, "array.mac_modes[0].rat: unknown key");
}

TEST(ArchConfigErrors, DuplicateKey) {
  const std::string msg = error_of(edit("cols: 8", "cols: 8\n  rows: 32"));
  expect_has(msg, "inline.yaml:6:3: array.rows: duplicate key");
}

TEST(ArchConfigErrors, WrongType) {
  const std::string msg = error_of(edit("rows: 16", "rows: abc"), "cfg.yaml");
  expect_has(msg, "cfg.yaml:4:9: array.rows: expected an integer, got 'abc'");

  expect_has(error_of(edit("rows: 16", "rows: 16.5")), "inline.yaml:4:9: array.rows: expected an integer, got '16.5'");
  expect_has(error_of(edit("clock_mhz: 700", "clock_mhz: fast")), "inline.yaml:2:12: clock_mhz: expected a number, got 'fast'");
  expect_has(error_of(edit("dataflow: ws", "dataflow: ws\n  double_buffered: yes")),
             "inline.yaml:7:20: array.double_buffered: expected true or false, got 'yes'");
  expect_has(error_of(edit("  rows: 16", "  rows: [16]")), "inline.yaml:4:9: array.rows: expected an integer");
  std::string scalar_section = edit("  depth_tiles: 2", "");
  scalar_section.replace(scalar_section.find("weight_fifo:"), 12, "weight_fifo: 4");
  expect_has(error_of(scalar_section), "inline.yaml:11:14: weight_fifo: expected a mapping");
}

TEST(ArchConfigErrors, OutOfRange) {
  expect_has(error_of(edit("rows: 16", "rows: 0"), "r.yaml"), "r.yaml:4:9: array.rows: must be in [1, 4096], got 0");
  expect_has(error_of(edit("cols: 8", "cols: 4097")), "inline.yaml:5:9: array.cols: must be in [1, 4096], got 4097");
  expect_has(error_of(edit("clock_mhz: 700", "clock_mhz: 0")), "inline.yaml:2:12: clock_mhz: must be in (0, 10000], got 0");
  expect_has(error_of(edit("clock_mhz: 700", "clock_mhz: 10001")), "clock_mhz: must be in (0, 10000], got 10001");
  expect_has(error_of(edit("depth_tiles: 2", "depth_tiles: 0")), "inline.yaml:12:16: weight_fifo.depth_tiles: must be in [1, 1024]");
  expect_has(error_of(edit("bandwidth_gb_per_s: 10", "bandwidth_gb_per_s: -1")),
             "inline.yaml:15:23: weight_memory.bandwidth_gb_per_s: must be in (0, ");
  expect_has(error_of(edit("bandwidth_gb_per_s: 10", "bandwidth_gb_per_s: 10\n  latency_ns: -5")),
             "inline.yaml:16:15: weight_memory.latency_ns: must be >= 0, got -5");
  expect_has(error_of(edit("bandwidth_gb_per_s: 10", "bandwidth_gb_per_s: 10\n  channels: 65")),
             "weight_memory.channels: must be in [1, 64], got 65");
  expect_has(error_of(edit("generation: 3", "generation: 7")), "inline.yaml:17:15: pcie.generation: must be in [1, 6], got 7");
  expect_has(error_of(edit("lanes: 4", "lanes: 3")), "inline.yaml:18:10: pcie.lanes: must be one of 1, 2, 4, 8, 16, 32, got 3");
  expect_has(error_of(std::string(kBase) + "  max_payload_bytes: 384\n"),
             "inline.yaml:19:22: pcie.max_payload_bytes: must be a power of two in [128, 4096], got 384");
  expect_has(error_of(std::string(kBase) + "  max_payload_bytes: 64\n"), "pcie.max_payload_bytes: must be in [128, 4096], got 64");
  expect_has(error_of(std::string(kBase) + "  tlp_overhead_bytes: 129\n"), "pcie.tlp_overhead_bytes: must be in [0, 128], got 129");
  expect_has(error_of(edit("entries: 64", "entries: 64\n  width_bits: 8")), "accumulators.width_bits: must be in [16, 64], got 8");
  expect_has(error_of(edit("capacity: 64 KiB", "capacity: 64 KiB\n  read_bytes_per_cycle: 0")),
             "inline.yaml:9:25: unified_buffer.read_bytes_per_cycle: must be >= 1, got 0");
  expect_has(error_of(edit("capacity: 64 KiB", "capacity: 64 KiB\n  write_bytes_per_cycle: 0")),
             "unified_buffer.write_bytes_per_cycle: must be >= 1, got 0");
  expect_has(error_of(std::string(kBase) + "vector_unit: {lanes: 0}\n"), "inline.yaml:19:22: vector_unit.lanes: must be in [1, 1048576], got 0");
  expect_has(error_of(std::string(kBase) + "controller: {queue_depth: 0}\n"), "controller.queue_depth: must be in [1, 1024], got 0");
  expect_has(error_of(std::string(kBase) + "controller: {issue_cycles: 1001}\n"), "controller.issue_cycles: must be in [0, 1000]");
  // Up to 16 MACs per PE per cycle (TPU v5e's int8 is 2 x its bf16 rate).
  expect_has(error_of(edit("dataflow: ws", "dataflow: ws\n  mac_modes: [{a: int8, b: int8, rate: 17}]")),
             "array.mac_modes[0].rate: must be in (0, 16], got 17");
  expect_has(error_of(edit("dataflow: ws", "dataflow: ws\n  mac_modes: [{a: int8, b: int8, rate: 0}]")),
             "array.mac_modes[0].rate: must be in (0, 16], got 0");
}

TEST(ArchConfigErrors, BadChoice) {
  const std::string msg = error_of(edit("dataflow: ws", "dataflow: xs"), "df.yaml");
  expect_has(msg, "df.yaml:6:13: array.dataflow: 'xs' is not one of: ws, os, is");
  expect_has(error_of(std::string(kBase) + "  encoding: 64b66b\n"),
             "inline.yaml:19:13: pcie.encoding: '64b66b' is not one of: 8b10b, 128b130b, flit");
  expect_has(error_of(edit("dataflow: ws", "dataflow: ws\n  mac_modes: [{a: int8, b: int8, rate: 1}, {a: int4, b: int8, rate: 1}]")),
             "array.mac_modes[1].a: 'int4' is not a MAC activation operand type; one of: int8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16");
  expect_has(error_of(edit("dataflow: ws", "dataflow: ws\n  mac_modes: [{a: int8, b: int32, rate: 1}]")),
             "array.mac_modes[0].b: 'int32' is not a MAC weight operand type; one of: int4, int8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16");
}

TEST(ArchConfigErrors, WeightMemoryTechnologyWithoutAModel) {
  // The technology picks the weight-memory model (models/memory/technologies.h).
  const std::string msg = error_of(edit("capacity: 1 MiB", "capacity: 1 MiB\n  technology: SRAM"), "wm.yaml");
  expect_has(msg, "wm.yaml:15:15: weight_memory.technology: 'SRAM' is not a weight-memory technology with a model; "
                  "one of: DRAM, DDR3, DDR4, DDR5, LPDDR4, LPDDR4X, LPDDR5, GDDR6, HBM2, HBM2E, HBM2-PC");
}

TEST(ArchConfigErrors, MissingRequiredKey) {
  const std::string msg = error_of(edit("  cols: 8", ""), "m.yaml");
  expect_has(msg, "m.yaml:4:3: array: missing required key 'cols'");
  expect_has(error_of(edit("name: test", "")), "inline.yaml:1:1: missing required key 'name'");
  expect_has(error_of(edit("  depth_tiles: 2", "  other: 2")), "weight_fifo.other: unknown key");
  expect_has(error_of(edit("  bandwidth_gb_per_s: 10", "")), "inline.yaml:14:3: weight_memory: missing required key 'bandwidth_gb_per_s'");
  expect_has(error_of(edit("dataflow: ws", "dataflow: ws\n  mac_modes: [{a: int8, rate: 1}]")),
             "array.mac_modes[0]: missing required key 'b'");
  // A whole required section.
  std::string no_fifo = kBase;
  no_fifo.erase(no_fifo.find("weight_fifo:"), no_fifo.find("weight_memory:") - no_fifo.find("weight_fifo:"));
  expect_has(error_of(no_fifo), "inline.yaml:1:1: missing required key 'weight_fifo'");
  // pcie is optional (the chip template): without it the chip has no host link.
  std::string no_pcie = kBase;
  no_pcie.erase(no_pcie.find("pcie:"));
  const ArchConfig linkless = parse(no_pcie);
  EXPECT_FALSE(linkless.has_host_link);
  EXPECT_EQ(linkless.residency.inputs, Residency::kDevice);
}

TEST(ArchConfigErrors, UnifiedBufferSmallerThanOneTile) {
  // 16 x 8 array: one input tile plus one output tile = 256 bytes.
  const std::string msg = error_of(edit("capacity: 64 KiB", "capacity: 255"), "ub.yaml");
  expect_has(msg, "ub.yaml:8:13: unified_buffer.capacity: ");
  expect_has(msg, "smaller than one tile");
  expect_has(msg, ">= 256 bytes");
  EXPECT_NO_THROW(parse(edit("capacity: 64 KiB", "capacity: 256")));

  const std::string wm = error_of(edit("capacity: 1 MiB", "capacity: 127"));
  expect_has(wm, "inline.yaml:14:13: weight_memory.capacity: ");
  expect_has(wm, ">= 128 bytes");
}

TEST(ArchConfigErrors, AccumulatorsNeedTwoEntries) {
  const std::string msg = error_of(edit("entries: 64", "entries: 1"));
  expect_has(msg, "inline.yaml:10:12: accumulators.entries: must be >= 2");
  EXPECT_EQ(parse(edit("entries: 64", "entries: 2")).accumulators.entries, 2);
}

TEST(ArchConfigErrors, MacModesNeedOneAndNoDuplicates) {
  // A list without int8 x int8 is a chip of other modes (bf16-only MXUs): its first mode
  // defines the peak. An empty list is an error.
  const ArchConfig int16_only = parse(edit("dataflow: ws", "dataflow: ws\n  mac_modes:\n    - {a: int16, b: int16, rate: 0.25}"));
  EXPECT_EQ(int16_only.array.reference_mode().a, Dtype::kInt16);
  expect_has(error_of(edit("dataflow: ws", "dataflow: ws\n  mac_modes: []")), "array.mac_modes: must list at least one mode");

  const std::string dup = error_of(edit("dataflow: ws",
                                        "dataflow: ws\n"
                                        "  mac_modes:\n"
                                        "    - {a: int8, b: int8, rate: 1.0}\n"
                                        "    - {a: int8, b: int16, rate: 0.5}\n"
                                        "    - {a: int8, b: int16, rate: 0.25}"),
                                   "mm.yaml");
  expect_has(dup, "mm.yaml:10:7: array.mac_modes[2]: duplicate mode int8 x int16 (already given at array.mac_modes[1])");
}

TEST(ArchConfigErrors, ByteSizeWithBadUnit) {
  const std::string msg = error_of(edit("capacity: 64 KiB", "capacity: 64 KiBs"), "b.yaml");
  expect_has(msg, "b.yaml:8:13: unified_buffer.capacity: unknown size unit 'KiBs'");
  expect_has(error_of(edit("capacity: 1 MiB", "capacity: lots")), "inline.yaml:14:13: weight_memory.capacity: expected a size");
  expect_has(error_of(edit("capacity: 1 MiB", "capacity: 1.5 B")), "weight_memory.capacity: size must be a whole");
}

TEST(ArchConfigErrors, YamlSyntaxError) {
  const std::string msg = error_of(edit("cols: 8", "cols: [8"), "syn.yaml");
  expect_has(msg, "syn.yaml:");
  expect_has(msg, "YAML syntax error");
  // The error mark is on or just after the bad line.
  const size_t colon = std::string("syn.yaml:").size();
  const int line = std::stoi(msg.substr(colon));
  EXPECT_GE(line, 5);
  EXPECT_LE(line, 6);
}

TEST(ArchConfigErrors, MissingFile) {
  const auto path = kConfigs / "no-such-config.yaml";
  try {
    load_arch_config(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    expect_has(msg, path.string());
    expect_has(msg, "cannot open file");
  }
}

TEST(ArchConfigErrors, NotAMapping) {
  expect_has(error_of("- 1\n- 2\n", "list.yaml"), "list.yaml:1:1: expected a mapping");
  expect_has(error_of(edit("name: test", "name: ''")), "inline.yaml:1:7: name: must not be empty");
}

}  // namespace
}  // namespace tessera
