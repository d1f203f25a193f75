#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/precision/precision.h"

using namespace tessera;
using namespace tessera::precision;

namespace {

graph::Graph net() {
  return graph::parse_graph_yaml(YamlNode::load_string(R"(
name: net
inputs: [{name: x, shape: [8, 8, 3]}]
layers:
  - {name: conv1, op: conv2d, filters: 8, kernel: 3, padding: same}
  - {name: pool1, op: maxpool, kernel: 2}
  - {name: conv2, op: conv2d, filters: 8, kernel: 3, padding: same}
  - {name: flat, op: flatten}
  - {name: fc1, op: fc, units: 10}
)",
                                                       "net.yaml"));
}

std::string write_policy(const std::string& name, const std::string& text) {
  const std::string path = std::string(TESSERA_BINARY_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(Precision, GlobMatch) {
  EXPECT_TRUE(glob_match("conv*", "conv1"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a?_pproj", "a3_pproj"));
  EXPECT_TRUE(glob_match("[ab]3_*", "b3_1x1"));
  EXPECT_TRUE(glob_match("*_33", "c2_33"));
  EXPECT_FALSE(glob_match("conv*", "fc1"));
  EXPECT_FALSE(glob_match("[ab]3_*", "c3_1x1"));
  EXPECT_FALSE(glob_match("fc", "fc1"));
}

TEST(Precision, NamedPoliciesAssignEveryMatrixLayer) {
  const graph::Graph g = net();
  auto all16 = assign(g, parse_policy("int16"));
  ASSERT_EQ(all16.size(), 5u);
  EXPECT_TRUE(all16[0] && all16[0]->activations == Dtype::kInt16 && all16[0]->weights == Dtype::kInt16);
  EXPECT_FALSE(all16[1]);  // pooling is not a matrix layer
  auto fl = assign(g, parse_policy("first-last-int16"));
  EXPECT_EQ(fl[0]->weights, Dtype::kInt16);
  EXPECT_EQ(fl[2]->weights, Dtype::kInt8);
  EXPECT_EQ(fl[4]->weights, Dtype::kInt16);
}

TEST(Precision, ApplyWidensTensorsThroughVectorLayers) {
  graph::Graph g = net();
  // conv2 at int16: its input comes through pool1, so conv1's output and pool1's
  // output become int16; conv1's own input stays int8.
  const std::string path = write_policy("p1.yaml", "name: conv2-wide\nlayers:\n  - {match: conv2, activations: int16, weights: int16}\n");
  const PrecisionPolicy p = parse_policy(path);
  EXPECT_EQ(p.name, "conv2-wide");
  apply(g, assign(g, p), p.defaults.activations);
  EXPECT_EQ(g.tensors[g.find_tensor("x")].dtype, Dtype::kInt8);
  EXPECT_EQ(g.tensors[g.find_tensor("conv1")].dtype, Dtype::kInt16);
  EXPECT_EQ(g.tensors[g.find_tensor("pool1")].dtype, Dtype::kInt16);
  EXPECT_EQ(g.tensors[g.find_tensor("conv2")].dtype, Dtype::kInt8);  // fc1 reads it at int8 (through the flatten)
  EXPECT_EQ(g.layers[2].weight_dtype, Dtype::kInt16);
  EXPECT_EQ(g.layers[0].weight_dtype, Dtype::kInt8);
}

TEST(Precision, LaterRulesWinAndSqnrPromotes) {
  graph::Graph g = net();
  const std::string path = write_policy("p2.yaml", R"(
default: {activations: int8, weights: int8}
layers:
  - {match: "conv*", weights: int16}
  - {match: conv2, weights: int8}
sqnr_below_db: 30
)");
  const auto a = assign(g, parse_policy(path), {"fc1"});
  EXPECT_EQ(a[0]->weights, Dtype::kInt16);
  EXPECT_EQ(a[2]->weights, Dtype::kInt8);
  EXPECT_EQ(a[4]->activations, Dtype::kInt16);  // promoted by the measured SQNR
}

TEST(PrecisionErrors, UnknownNameKeyAndUnmatchedRule) {
  try {
    parse_policy("int12");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "not a policy name (int8, uint8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16, first-last-int16)"),
              std::string::npos)
        << e.what();
  }
  const std::string bad = write_policy("p3.yaml", "layers:\n  - {match: conv1, weight: int16}\n");
  try {
    parse_policy(bad);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p3.yaml:2:20: layers[0].weight: unknown key"), std::string::npos) << e.what();
  }
  const std::string none = write_policy("p4.yaml", "layers:\n  - {match: \"lstm*\", weights: int16}\n");
  try {
    assign(net(), parse_policy(none));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("layer rule 'lstm*' matches no matrix layer of workload 'net'"),
              std::string::npos);
  }
}

// ---- Which precision runs (issue 33 item 1): the workload's declared dtypes, else int8;
// --precision overrides them and says so.
namespace {
graph::Graph declared(const std::string& header, const std::string& fc2_extra = "") {
  return graph::parse_graph_yaml(YamlNode::load_string("name: decl\n" + header + R"(
inputs: [{name: x, shape: [16]}]
layers:
  - {name: fc1, op: fc, units: 8}
  - {name: relu1, op: relu}
  - {name: fc2, op: fc, units: 4)" + fc2_extra + R"(}
)",
                                                       "decl.yaml"));
}
}  // namespace

TEST(PrecisionSource, YamlGraphDtypeIsTheDefaultPolicy) {
  graph::Graph g = declared("dtype: bf16");
  ASSERT_TRUE(g.declared_dtype.has_value());
  const ChosenPolicy c = choose_policy(g, "");
  EXPECT_EQ(c.source, PolicySource::kWorkload);
  EXPECT_EQ(c.name, "bf16");
  EXPECT_EQ(c.label(), "bf16 (from the workload)");
  EXPECT_EQ(override_note(g, c), "");
  const auto a = assign(g, c.policy);
  for (size_t i : {0u, 2u}) {
    ASSERT_TRUE(a[i]) << i;
    EXPECT_EQ(a[i]->activations, Dtype::kBf16);
    EXPECT_EQ(a[i]->weights, Dtype::kBf16);  // weights follow the graph's dtype too
  }
  apply(g, a, c.policy.defaults.activations);
  for (const auto& t : g.tensors) EXPECT_EQ(t.dtype, Dtype::kBf16) << t.name;
}

TEST(PrecisionSource, PerLayerWeightDtypeMakesAMixedPolicy) {
  const graph::Graph g = declared("dtype: int8", ", weight_dtype: int16");
  const ChosenPolicy c = choose_policy(g, "");
  EXPECT_EQ(c.name, "mixed");
  const auto a = assign(g, c.policy);
  EXPECT_EQ(a[0]->weights, Dtype::kInt8);
  EXPECT_EQ(a[2]->weights, Dtype::kInt16);
  EXPECT_EQ(a[2]->activations, Dtype::kInt8);
}

TEST(PrecisionSource, NothingDeclaredIsInt8ByDefault) {
  const graph::Graph g = declared("");
  EXPECT_FALSE(g.declared_dtype.has_value());
  const ChosenPolicy c = choose_policy(g, "");
  EXPECT_EQ(c.source, PolicySource::kDefault);
  EXPECT_EQ(c.label(), "int8 (default: the workload declares no dtypes)");
  EXPECT_EQ(assign(g, c.policy)[2]->weights, Dtype::kInt8);
}

TEST(PrecisionSource, OptionOverridesTheWorkloadAndSaysSo) {
  const graph::Graph g = declared("dtype: bf16");
  const ChosenPolicy c = choose_policy(g, "int8");
  EXPECT_EQ(c.source, PolicySource::kOption);
  EXPECT_EQ(c.label(), "int8 (--precision)");
  EXPECT_EQ(override_note(g, c),
            "note: --precision int8 overrides the dtypes workload 'decl' declares (bf16xbf16 on 2 matrix layer(s)): 2 "
            "matrix layer(s) run at int8xint8 on 2 matrix layer(s) instead");
  // The option naming what the workload declares changes nothing, so it says nothing.
  EXPECT_EQ(override_note(g, choose_policy(g, "bf16")), "");
}

TEST(PrecisionSource, QuantizedModelKeepsItsCodesUnderTheOption) {
  // As the ONNX importer marks a quantized model (tests/sim/graph/test_onnx_quantized.cpp):
  // uint8 codes into fc1, int8 weights.
  graph::Graph g = declared("");
  g.tensors[static_cast<size_t>(g.layers[0].inputs[0])].quantized = Dtype::kUint8;
  g.layers[0].quantized_weights = Dtype::kInt8;
  const ChosenPolicy none = choose_policy(g, "");
  EXPECT_EQ(none.source, PolicySource::kDefault);
  EXPECT_EQ(assign(g, none.policy)[0]->activations, Dtype::kUint8);
  const ChosenPolicy wide = choose_policy(g, "int16");
  const auto a = assign(g, wide.policy);
  EXPECT_EQ(a[0]->activations, Dtype::kUint8);  // the model's codes
  EXPECT_EQ(a[2]->activations, Dtype::kInt16);  // the layer the model leaves in float
  EXPECT_EQ(override_note(g, wide),
            "note: --precision int16: 1 matrix layer(s) of 'decl' keep the model's own quantized types (uint8xint8 on 1 "
            "matrix layer(s)); the policy sets the layers the model leaves in float (docs/precision.md)");
}

TEST(Precision, EveryOperandDtypeIsAcceptedPerTensorAndLayer) {
  // The named policies: every dtype activations may hold.
  for (const char* name : {"int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2", "fp16", "bf16"}) {
    const PrecisionPolicy p = parse_policy(name);
    EXPECT_EQ(dtype_name(p.defaults.activations), name);
    EXPECT_EQ(dtype_name(p.defaults.weights), name);
  }
  const std::string path = write_policy("p_fp8.yaml", R"(
default: {activations: fp8_e4m3, weights: fp8_e4m3}
first_last: {activations: bf16, weights: int4}
layers:
  - {match: conv2, activations: fp8_e5m2, weights: int4}
)");
  const PrecisionPolicy p = parse_policy(path);
  graph::Graph g = net();
  const auto a = assign(g, p);
  EXPECT_EQ(a[0]->activations, Dtype::kBf16);
  EXPECT_EQ(a[0]->weights, Dtype::kInt4);
  EXPECT_EQ(a[2]->activations, Dtype::kFp8E5m2);
  EXPECT_EQ(a[2]->weights, Dtype::kInt4);
  EXPECT_EQ(a[4]->activations, Dtype::kBf16);
  apply(g, a, p.defaults.activations);
  EXPECT_EQ(g.layers[2].weight_dtype, Dtype::kInt4);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.layers[2].inputs[0])].dtype, Dtype::kFp8E5m2);  // through the pool
  for (const auto& t : g.tensors) EXPECT_NE(t.dtype, Dtype::kInt4) << t.name;
}

TEST(PrecisionErrors, UnknownDtypeListsTheNamesAndInt4IsForWeightsOnly) {
  // The list in the message is generated from all_dtypes(): every name but int32.
  EXPECT_EQ(dtype_names_text(operand_dtypes(true)), "int4, int8, uint8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16");
  EXPECT_EQ(dtype_names_text(operand_dtypes(false)), "int8, uint8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16");
  const std::string bad = write_policy("p_int7.yaml", "default: {activations: int8, weights: int7}\n");
  try {
    parse_policy(bad);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p_int7.yaml:1:39: default.weights: 'int7' is not a dtype; allowed: int4, "
                                         "int8, uint8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16"),
              std::string::npos)
        << e.what();
  }
  const std::string act4 = write_policy("p_act4.yaml", "layers:\n  - {match: conv1, activations: int4}\n");
  try {
    parse_policy(act4);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p_act4.yaml:2:33: layers[0].activations: 'int4' is for weights only; "
                                         "activations may be int8, uint8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16"),
              std::string::npos)
        << e.what();
  }
  try {
    parse_policy("int4");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--precision 'int4': int4 is for weights only"), std::string::npos) << e.what();
  }
}

TEST(PrecisionBytes, Int4WeightsTakeHalfAByte) {
  EXPECT_EQ(dtype_bits(Dtype::kInt4), 4);
  EXPECT_EQ(dtype_bits(Dtype::kFp8E4m3), 8);
  EXPECT_EQ(dtype_bits(Dtype::kFp8E5m2), 8);
  EXPECT_EQ(dtype_bytes(Dtype::kInt4), 1);  // one element alone: a byte
  // A 3 x 5 int4 weight tensor: 15 x 4 = 60 bits = 7.5 bytes -> 8.
  EXPECT_EQ(elements_bytes(Dtype::kInt4, 3 * 5), 8);
  EXPECT_EQ(elements_bytes(Dtype::kInt4, 16), 8);
  EXPECT_EQ(elements_bytes(Dtype::kFp8E4m3, 15), 15);
  EXPECT_EQ(elements_bytes(Dtype::kBf16, 15), 30);
  EXPECT_EQ(elements_bytes(Dtype::kInt32, 3), 12);
  for (Dtype t : all_dtypes()) {
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);  // every switch knows every type
    EXPECT_EQ(elements_bytes(t, 8), dtype_bits(t));
  }
  EXPECT_TRUE(dtype_is_float(Dtype::kFp8E4m3));
  EXPECT_TRUE(dtype_is_float(Dtype::kFp8E5m2));
  EXPECT_FALSE(dtype_is_float(Dtype::kInt4));
}

TEST(PrecisionDocs, ListTheAcceptedDtypesInOrder) {
  // docs/precision.md names the accepted dtypes in the order of all_dtypes().
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/docs/precision.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string list;
  for (Dtype t : operand_dtypes(true)) list += (list.empty() ? "`" : ", `") + std::string(dtype_name(t)) + "`";
  EXPECT_NE(doc.find(list + "."), std::string::npos) << list;
}
