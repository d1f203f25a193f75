// The stored-template bound of a program that runs in passes (issue 33 item 4): the
// templates are projected from the first passes (sim/compiler/pass_templates.h), the
// projection is exact on every shipped config x workload, a program over the bound is
// refused after its first passes with the batch that fits, and nothing that fits is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/compiler/pass_templates.h"
#include "sim/config/arch_config.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::compiler;

namespace {

const std::filesystem::path kSrc = TESSERA_SOURCE_DIR;

graph::Graph load(const std::filesystem::path& p) { return graph::parse_graph_yaml(YamlNode::load_file(p)); }

graph::Graph parse(const std::string& yaml) { return graph::parse_graph_yaml(YamlNode::load_string(yaml, "g.yaml")); }

std::string refusal(const graph::Graph& g, const ArchConfig& arch, const CompileOptions& o) {
  try {
    compile(g, arch, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// x[8] -> fc 4 (relu) on a 4x4 weight-stationary array whose 48-byte unified buffer holds
// 4 samples (8 input + 4 output bytes each): passes of 4.
const char* kSmallFc = R"(
name: small
batch: 1
inputs: [{name: x, shape: [8]}]
layers:
  - {name: fc, op: fc, units: 4, activation: relu}
outputs: [fc]
)";

test_support::TinyArch small_arch() {
  test_support::TinyArch t;
  t.ub_capacity = "48";
  return t;
}

}  // namespace

// Hand-derived: K = 8 is two 4-row weight tiles, N = 4 one column tile, so a pass's m tile
// is read_weights x 2, matmul x 2 (overwrite, accumulate), one activate, with the input read
// and the output written by PCIe, and a halt at the end.
TEST(PassTemplates, HandDerivedCountsOnASmallGraph) {
  const ArchConfig arch = small_arch().build();
  const graph::Graph g = parse(kSmallFc);
  // Batch 1: one pass. The two weight reads differ by a stride (dram +16): one repeat of one
  // template; then read_host, matmul, matmul (accumulate: not the same instruction shape),
  // activate, write_host, halt: 7 templates in 7 top-level items.
  const Program one = compile(g, arch, {.batch = 1});
  EXPECT_EQ(one.sub_batch, 1);
  EXPECT_EQ(one.instructions.size(), 8u);
  EXPECT_EQ(one.instructions.templates(), 7u);
  EXPECT_EQ(one.instructions.items().size(), 7u);
  // Batch 12: passes of 4. Pass 1: the first two passes' weight reads, prefetched to the
  // FIFO's depth of 4 (a repeat of 2 of a repeat of 2 reads stepping dram by +16: 1
  // template), read_host, matmul, the third pass's first read, matmul, its second read,
  // activate: 7. Passes 2 and 3 (write_host of the pass before, read_host, 2 matmuls,
  // activate): 5 each. They do not fold into one repeat: the second pass numbers its
  // regions' rows after the first pass's (Lowering::pass_row_shift_samples_), so the regions
  // of the bytes each overwrites, its writes' shared tails, differ from the third's. The last
  // write_host and the halt: 2. 7 + 5 + 5 + 2 = 19.
  const Program passes = compile(g, arch, {.batch = 12});
  EXPECT_EQ(passes.sub_batch, 4);
  EXPECT_EQ(passes.instructions.size(), 22u);
  EXPECT_EQ(passes.instructions.templates(), 19u);
  // Batch 400 (100 passes): the first pass as above (7), then passes 2 to 97 fold into a
  // repeat of 48 of two passes, each write_host, read_host, matmul, read_weights, matmul,
  // read_weights, activate (7 + 7: the rows' shift repeats every other pass), the last three
  // passes' instructions with the reads no longer ahead (the same 7; write_host, read_host,
  // matmul, matmul, activate twice: 5 + 5; write_host and halt: 2): 7 + 14 + 7 + 5 + 5 + 2
  // = 40. Two passes are 14 items, fewer than a repeat's body may have, so passes fold into
  // repeats of passes and the templates do not grow with the batch: nothing is projected.
  const Program many = compile(g, arch, {.batch = 400});
  EXPECT_EQ(many.instructions.templates(), 40u);
  EXPECT_EQ(compile(g, arch, {.batch = 4000}).instructions.templates(), 40u);
  EXPECT_EQ(many.templates_projected, 0u);
  // So a bound just above them refuses nothing (5 more per pass from the first passes would
  // have projected about 5,000 at batch 4000).
  EXPECT_NO_THROW(compile(g, arch, {.batch = 4000, .max_stored_templates = 41}));
  EXPECT_THROW(compile(g, arch, {.batch = 4000, .max_stored_templates = 20}), InputError);
}

// The arithmetic of the projection, on the passes measured for CNN1 on tpu-v1 (one matrix
// unit, passes of 55) and for the BERT layer on tpu-v4 (8 matrix units: the templates a
// pass adds repeat every 4 passes, within the period of 2 x 8).
TEST(PassTemplates, ProjectionArithmetic) {
  PassTemplates one(1819, 1);
  one.end_pass(3640, 1000);
  EXPECT_FALSE(one.can_project());
  one.end_pass(3640 + 3644, 2000);
  ASSERT_TRUE(one.can_project());
  EXPECT_EQ(one.after_pass(2), 7284u);
  EXPECT_EQ(one.after_pass(1818), 3640u + 1817u * 3644u);  // 6,624,788
  EXPECT_DOUBLE_EQ(one.per_pass(), 3644.0);
  // 3640 + 287 x 3644 = 1,049,468 >= 2^20 > 3640 + 286 x 3644 = 1,045,824.
  EXPECT_EQ(one.first_pass_reaching(uint64_t{1} << 20), 288);
  EXPECT_EQ(one.first_pass_reaching(uint64_t{1} << 40), 0);

  PassTemplates four(100, 4);
  const uint64_t deltas[] = {2080, 2100, 2104, 2092};
  uint64_t t = 2012, items = 500;
  four.end_pass(t, items);
  for (uint64_t d : deltas) {
    EXPECT_FALSE(four.can_project());
    four.end_pass(t += d, items += 100);
  }
  ASSERT_TRUE(four.can_project());
  EXPECT_EQ(four.after_pass(5), 2012u + 8376u);
  EXPECT_EQ(four.after_pass(6), 2012u + 8376u + 2080u);
  EXPECT_EQ(four.after_pass(8), 2012u + 8376u + 2080u + 2100u + 2104u);
  EXPECT_EQ(four.after_pass(13), 2012u + 3u * 8376u);
  EXPECT_DOUBLE_EQ(four.per_pass(), 2094.0);

  // A pass that adds no more top-level items than a repeat's body may have can fold into the
  // one before it: not projected.
  PassTemplates short_passes(100, 1);
  short_passes.end_pass(7, 7);
  short_passes.end_pass(12, 7 + isa::InstructionStream::kMaxBody);
  EXPECT_FALSE(short_passes.can_project());
}

// Every shipped config x workload at a batch of more passes than its period plus two: the
// templates projected for the end of the second-to-last pass are the templates stored there.
// A projection no lower than the real count refuses nothing that would run; an exact one
// refuses exactly what the bound refuses, only earlier.
TEST(PassTemplates, ProjectionIsExactOnEveryShippedPair) {
  std::vector<std::filesystem::path> workloads = {kSrc / "workloads/bert_layer.yaml"};
  for (const char* app : {"mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1"}) {
    workloads.push_back(kSrc / "workloads/tpu" / (std::string(app) + ".yaml"));
  }
  int projected = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSrc / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    const ArchConfig arch = load_arch_config(entry.path());
    const int64_t period = arch.active_matrix_units() == 1 ? 1 : 2 * arch.active_matrix_units();
    for (const auto& w : workloads) {
      const graph::Graph g = load(w);
      const std::string what = entry.path().filename().string() + " x " + w.filename().string();
      // Pairs whose pass holds 512 samples or more are left out (these apps' passes would take
      // minutes here).
      const int64_t sub = samples_per_pass(g, arch, 512);
      if (sub == 512) continue;

      const int64_t batch = sub * (period + 3) + 1;  // a partial last pass
      const Program p = compile(g, arch, {.batch = batch});
      ASSERT_GT(p.templates_measured, 0u) << what;
      EXPECT_EQ(p.templates_projected, p.templates_measured) << what << " at batch " << batch;
      EXPECT_LE(p.templates_measured, p.instructions.templates()) << what;
      ++projected;
    }
  }
  EXPECT_GE(projected, 30);  // 31 of the 63 pairs run these apps in passes by 512 samples
}

// Over the bound: refused after the first passes, naming the workload, the batch, the layer
// where the bound would be reached and the split that fits; the suggested batch compiles
// under the same bound and one more pass does not.
TEST(PassTemplates, OverTheBoundIsRefusedAfterTheFirstPassesWithTheSplit) {
  const ArchConfig arch = load_arch_config(kSrc / "configs/tpu-v1.yaml");
  const graph::Graph g = load(kSrc / "workloads/tpu/cnn1.yaml");
  // Passes of 55: 3,640 templates after the first, 3,644 per pass after it. A bound of
  // 20,000 is reached in pass 6 (3,640 + 4 x 3,644 = 18,216 < 20,000 <= 21,860); with the
  // 256 kept for a run's tail, 5 passes fit (18,216 + 256 < 20,000): batch 275.
  const std::string msg = refusal(g, arch, {.batch = 5500, .max_stored_templates = 20000});
  EXPECT_TRUE(contains(msg, "workload 'cnn1' at batch 5500 (in passes of 55) on 'tpu-v1' would store about 364396 "
                            "instruction templates"))
      << msg;  // 3,640 + 99 x 3,644
  EXPECT_TRUE(contains(msg, "about 3644 per pass of 55 samples, projected from the first 2 of 100 passes")) << msg;
  EXPECT_TRUE(contains(msg, "more than the 20000 one program may store")) << msg;
  EXPECT_TRUE(contains(msg, "a limit of the simulator, not of the chip")) << msg;
  EXPECT_TRUE(contains(msg, "it would reach them in pass 6, at layer '")) << msg;
  EXPECT_TRUE(contains(msg, "the largest batch that fits is 275 (5 passes): split the batch into 20 runs of at most 275 "
                            "samples"))
      << msg;
  EXPECT_NO_THROW(compile(g, arch, {.batch = 275, .max_stored_templates = 20000}));
  EXPECT_THROW(compile(g, arch, {.batch = 330, .max_stored_templates = 20000}), InputError);
  // The projection counts no more than the bound would: a bound just above the real count
  // of 100 passes compiles them all.
  const Program all = compile(g, arch, {.batch = 5500});
  EXPECT_NO_THROW(compile(g, arch, {.batch = 5500, .max_stored_templates = all.instructions.templates() + 1}));
}
