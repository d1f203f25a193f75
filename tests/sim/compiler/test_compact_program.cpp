// The compact program (issue 19): compiling with repeats folded gives exactly the
// instructions of the expanded program, on every shipped config x workload, on spills and
// row tiles, and on the small-array GEMM case; the listing has both forms.
#include <gtest/gtest.h>

#include <filesystem>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::compiler;

namespace {

const std::filesystem::path kSrc = TESSERA_SOURCE_DIR;

void expect_same_program(const Program& compact, const Program& expanded, const std::string& what) {
  ASSERT_EQ(compact.instructions.size(), expanded.instructions.size()) << what;
  EXPECT_EQ(expanded.instructions.items().size(), expanded.instructions.size()) << what;  // no repeats
  EXPECT_EQ(compact.weight_bytes_read, expanded.weight_bytes_read) << what;
  size_t i = 0;
  auto e = expanded.instructions.begin();
  for (const Instruction& a : compact.instructions) {
    const Instruction& b = *e;
    ASSERT_EQ(a.text(), b.text()) << what << " instruction " << i;
    ASSERT_EQ(a.layer, b.layer) << what << " " << i;
    ASSERT_EQ(a.weight_tiles, b.weight_tiles) << what << " " << i;
    ASSERT_EQ(a.ub_read_bytes, b.ub_read_bytes) << what << " " << i;
    ASSERT_EQ(a.ub_write_bytes, b.ub_write_bytes) << what << " " << i;
    ASSERT_EQ(a.element_bytes, b.element_bytes) << what << " " << i;
    ASSERT_EQ(a.weight_source, b.weight_source) << what << " " << i;
    ASSERT_EQ(std::vector<Region>(a.reads.begin(), a.reads.end()), std::vector<Region>(b.reads.begin(), b.reads.end()))
        << what << " " << i;
    ASSERT_EQ(std::vector<Region>(a.writes.begin(), a.writes.end()), std::vector<Region>(b.writes.begin(), b.writes.end()))
        << what << " " << i;
    ++e;
    ++i;
  }
  EXPECT_EQ(i, expanded.instructions.size());
  EXPECT_EQ(compact.listing(), expanded.listing()) << what;
}

graph::Graph load(const std::filesystem::path& p) { return graph::parse_graph_yaml(YamlNode::load_file(p)); }

}  // namespace

TEST(CompactProgram, SameInstructionsAsTheExpandedProgramOnEveryShippedPair) {
  std::vector<std::filesystem::path> workloads = {kSrc / "workloads/bert_layer.yaml"};
  for (const char* app : {"mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1"}) {
    workloads.push_back(kSrc / "workloads/tpu" / (std::string(app) + ".yaml"));
  }
  for (const auto& entry : std::filesystem::directory_iterator(kSrc / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    const ArchConfig arch = load_arch_config(entry.path());
    for (const auto& w : workloads) {
      const graph::Graph g = load(w);
      const std::string what = entry.path().filename().string() + " x " + w.filename().string();
      Program compact, expanded;
      try {
        compact = compile(g, arch);
      } catch (const InputError&) {
        // Refused (too many instructions): refused alike.
        EXPECT_THROW(compile(g, arch, {.compact = false}), InputError) << what;
        continue;
      }
      if (compact.instructions.size() >= (size_t{1} << 20)) {
        // More instructions than an expanded program may store (cnn1 on the 32x32 array):
        // the compact program folds them; the expanded one is refused.
        EXPECT_THROW(compile(g, arch, {.compact = false}), InputError) << what;
        continue;
      }
      expanded = compile(g, arch, {.compact = false});
      expect_same_program(compact, expanded, what);
      EXPECT_LT(compact.instructions.items().size(), compact.instructions.size()) << what;
    }
  }
}

TEST(CompactProgram, SpillsAndRowTilesAndPasses) {
  // A batch that runs in passes on tpu-v1's 24 MiB buffer would take minutes here; the
  // same lowering paths on a tiny config: passes (not all 8 samples fit at once), spills and
  // row tiles (one sample does not fit).
  test_support::TinyArch t;
  t.ub_capacity = "1024";
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(R"(
name: passes
batch: 8
inputs: [{name: x, shape: [64]}]
layers:
  - {name: fc1, op: fc, units: 256, activation: relu}
  - {name: fc2, op: fc, units: 64}
)",
                                                                        "g.yaml"));
  const Program c = compile(g, t.build());
  EXPECT_LT(c.sub_batch, c.batch);
  expect_same_program(c, compile(g, t.build(), {.compact = false}), "passes");

  t.ub_capacity = "160";
  const graph::Graph s = graph::parse_graph_yaml(YamlNode::load_string(R"(
name: rows
inputs: [{name: x, shape: [16, 8]}]
layers:
  - {name: a, op: relu}
  - {name: b, op: relu}
  - {name: c, op: add, inputs: [a, b]}
)",
                                                                        "g.yaml"));
  const Program sp = compile(s, t.build());
  EXPECT_GT(sp.spill_bytes_out + sp.spill_bytes_in, 0u);
  expect_same_program(sp, compile(s, t.build(), {.compact = false}), "spills");
}

TEST(CompactProgram, SmallArrayGemmsFoldIntoAFewRepeats) {
  // bench/gnmt_gemms.yaml on a 32x32 output-stationary array: 676,692 instructions.
  const ArchConfig arch = load_arch_config(kSrc / "bench/edge-os-32.yaml");
  const Program p = compile(load(kSrc / "bench/gnmt_gemms.yaml"), arch);
  EXPECT_EQ(p.instructions.size(), 676692u);
  // 16 identical LSTM gate layers fold into one repeat (the layer index steps by one), the
  // vocabulary projection into another: a few dozen templates in all.
  EXPECT_LT(p.instructions.items().size(), 40u);
  EXPECT_LT(p.instructions.templates(), 100u);
  size_t n = 0;
  for (auto it = p.instructions.begin(); it != p.instructions.end(); ++it) n += it->op == Opcode::kReadWeights;
  // The 17 layers' 32x32 weight tiles, (16 x 2048 x 4096 + 1024 x 32000) / 1024, fetched
  // again for each of the 4 row tiles of 32 of the batch of 128 (os streams K whole).
  EXPECT_EQ(n, 4u * 163072u);
  const std::string compact = p.compact_listing();
  EXPECT_NE(compact.find("repeat 15 {"), std::string::npos) << compact.substr(0, 4000);
  EXPECT_NE(compact.find("; step dram=+131072"), std::string::npos);
  EXPECT_LT(compact.size(), 20000u);
}
