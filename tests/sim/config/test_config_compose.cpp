// Config composition (`base:`, YamlNode::load_composed, docs/configs.md "Composition"): small
// hand-written files in a temporary directory; every expected value and file:line:col is read
// off the texts below.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"

namespace fs = std::filesystem;

namespace tessera {
namespace {

// A complete, valid config (line numbers are asserted below).
const char* const kFull =
    "name: base\n"                                   // 1
    "clock_mhz: 700\n"                               // 2
    "array:\n"                                       // 3
    "  rows: 16\n"                                   // 4
    "  cols: 8\n"                                    // 5
    "  dataflow: ws\n"                               // 6
    "  mac_modes:\n"                                 // 7
    "    - {a: int8, b: int8, rate: 1.0}\n"          // 8
    "    - {a: int16, b: int16, rate: 0.25}\n"       // 9
    "unified_buffer:\n"                              // 10
    "  capacity: 64 KiB\n"                           // 11
    "accumulators:\n"                                // 12
    "  entries: 64\n"                                // 13
    "weight_fifo:\n"                                 // 14
    "  depth_tiles: 2\n"                             // 15
    "weight_memory:\n"                               // 16
    "  capacity: 1 MiB\n"                            // 17
    "  bandwidth_gb_per_s: 10\n"                     // 18
    "pcie:\n"                                        // 19
    "  generation: 3\n"                              // 20
    "  lanes: 4\n"                                   // 21
    "controller:\n"                                  // 22
    "  queue_depth: 8\n";                            // 23

class Compose : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(TESSERA_BINARY_DIR) / "test-out" / "compose" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  }
  static std::string arch_error(const fs::path& p) {
    return error_of([&] { load_arch_config(p); });
  }
  fs::path dir_;
};

TEST_F(Compose, ScalarOverrideAndBaseKeyDropped) {
  write("base.yaml", kFull);
  const auto top = YamlNode::load_composed(write("top.yaml", "base: base.yaml\nname: derived\n"));
  EXPECT_EQ(top.at("name").as_string(), "derived");
  EXPECT_EQ(top.at("name").file(), at("top.yaml"));
  EXPECT_EQ(top.at("clock_mhz").as_int(), 700);
  EXPECT_EQ(top.at("clock_mhz").file(), at("base.yaml"));
  EXPECT_FALSE(top.has("base"));
  EXPECT_EQ(top.file(), at("top.yaml"));
  // The base's keys in its order; nothing new was added.
  EXPECT_EQ(top.keys(), (std::vector<std::string>{"name", "clock_mhz", "array", "unified_buffer", "accumulators",
                                                  "weight_fifo", "weight_memory", "pcie", "controller"}));
  const ArchConfig cfg = load_arch_config(dir_ / "top.yaml");
  EXPECT_EQ(cfg.name, "derived");
  EXPECT_EQ(cfg.source, at("top.yaml"));
  EXPECT_EQ(cfg.array.rows, 16);
}

TEST_F(Compose, MapsMergeKeyByKey) {
  write("base.yaml", kFull);
  write("top.yaml", "base: base.yaml\narray:\n  rows: 32\n  double_buffered: false\n");
  const auto array = YamlNode::load_composed(dir_ / "top.yaml").at("array");
  // rows replaced in place, cols/dataflow/mac_modes kept, the new key appended.
  EXPECT_EQ(array.keys(), (std::vector<std::string>{"rows", "cols", "dataflow", "mac_modes", "double_buffered"}));
  EXPECT_EQ(array.at("rows").as_int(), 32);
  EXPECT_EQ(array.at("rows").location(), at("top.yaml") + ":3:9");
  EXPECT_EQ(array.at("cols").as_int(), 8);
  EXPECT_EQ(array.at("cols").location(), at("base.yaml") + ":5:9");
  EXPECT_EQ(array.at("double_buffered").location(), at("top.yaml") + ":4:20");
  const ArchConfig cfg = load_arch_config(dir_ / "top.yaml");
  EXPECT_EQ(cfg.array.rows, 32);
  EXPECT_EQ(cfg.array.cols, 8);
  EXPECT_FALSE(cfg.array.double_buffered);
}

TEST_F(Compose, SequencesReplaceWholeAndNullRemoves) {
  write("base.yaml", kFull);
  write("top.yaml",
        "base: base.yaml\n"
        "array:\n"
        "  mac_modes:\n"
        "    - {a: int8, b: int8, rate: 0.5}\n"
        "controller: ~\n");
  const auto top = YamlNode::load_composed(dir_ / "top.yaml");
  const auto modes = top.at("array").at("mac_modes").elements();
  ASSERT_EQ(modes.size(), 1u);  // not the base's two, not three
  EXPECT_EQ(modes[0].at("rate").as_double(), 0.5);
  EXPECT_EQ(modes[0].at("rate").location(), at("top.yaml") + ":4:32");
  EXPECT_FALSE(top.has("controller"));
  const ArchConfig cfg = load_arch_config(dir_ / "top.yaml");
  ASSERT_EQ(cfg.array.mac_modes.size(), 1u);
  EXPECT_EQ(cfg.array.mac_modes[0].rate, 0.5);
}

TEST_F(Compose, ChainOfThreeWithRelativePaths) {
  write("chips/a.yaml", kFull);
  write("chips/b.yaml", "base: a.yaml\nclock_mhz: 940\nweight_memory:\n  bandwidth_gb_per_s: 20\n");
  write("variants/c.yaml", "# c\nbase: ../chips/b.yaml\nname: c\nweight_memory:\n  capacity: 2 MiB\n");
  std::vector<fs::path> files;
  const auto top = YamlNode::load_composed(dir_ / "variants/c.yaml", &files);
  EXPECT_EQ(files, (std::vector<fs::path>{dir_ / "variants/c.yaml", dir_ / "variants/../chips/b.yaml",
                                          dir_ / "variants/../chips/a.yaml"}));
  EXPECT_EQ(top.at("name").file(), at("variants/c.yaml"));
  EXPECT_EQ(top.at("clock_mhz").file(), (dir_ / "variants/../chips/b.yaml").string());
  EXPECT_EQ(top.at("array").at("rows").file(), (dir_ / "variants/../chips/a.yaml").string());
  const auto wm = top.at("weight_memory");
  EXPECT_EQ(wm.at("capacity").location(), at("variants/c.yaml") + ":5:13");
  EXPECT_EQ(wm.at("bandwidth_gb_per_s").location(), (dir_ / "variants/../chips/b.yaml").string() + ":4:23");
  const ArchConfig cfg = load_arch_config(dir_ / "variants/c.yaml");
  EXPECT_EQ(cfg.name, "c");
  EXPECT_EQ(cfg.clock_mhz, 940);
  EXPECT_EQ(cfg.weight_memory.capacity_bytes, 2u << 20);
  EXPECT_EQ(cfg.weight_memory.bandwidth_gb_per_s, 20);
  EXPECT_EQ(cfg.array.rows, 16);
}

TEST_F(Compose, CycleOfTwoIsOneErrorListingTheChain) {
  write("a.yaml", "base: b.yaml\nname: a\n");
  write("b.yaml", "name: b\nbase: a.yaml\n");
  EXPECT_EQ(arch_error(dir_ / "a.yaml"), at("b.yaml") + ":2:7: base: config bases form a cycle: " + at("a.yaml") +
                                             " -> " + at("b.yaml") + " -> " + at("a.yaml"));
}

TEST_F(Compose, SelfCycle) {
  write("a.yaml", "base: ./a.yaml\n");
  EXPECT_EQ(arch_error(dir_ / "a.yaml"),
            at("a.yaml") + ":1:7: base: config bases form a cycle: " + at("a.yaml") + " -> " + at("./a.yaml"));
}

TEST_F(Compose, MissingBaseNamesTheReferencingFileAndLine) {
  write("top.yaml", "# a variant\nbase: nope.yaml\nname: x\n");
  EXPECT_EQ(arch_error(dir_ / "top.yaml"), at("top.yaml") + ":2:7: base: no such config file '" + at("nope.yaml") + "'");
  write("empty.yaml", "base: ''\n");
  EXPECT_EQ(arch_error(dir_ / "empty.yaml"),
            at("empty.yaml") + ":1:7: base: expected the path of a config file to start from");
}

TEST_F(Compose, RepeatedBaseIsAnErrorAtTheSecond) {
  write("b.yaml", kFull);
  write("top.yaml", "base: b.yaml\nname: x\nbase: b.yaml\n");
  EXPECT_EQ(arch_error(dir_ / "top.yaml"), at("top.yaml") + ":3:1: base: duplicate key: a config names at most one base");
}

TEST_F(Compose, ChainLongerThanTheBoundIsAnError) {
  write("f0.yaml", kFull);
  for (int i = 1; i <= YamlNode::kMaxBaseChain; ++i) {
    write("f" + std::to_string(i) + ".yaml", "base: f" + std::to_string(i - 1) + ".yaml\n");
  }
  // 16 files (f15 .. f0) load; 17 do not.
  EXPECT_NO_THROW(load_arch_config(dir_ / "f15.yaml"));
  const std::string err = arch_error(dir_ / "f16.yaml");
  EXPECT_EQ(err.rfind(at("f1.yaml") + ":1:7: base: a chain of config bases may hold at most 16 files: " + at("f16.yaml") +
                          " -> " + at("f15.yaml"),
                      0),
            0u)
      << err;
}

TEST_F(Compose, ErrorInTheBaseIsLocatedInTheBase) {
  std::string bad = kFull;
  bad.replace(bad.find("rows: 16"), 8, "rows: 0");
  write("base.yaml", bad);
  write("top.yaml", "base: base.yaml\nname: top\n");
  EXPECT_EQ(arch_error(dir_ / "top.yaml"), at("base.yaml") + ":4:9: array.rows: must be in [1, 4096], got 0");
}

TEST_F(Compose, ErrorInTheDerivedFileIsLocatedThere) {
  write("base.yaml", kFull);
  write("top.yaml", "base: base.yaml\nname: top\narray:\n  cols: 4097\n");
  EXPECT_EQ(arch_error(dir_ / "top.yaml"), at("top.yaml") + ":4:9: array.cols: must be in [1, 4096], got 4097");
}

TEST_F(Compose, UnknownKeyNamesTheFileThatWroteIt) {
  std::string typo = kFull;
  typo.replace(typo.find("  cols: 8"), 9, "  colz: 8");
  write("base.yaml", typo);
  write("top.yaml", "base: base.yaml\narray:\n  rows: 32\n");
  std::string err = arch_error(dir_ / "top.yaml");
  EXPECT_EQ(err.rfind(at("base.yaml") + ":5:3: array.colz: unknown key; allowed here: ", 0), 0u) << err;
  write("base.yaml", kFull);
  write("top.yaml", "base: base.yaml\narray:\n  rows: 32\n  rowz: 3\n");
  err = arch_error(dir_ / "top.yaml");
  EXPECT_EQ(err.rfind(at("top.yaml") + ":4:3: array.rowz: unknown key; allowed here: ", 0), 0u) << err;
}

TEST_F(Compose, PlainFileIsLoadFile) {
  write("plain.yaml", kFull);
  const auto a = YamlNode::load_composed(dir_ / "plain.yaml");
  EXPECT_EQ(a.at("array").at("cols").location(), at("plain.yaml") + ":5:9");
  EXPECT_EQ(a.keys(), YamlNode::load_file(dir_ / "plain.yaml").keys());
}

// The shipped variant states only what differs from TPU v1 and composes to the HBM what-if.
TEST(ComposeShipped, TpuV1HbmIsTpuV1WithAnHbmWeightMemory) {
  const fs::path configs = fs::path(TESSERA_SOURCE_DIR) / "configs";
  const ArchConfig v1 = load_arch_config(configs / "tpu-v1.yaml");
  const ArchConfig hbm = load_arch_config(configs / "tpu-v1-hbm.yaml");
  EXPECT_EQ(hbm.name, "tpu-v1-hbm");
  EXPECT_EQ(hbm.weight_memory.technology, "HBM2-PC");
  EXPECT_EQ(hbm.weight_memory.bandwidth_gb_per_s, 256);
  EXPECT_EQ(hbm.weight_memory.channels, 8);
  EXPECT_EQ(hbm.array.rows, v1.array.rows);
  EXPECT_EQ(hbm.unified_buffer.capacity_bytes, v1.unified_buffer.capacity_bytes);
  EXPECT_EQ(hbm.pcie.lanes, v1.pcie.lanes);
}

}  // namespace
}  // namespace tessera
