// Functional mode on the generated ONNX workloads (build/workloads/onnx): the importer
// hands over what the numbers need (constant values and order, absorbed scales, integer
// inputs), and ResNet-50 and BERT-base run end to end with finite SQNR.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "sim/config/arch_config.h"
#include "sim/functional/functional.h"
#include "sim/graph/onnx_importer.h"
#include "sim/precision/precision.h"

using namespace tessera;
using namespace tessera::functional;
namespace fs = std::filesystem;

namespace {

fs::path model(const std::string& name) { return fs::path(TESSERA_BINARY_DIR) / "workloads/onnx" / (name + ".onnx"); }

#define NEED_MODEL(name)                                                                              \
  if (!fs::exists(model(name))) GTEST_SKIP() << model(name) << " not generated (needs python3-onnx)"

graph::Graph bert(int64_t sequence, const std::string& policy) {
  graph::OnnxOptions o;
  o.input_shapes["input_ids"] = {1, sequence};
  graph::Graph g = graph::load_onnx(model("bert_base"), o);
  const auto p = precision::parse_policy(policy);
  precision::apply(g, precision::assign(g, p), p.defaults.activations);
  return g;
}

const graph::Layer& find_layer(const graph::Graph& g, const std::string& name) {
  for (const auto& l : g.layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

ArchConfig tpu() { return load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml"); }

}  // namespace

TEST(FunctionalOnnx, ImporterKeepsConstantsScalesAndIntegerInputs) {
  NEED_MODEL("bert_base");
  const graph::Graph g = bert(16, "int8");
  // Q K^T / sqrt(64): the Div is absorbed into the matmul as its output multiplier.
  EXPECT_DOUBLE_EQ(find_layer(g, "/encoder/layer.0/attention/self/MatMul").output_multiplier, 0.125);
  // (1 - mask) * -10000: the constant is the first operand of the Sub.
  const graph::Layer& sub = find_layer(g, "/Sub");
  EXPECT_TRUE(sub.const_first);
  EXPECT_EQ(sub.const_values, std::vector<float>{1.0f});
  EXPECT_EQ(find_layer(g, "/Mul").const_values, std::vector<float>{-10000.0f});
  EXPECT_FALSE(find_layer(g, "/Mul").const_first);
  EXPECT_EQ(find_layer(g, "/embeddings/LayerNorm/Pow").const_values, std::vector<float>{2.0f});
  EXPECT_EQ(find_layer(g, "/encoder/layer.0/intermediate/intermediate_act_fn/Div").const_values,
            std::vector<float>{std::sqrt(2.0f)});
  // gamma: read from the (sparse, all-zero) external data: functional mode draws its own.
  EXPECT_EQ(find_layer(g, "/embeddings/LayerNorm/Mul").const_values, std::vector<float>(768, 0.0f));
  bool mask_is_integer = false;
  for (int t : g.inputs) {
    if (g.tensors[t].name == "attention_mask") mask_is_integer = g.tensors[t].integer_values;
    else EXPECT_FALSE(g.tensors[t].integer_values) << g.tensors[t].name;
  }
  EXPECT_TRUE(mask_is_integer);
}

TEST(FunctionalOnnx, BertBaseAtSixteenTokens) {
  NEED_MODEL("bert_base");
  const FunctionalResult r8 = run_functional(bert(16, "int8"), tpu(), {});
  const FunctionalResult r16 = run_functional(bert(16, "int16"), tpu(), {});
  ASSERT_TRUE(std::isfinite(r8.output_sqnr_db));
  EXPECT_GT(r8.output_sqnr_db, 15.0);
  EXPECT_GT(r16.output_sqnr_db, r8.output_sqnr_db + 10.0);
  for (const auto& l : r16.layers) EXPECT_EQ(l.accumulator_saturated, 0) << l.name;
  // The mask (all ones: nothing masked) makes the mask path exact zeros.
  for (const auto& l : r8.layers)
    if (l.name == "/Mul") EXPECT_EQ(l.sqnr_db, std::numeric_limits<double>::infinity());
}

TEST(FunctionalOnnx, ResNet50Int8) {
  NEED_MODEL("resnet50");
  graph::Graph g = graph::load_onnx(model("resnet50"));
  const FunctionalResult r = run_functional(g, tpu(), {});
  ASSERT_TRUE(std::isfinite(r.output_sqnr_db));
  EXPECT_GT(r.output_sqnr_db, 25.0);
  for (const auto& l : r.layers) EXPECT_EQ(l.accumulator_saturated, 0) << l.name;
}
