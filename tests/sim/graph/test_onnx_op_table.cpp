// The ONNX op table (sim/graph/onnx/op_table.h, issue 32): one row per op, every row that
// dispatch reaches has its arity checked, and element-wise folding goes through the IR
// OpDef's fp32 kernel (no second copy of the functions in the importer).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sim/graph/onnx/const_fold.h"
#include "sim/graph/onnx/op_table.h"
#include "sim/graph/onnx_importer.h"
#include "sim/graph/ops/registry.h"
#include "tests/support/onnx_model.h"

using namespace tessera;
using namespace tessera::graph;
using namespace tessera::graph::onnx_import;
using test_support::Model;

namespace {

std::string import_error(Model& m, const std::string& file) {
  try {
    load_onnx(m.save(file), {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OnnxOpTable, EveryOpHasExactlyOneRow) {
  std::map<std::string, int> rows;
  for (const OnnxOp& r : onnx_op_table()) ++rows[std::string(r.name)];
  for (const auto& [name, n] : rows) EXPECT_EQ(n, 1) << name;
  // Every op the unsupported-node message lists as handled has its row.
  for (const std::string& op : onnx_supported_ops()) {
    ASSERT_NE(find_onnx_op(op), nullptr) << op;
    EXPECT_NE(find_onnx_op(op)->handle, nullptr) << op;
  }
  EXPECT_EQ(find_onnx_op("Det"), nullptr);
}

TEST(OnnxOpTable, EveryDispatchedRowHasItsArity) {
  for (const OnnxOp& r : onnx_op_table()) {
    const std::string name(r.name);
    if (!r.handled()) {
      // Not dispatched: host work (absorbed before dispatch) or a row that only says how
      // an op's axes are used (RNN); either way no handler and no folding.
      EXPECT_TRUE(r.host || r.batch != BatchRule::kStops) << name;
      continue;
    }
    EXPECT_FALSE(r.host) << name;
    EXPECT_GE(r.arity.min, 0) << name;
    EXPECT_LE(r.arity.min, r.arity.max) << name;
    if (r.legacy_until > 0) {
      EXPECT_GE(r.legacy_arity.min, 0) << name;
      EXPECT_LE(r.legacy_arity.min, r.legacy_arity.max) << name;
    }
  }
}

// Element-wise folding reads the OpDef's kernel: a unary row's IR op has a unary kernel
// (or a binary one with the row's scalar: Neg, Reciprocal), a binary row's a binary one.
TEST(OnnxOpTable, ElementwiseFoldingUsesTheOpDefKernel) {
  int unary = 0, binary = 0;
  for (const OnnxOp& r : onnx_op_table()) {
    const std::string name(r.name);
    if (r.fold == &Folder::unary) {
      ++unary;
      const OpDef& d = op_def(r.kind);
      EXPECT_TRUE(d.unary != nullptr || d.binary != nullptr) << name;
    } else if (r.fold == &Folder::binary) {
      ++binary;
      EXPECT_NE(op_def(r.kind).binary, nullptr) << name;
    }
  }
  EXPECT_NE(op_def(OpKind::kFmod).binary, nullptr);  // Mod with fmod = 1
  EXPECT_GE(unary, 16);
  EXPECT_EQ(binary, 17);  // Add Sub Mul Div Pow PRelu Sum Mod Max Min Equal Less Greater LessOrEqual GreaterOrEqual And Or
}

// Softplus had a handler but no arity entry, so two inputs passed unchecked.
TEST(OnnxOpTable, SoftplusArityIsChecked) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.input("y", {int64_t{1}, int64_t{4}});
  m.node("Softplus", {"x", "y"}, {"z"}, "sp");
  m.output("z");
  EXPECT_NE(import_error(m, "softplus2.onnx").find("node 'sp' (Softplus): needs 1 inputs (opset 13), has 2"), std::string::npos)
      << import_error(m, "softplus2.onnx");
}

// A constant folded through the kernel: Sqrt(16) = 4 and Neg(4) = -4 multiply x.
TEST(OnnxOpTable, ConstantsFoldThroughTheKernels) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.floats("c", {16.0f});
  m.node("Sqrt", {"c"}, {"r"}, "sqrt");
  m.node("Neg", {"r"}, {"s"}, "neg");
  m.node("Mul", {"x", "s"}, {"z"}, "mul");
  m.output("z");
  const Graph g = load_onnx(m.save("fold_sqrt.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kMul);
  EXPECT_EQ(g.layers[0].const_values, std::vector<float>{-4.0f});
}

// The table's newest row (Softsign) folds through its OpDef kernel with no other change:
// Softsign(3) = 3 / (1 + 3) = 0.75 multiplies x.
TEST(OnnxOpTable, SoftsignFoldsThroughItsKernel) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.floats("c", {3.0f});
  m.node("Softsign", {"c"}, {"s"}, "softsign");
  m.node("Mul", {"x", "s"}, {"z"}, "mul");
  m.output("z");
  const Graph g = load_onnx(m.save("fold_softsign.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].const_values, std::vector<float>{0.75f});
}
