// Property: every matmul tile the compiler emits fits the array under the configured
// dataflow (tile_fits), stays within the accumulator half and row it writes, and takes
// its weights in FIFO tiles of at most one array tile each.
// Checked for every shipped config under every registered dataflow, on the shipped
// YAML workloads and on small graphs that exercise each matrix lowering.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/array/dataflow.h"
#include "models/array/systolic_timing.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;

namespace {

const std::filesystem::path kSource = TESSERA_SOURCE_DIR;

// Counts the matmul tiles checked; fails the test on the first one that does not fit.
int64_t check_tiles(const compiler::Program& p, const ArchConfig& arch, const std::string& what) {
  const array::ArrayDims dims{arch.array.rows, arch.array.cols};
  const int64_t acc_half = std::max<int64_t>(1, arch.accumulators.entries / 2);
  int64_t n = 0;
  for (const auto& in : p.instructions) {
    if (in.op != compiler::Opcode::kMatmul) continue;
    const auto& t = in.tile;
    const std::string tile = what + " tile m=" + std::to_string(t.m) + " k=" + std::to_string(t.k) + " n=" +
                             std::to_string(t.n);
    EXPECT_TRUE(array::tile_fits(arch.array.dataflow, dims, t)) << tile;
    // One accumulator half holds acc_half rows of array.cols sums: ws and os write m rows
    // of n sums, is writes n rows (one per streamed column of B) of m sums.
    const bool is = arch.array.dataflow == array::Dataflow::kInputStationary;
    EXPECT_LE(is ? t.n : t.m, acc_half) << tile;
    EXPECT_LE(is ? t.m : t.n, arch.array.cols) << tile;
    // The weights arrive in FIFO tiles of at most rows x cols, one read_weights each.
    EXPECT_EQ(in.weight_tiles, ((t.k + dims.rows - 1) / dims.rows) * ((t.n + dims.cols - 1) / dims.cols)) << tile;
    if (::testing::Test::HasFailure()) return n;
    ++n;
  }
  return n;
}

const char* kMatrixOps = R"(
name: matrix_ops
batch: 3
inputs: [{name: x, shape: [9, 9, 5]}, {name: q, shape: [7, 11]}, {name: r, shape: [11, 6]}]
layers:
  - {name: conv, input: x, op: conv2d, filters: 13, kernel: 3, padding: same, activation: relu}
  - {name: dw, op: conv2d, filters: 13, kernel: 3, groups: 13, padding: same}
  - {name: up, op: conv_transpose2d, filters: 6, kernel: 2, stride: 2}
  - {name: flat, op: flatten}
  - {name: fc, op: fc, units: 19}
  - {name: mm, op: matmul, inputs: [q, r]}
)";

}  // namespace

TEST(CompilerTileProperty, ShippedConfigsAndWorkloadsUnderEveryDataflow) {
  std::vector<std::filesystem::path> workloads = {kSource / "workloads/bert_layer.yaml"};
  for (const char* w : {"mlp0.yaml", "mlp1.yaml", "lstm0.yaml", "lstm1.yaml", "cnn0.yaml"}) {
    if (std::filesystem::exists(kSource / "workloads/tpu" / w)) workloads.push_back(kSource / "workloads/tpu" / w);
  }
  int64_t tiles = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSource / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    const ArchConfig shipped = load_arch_config(entry.path());
    for (const auto& model : array::dataflows().all()) {
      ArchConfig arch = shipped;
      arch.array.dataflow = model->id();
      for (const auto& w : workloads) {
        compiler::CompileOptions opt;
        opt.batch = 1;
        const std::string what = entry.path().filename().string() + " " + std::string(model->name()) + " " +
                                 w.filename().string();
        tiles += check_tiles(compiler::compile(graph::load_graph_yaml(w), arch, opt), arch, what);
        if (HasFailure()) return;
      }
    }
  }
  EXPECT_GT(tiles, 10000);
}

TEST(CompilerTileProperty, SmallArraysEveryMatrixLowering) {
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(kMatrixOps, "matrix_ops.yaml"));
  int64_t tiles = 0;
  for (const auto& model : array::dataflows().all()) {
    for (auto [rows, cols, entries] : {std::tuple{4, 4, 64}, {3, 5, 4}, {5, 3, 2}, {8, 2, 6}}) {
      test_support::TinyArch t;
      t.rows = rows, t.cols = cols, t.accumulator_entries = entries, t.dataflow = std::string(model->name());
      const ArchConfig arch = t.build();
      const std::string what = std::string(model->name()) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                               " acc " + std::to_string(entries);
      tiles += check_tiles(compiler::compile(g, arch), arch, what);
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(tiles, 1000);
}
