// Single-op ONNX models through the importer and functional mode's fp32 reference:
// what each element-wise op computes on hand-picked values (x = [1, 2, -3, 0.5]).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/config/arch_config.h"
#include "sim/functional/functional.h"
#include "sim/graph/onnx_importer.h"

using namespace tessera;
using namespace tessera::graph;
namespace fs = std::filesystem;

namespace {

// x [1, 4] (batch 1) -> op -> y, saved under the test's temp dir.
fs::path one_node_model(const std::string& op, const std::string& file) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("one_" + op);
  for (const char* io : {"x", "y"}) {
    auto* v = std::string(io) == "x" ? g->add_input() : g->add_output();
    v->set_name(io);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(1);  // the batch
    t->mutable_shape()->add_dim()->set_dim_value(4);
  }
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op);
  n->add_input("x");
  n->add_output("y");
  const fs::path p = fs::path(testing::TempDir()) / file;
  std::ofstream f(p, std::ios::binary);
  m.SerializeToOstream(&f);
  return p;
}

// The fp32 reference of y for x = [1, 2, -3, 0.5].
std::vector<float> reference_of(const Graph& g) {
  functional::FunctionalOptions o;
  o.calibration_batches = 0;
  o.inputs["x"] = {1.0f, 2.0f, -3.0f, 0.5f};
  const ArchConfig arch = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  const functional::FunctionalResult r = functional::run_functional(g, arch, o);
  return r.outputs.at(0).reference;
}

}  // namespace

// D1: Neg is x * -1 and Reciprocal 1 / x; the constant travels with the layer (it was
// lost, and functional mode filled a seeded scale near one instead: Neg gave x * 1.085).
TEST(OnnxOps, NegMultipliesByMinusOne) {
  const Graph g = load_onnx(one_node_model("Neg", "neg.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  const Layer& l = g.layers[0];
  EXPECT_EQ(l.op, OpKind::kMul);
  EXPECT_TRUE(l.has_const);
  EXPECT_EQ(l.const_values, std::vector<float>{-1.0f});
  EXPECT_FALSE(l.const_first);
  EXPECT_EQ(reference_of(g), (std::vector<float>{-1.0f, -2.0f, 3.0f, -0.5f}));
}

TEST(OnnxOps, ReciprocalDividesOneByX) {
  const Graph g = load_onnx(one_node_model("Reciprocal", "reciprocal.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  const Layer& l = g.layers[0];
  EXPECT_EQ(l.op, OpKind::kDiv);
  EXPECT_EQ(l.const_values, std::vector<float>{1.0f});
  EXPECT_TRUE(l.const_first);
  EXPECT_EQ(reference_of(g), (std::vector<float>{1.0f, 0.5f, 1.0f / -3.0f, 2.0f}));
}

// D3: the unsupported-node message lists exactly the ops with a handler (it was
// hand-written and left out six of them).
TEST(OnnxOps, UnsupportedMessageListsEveryHandledOp) {
  std::string e;
  try {
    load_onnx(one_node_model("Det", "det.onnx"), {});
  } catch (const InputError& err) {
    e = err.what();
  }
  const std::vector<std::string> ops = onnx_supported_ops();
  std::string list;
  for (const auto& op : ops) list += (list.empty() ? "" : ", ") + op;
  EXPECT_NE(e.find("1 node(s) cannot be imported: 'Det' (Det). Supported ops: " + list +
                   ", and constant folding of shape computations"),
            std::string::npos)
      << e;
  for (const char* op : {"Cast", "CastLike", "DequantizeLinear", "FastGelu", "Identity", "QuantizeLinear", "Neg",
                         "Reciprocal", "Add", "Where"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
}

// Softplus (added through the op registry): ONNX Softplus -> IR softplus, whose fp32
// reference is log(1 + e^x): [1.3132617, 2.1269280, 0.0485873, 0.9740770] (by hand, in double).
TEST(OnnxOps, SoftplusIsLogOnePlusExp) {
  const Graph g = load_onnx(one_node_model("Softplus", "softplus.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kSoftplus);
  EXPECT_EQ(op_name(g.layers[0].op), "softplus");
  EXPECT_EQ(g.tensors[g.layers[0].output].shape, (Shape{4}));
  const std::vector<float> y = reference_of(g);
  const std::vector<double> want = {1.3132616875182228, 2.1269280110429727, 0.04858735157374206, 0.9740769841801067};
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << i;
}
